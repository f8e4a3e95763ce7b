//! The Dockerfiles pass hadolint with no finding at any severity, and the check can fail.
//!
//! Needs hadolint, so ignored by plain `cargo test`; `cargo xtask test` runs it with
//! `--include-ignored` and the STRATA_* variables set. A missing variable fails the test.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::{fs, path::PathBuf};

use xtask::{commands::workspace_root, images, tools::env};

fn hadolint() -> PathBuf {
    env::required_path(env::HADOLINT).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
#[ignore = "needs hadolint; run by cargo xtask test"]
fn committed_dockerfiles_have_no_findings() {
    let files = images::dockerfiles(&workspace_root()).expect("lists docker/");
    images::hadolint(&hadolint(), &files).unwrap_or_else(|error| panic!("{error:#}"));
}

#[test]
#[ignore = "needs hadolint; run by cargo xtask test"]
fn an_unpinned_base_image_is_a_finding() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let file = scratch.path().join("bad.Dockerfile");
    fs::write(&file, "FROM debian:latest\nUSER 65532\nCMD [\"true\"]\n").expect("write");

    let error = images::hadolint(&hadolint(), &[file]).expect_err("a finding");

    let message = format!("{error:#}");
    assert!(message.contains("DL3007"), "{message}");
}

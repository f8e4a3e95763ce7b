//! Generated CRDs pass `kubernetes-validate --strict` against the upstream schemas.
//!
//! Needs the tool, so ignored by plain `cargo test`; `cargo xtask test` runs it with
//! `--include-ignored` and the STRATA_* variables set. Missing variables fail the test.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod fixture;

use std::{
    fs,
    path::{Path, PathBuf},
    process::{Command, Output},
};

use xtask::{commands::workspace_root, crds, tools::env};

fn kubernetes_validate(files: &[PathBuf]) -> Output {
    let program = env::required_path(env::KUBERNETES_VALIDATE).unwrap_or_else(|e| panic!("{e}"));
    let version = env::required(env::KUBERNETES_VERSION).unwrap_or_else(|e| panic!("{e}"));
    Command::new(program)
        .args(["--strict", "--kubernetes-version", &version])
        .args(files)
        .output()
        .expect("kubernetes-validate starts")
}

fn describe(output: &Output) -> String {
    format!(
        "{}\n{}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Writes the fixture's CRD files into `dir` and returns their paths.
fn fixture_files(dir: &Path) -> Vec<PathBuf> {
    let tree = crds::desired_tree(&[fixture::FIXTURE_OPERATOR]).expect("generates");
    tree.write(dir).expect("writes");
    tree.files().keys().map(|path| dir.join(path)).collect()
}

#[test]
#[ignore = "needs kubernetes-validate; run by cargo xtask test"]
fn committed_and_fixture_crds_pass_strict_validation() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let mut files = fixture_files(scratch.path());
    let committed = workspace_root().join(crds::CRDS_DIR);
    if committed.is_dir() {
        let mut yaml: Vec<PathBuf> = fs::read_dir(&committed)
            .expect("list crds/")
            .map(|entry| entry.expect("entry").path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
            .collect();
        yaml.sort();
        files.extend(yaml);
    }

    let output = kubernetes_validate(&files);

    assert!(output.status.success(), "{}", describe(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    for file in &files {
        assert!(
            stdout.contains(&format!("{} passed", file.display())),
            "{} not reported as passed:\n{}",
            file.display(),
            describe(&output)
        );
    }
}

#[test]
#[ignore = "needs kubernetes-validate; run by cargo xtask test"]
fn strict_validation_rejects_an_unknown_crd_field() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let file = fixture_files(scratch.path())
        .into_iter()
        .next()
        .expect("fixture has CRDs");
    let text = fs::read_to_string(&file).expect("read");
    fs::write(
        &file,
        text.replace("\n  group:", "\n  unknownField: 1\n  group:"),
    )
    .expect("write");

    let output = kubernetes_validate(&[file]);

    assert!(!output.status.success(), "{}", describe(&output));
    assert!(
        describe(&output).contains("'unknownField' was unexpected"),
        "{}",
        describe(&output)
    );
}

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::{fs, path::PathBuf};

use pretty_assertions::assert_eq;
use rstest::rstest;

use super::*;

fn tree(files: &[(&str, &str)]) -> GeneratedTree {
    let mut tree = GeneratedTree::new("out");
    for (path, contents) in files {
        tree.insert(*path, contents.as_bytes()).expect("valid path");
    }
    tree
}

fn put(workspace: &Path, path: &str, contents: &str) {
    let path = workspace.join(path);
    fs::create_dir_all(path.parent().expect("has parent")).expect("create dir");
    fs::write(path, contents).expect("write");
}

fn paths(items: &[&str]) -> Vec<PathBuf> {
    items.iter().map(PathBuf::from).collect()
}

#[rstest]
#[case::parent_directory("../escape.yaml")]
#[case::absolute("/etc/passwd")]
#[case::current_directory("./a.yaml")]
#[case::empty("")]
fn insert_rejects_paths_outside_the_directory(#[case] path: &str) {
    let error = GeneratedTree::new("out").insert(path, "x").unwrap_err();
    assert!(
        matches!(error, GeneratedError::InvalidPath { .. }),
        "{error}"
    );
}

#[test]
fn insert_rejects_a_file_produced_twice() {
    let mut tree = tree(&[("a.yaml", "1")]);
    let error = tree.insert("a.yaml", "2").unwrap_err();
    assert_eq!(
        error.to_string(),
        "generated file out/a.yaml is produced twice"
    );
}

#[test]
fn write_creates_files_and_removes_extras_and_empty_directories() {
    let workspace = tempfile::tempdir().expect("tempdir");
    put(workspace.path(), "out/keep.yaml", "same\n");
    put(workspace.path(), "out/change.yaml", "old\n");
    put(workspace.path(), "out/old/nested.yaml", "gone\n");
    put(workspace.path(), "elsewhere.yaml", "not owned\n");
    let desired = tree(&[
        ("keep.yaml", "same\n"),
        ("change.yaml", "new\n"),
        ("sub/new.yaml", "fresh\n"),
    ]);

    let summary = desired.write(workspace.path()).expect("write");

    assert_eq!(
        summary,
        WriteSummary {
            written: paths(&["out/change.yaml", "out/sub/new.yaml"]),
            unchanged: paths(&["out/keep.yaml"]),
            removed: paths(&["out/old/nested.yaml"]),
        }
    );
    assert!(!workspace.path().join("out/old").exists());
    assert!(workspace.path().join("elsewhere.yaml").exists());
    assert_eq!(desired.check(workspace.path()).expect("check"), vec![]);
}

#[test]
fn write_into_a_missing_directory_creates_it() {
    let workspace = tempfile::tempdir().expect("tempdir");
    let desired = tree(&[("a.yaml", "a\n")]);
    desired.write(workspace.path()).expect("write");
    assert_eq!(
        fs::read_to_string(workspace.path().join("out/a.yaml")).expect("read"),
        "a\n"
    );
}

#[test]
fn empty_tree_checks_clean_against_a_missing_directory() {
    let workspace = tempfile::tempdir().expect("tempdir");
    assert_eq!(
        GeneratedTree::new("out")
            .check(workspace.path())
            .expect("check"),
        vec![]
    );
}

#[test]
fn check_names_missing_stale_and_extra_files() {
    let workspace = tempfile::tempdir().expect("tempdir");
    put(workspace.path(), "out/stale.yaml", "a: 1\nb: 2\n");
    put(workspace.path(), "out/extra.yaml", "x\n");
    put(workspace.path(), "out/fine.yaml", "ok\n");
    let desired = tree(&[
        ("fine.yaml", "ok\n"),
        ("missing.yaml", "m\n"),
        ("stale.yaml", "a: 1\nb: 3\n"),
    ]);

    let drifts = desired.check(workspace.path()).expect("check");
    let lines: Vec<String> = drifts.iter().map(ToString::to_string).collect();

    assert_eq!(
        lines,
        vec![
            "extra:   out/extra.yaml (not produced by the generator)".to_owned(),
            "missing: out/missing.yaml".to_owned(),
            "stale:   out/stale.yaml (first difference at line 2: expected `b: 3`, \
             found `b: 2`; 3 lines expected, 3 found)"
                .to_owned(),
        ]
    );
    assert!(
        workspace.path().join("out/extra.yaml").exists(),
        "check must not change anything"
    );
}

#[rstest]
#[case::found_is_longer("a\n", "a\nb\n", 2, Some(""), Some("b"))]
#[case::found_is_truncated("a\nb", "a", 2, Some("b"), None)]
#[case::first_line_differs("x\n", "y\n", 1, Some("x"), Some("y"))]
fn line_difference_reports_the_first_differing_line(
    #[case] expected: &str,
    #[case] found: &str,
    #[case] line: usize,
    #[case] expected_line: Option<&str>,
    #[case] found_line: Option<&str>,
) {
    let difference = LineDifference::between(expected.as_bytes(), found.as_bytes());
    assert_eq!(difference.line, line);
    assert_eq!(difference.expected.as_deref(), expected_line);
    assert_eq!(difference.found.as_deref(), found_line);
}

#[test]
fn long_lines_are_shortened_in_messages() {
    let long = "x".repeat(500);
    let difference = LineDifference::between(long.as_bytes(), b"y");
    let expected = difference.expected.expect("line present");
    assert_eq!(expected.chars().count(), EXCERPT_CHARS + 1);
    assert!(expected.ends_with('…'));
}

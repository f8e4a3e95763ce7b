//! Writing a stand-in program (a fake `hdfs`, a fake `docker`) that a test then runs.
//!
//! The file is written by a `cp` child process, not by the test process. A file the
//! test process has open for writing can be held open a moment longer by a child that
//! another test forks at the same time (it inherits the descriptor until it execs),
//! and executing the file then fails with "Text file busy" (ETXTBSY). Seen in CI
//! under load.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Writes `content` to `path` as an executable (mode 0755), through a `cp` child.
pub fn write(path: &Path, content: &str) {
    let source = path.with_extension("source");
    fs::write(&source, content)
        .unwrap_or_else(|error| panic!("writing {}: {error}", source.display()));
    let copied = std::process::Command::new("cp")
        .arg(&source)
        .arg(path)
        .status()
        .unwrap_or_else(|error| panic!("starting cp: {error}"));
    assert!(copied.success(), "cp copies {}", path.display());
    fs::set_permissions(path, fs::Permissions::from_mode(0o755))
        .unwrap_or_else(|error| panic!("making {} executable: {error}", path.display()));
}

//! Committed, generated files: write them, or check that the committed copy is current.
//!
//! Every generator (`gen-crds`, later `gen-helm`) computes a [`GeneratedTree`]: the exact
//! bytes it wants under one directory of the workspace. The generator owns that directory
//! completely, so any other file in it is stale output of an older run and gets removed.
//! Keeping "what should exist" separate from "make it so" lets the same value drive both
//! `gen-* ` (write) and `gen-* --check` (compare and name every difference).

use std::{
    collections::{BTreeMap, BTreeSet},
    fmt, fs, io,
    path::{Component, Path, PathBuf},
};

/// Longest excerpt of a differing line shown in a [`Drift`] message.
const EXCERPT_CHARS: usize = 100;

/// Why a generated tree could not be built, read or written.
#[derive(Debug, thiserror::Error)]
pub enum GeneratedError {
    /// A desired path would escape the owned directory or is not a plain relative path.
    #[error("generated path {path} must be relative and stay inside its directory")]
    InvalidPath {
        /// The offending path, as given by the generator.
        path: PathBuf,
    },
    /// Two outputs of one generator want the same file.
    #[error("generated file {path} is produced twice")]
    Duplicate {
        /// The path produced twice, relative to the workspace.
        path: PathBuf,
    },
    /// Reading, writing or removing a file failed.
    #[error("cannot {action} {path}")]
    Io {
        /// What was attempted, for the message.
        action: &'static str,
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
}

/// The complete desired content of one generator-owned directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedTree {
    dir: PathBuf,
    files: BTreeMap<PathBuf, Vec<u8>>,
}

/// What [`GeneratedTree::write`] did, with workspace-relative paths.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteSummary {
    /// Files created or rewritten because their bytes differed.
    pub written: Vec<PathBuf>,
    /// Files that already had the desired bytes and were left untouched.
    pub unchanged: Vec<PathBuf>,
    /// Files removed because no generator output wants them any more.
    pub removed: Vec<PathBuf>,
}

/// How one file on disk differs from the generator's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DriftKind {
    /// The generator wants the file, but it does not exist.
    Missing,
    /// The file exists with other bytes.
    Stale(LineDifference),
    /// The file exists in the owned directory, but no generator output wants it.
    Extra,
}

/// The first line where a stale file differs, so a reader sees the cause without a diff tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineDifference {
    /// One-based line number of the first difference.
    pub line: usize,
    /// That line as generated, or `None` when the generated file is shorter.
    pub expected: Option<String>,
    /// That line as found on disk, or `None` when the file on disk is shorter.
    pub found: Option<String>,
    /// Number of lines in the generated file.
    pub expected_lines: usize,
    /// Number of lines in the file on disk.
    pub found_lines: usize,
}

/// One difference between the owned directory on disk and the desired tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drift {
    /// The file concerned, relative to the workspace root.
    pub path: PathBuf,
    /// What is wrong with it.
    pub kind: DriftKind,
}

impl GeneratedTree {
    /// Starts an empty tree for `dir`, a path relative to the workspace root (e.g. `crds`).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            files: BTreeMap::new(),
        }
    }

    /// Adds one desired file, `relative` to the owned directory.
    ///
    /// Rejects paths that leave the directory and files produced twice, because either
    /// would make the output depend on the order in which generators run.
    pub fn insert(
        &mut self,
        relative: impl Into<PathBuf>,
        contents: impl Into<Vec<u8>>,
    ) -> Result<(), GeneratedError> {
        let relative = relative.into();
        let plain = relative.components().count() > 0
            && relative
                .components()
                .all(|component| matches!(component, Component::Normal(_)));
        if !plain {
            return Err(GeneratedError::InvalidPath { path: relative });
        }
        let path = self.dir.join(relative);
        if self.files.contains_key(&path) {
            return Err(GeneratedError::Duplicate { path });
        }
        self.files.insert(path, contents.into());
        Ok(())
    }

    /// The owned directory, relative to the workspace root.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Desired files keyed by their workspace-relative path.
    pub fn files(&self) -> &BTreeMap<PathBuf, Vec<u8>> {
        &self.files
    }

    /// Makes the owned directory under `workspace` match the tree exactly.
    ///
    /// Files with the right bytes are not rewritten, so timestamps stay stable and
    /// repeated runs are cheap. Empty subdirectories left behind by removals are pruned.
    pub fn write(&self, workspace: &Path) -> Result<WriteSummary, GeneratedError> {
        let mut summary = WriteSummary::default();
        for (path, contents) in &self.files {
            let absolute = workspace.join(path);
            if read_optional(&absolute)?.as_deref() == Some(contents.as_slice()) {
                summary.unchanged.push(path.clone());
                continue;
            }
            if let Some(parent) = absolute.parent() {
                fs::create_dir_all(parent).map_err(io_error("create directory", parent))?;
            }
            fs::write(&absolute, contents).map_err(io_error("write", &absolute))?;
            summary.written.push(path.clone());
        }
        for path in self.extra_files(workspace)? {
            let absolute = workspace.join(&path);
            fs::remove_file(&absolute).map_err(io_error("remove", &absolute))?;
            summary.removed.push(path);
        }
        remove_empty_subdirectories(&workspace.join(&self.dir))?;
        Ok(summary)
    }

    /// Compares the owned directory under `workspace` with the tree, changing nothing.
    ///
    /// Returns every difference, sorted by path; an empty list means up to date.
    pub fn check(&self, workspace: &Path) -> Result<Vec<Drift>, GeneratedError> {
        let mut drifts = Vec::new();
        for (path, contents) in &self.files {
            let kind = match read_optional(&workspace.join(path))? {
                None => Some(DriftKind::Missing),
                Some(found) if found != *contents => {
                    Some(DriftKind::Stale(LineDifference::between(contents, &found)))
                }
                Some(_) => None,
            };
            if let Some(kind) = kind {
                drifts.push(Drift {
                    path: path.clone(),
                    kind,
                });
            }
        }
        for path in self.extra_files(workspace)? {
            drifts.push(Drift {
                path,
                kind: DriftKind::Extra,
            });
        }
        drifts.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(drifts)
    }

    /// Files present in the owned directory that the tree does not want.
    fn extra_files(&self, workspace: &Path) -> Result<BTreeSet<PathBuf>, GeneratedError> {
        let mut existing = BTreeSet::new();
        collect_files(workspace, &self.dir, &mut existing)?;
        Ok(existing
            .into_iter()
            .filter(|path| !self.files.contains_key(path))
            .collect())
    }
}

impl LineDifference {
    /// Finds the first line where `expected` and `found` differ.
    pub fn between(expected: &[u8], found: &[u8]) -> Self {
        let expected_text = String::from_utf8_lossy(expected);
        let found_text = String::from_utf8_lossy(found);
        let expected_lines: Vec<&str> = expected_text.split('\n').collect();
        let found_lines: Vec<&str> = found_text.split('\n').collect();
        let index = expected_lines
            .iter()
            .zip(&found_lines)
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| expected_lines.len().min(found_lines.len()));
        Self {
            line: index + 1,
            expected: expected_lines.get(index).map(|line| excerpt(line)),
            found: found_lines.get(index).map(|line| excerpt(line)),
            expected_lines: expected_lines.len(),
            found_lines: found_lines.len(),
        }
    }
}

impl fmt::Display for Drift {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = self.path.display();
        match &self.kind {
            DriftKind::Missing => write!(f, "missing: {path}"),
            DriftKind::Extra => write!(f, "extra:   {path} (not produced by the generator)"),
            DriftKind::Stale(difference) => write!(f, "stale:   {path} ({difference})"),
        }
    }
}

impl fmt::Display for LineDifference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let show = |line: &Option<String>| match line {
            Some(text) => format!("`{text}`"),
            None => "end of file".to_owned(),
        };
        write!(
            f,
            "first difference at line {}: expected {}, found {}; {} lines expected, {} found",
            self.line,
            show(&self.expected),
            show(&self.found),
            self.expected_lines,
            self.found_lines
        )
    }
}

/// Shortens a line for messages without splitting a character.
fn excerpt(line: &str) -> String {
    if line.chars().count() <= EXCERPT_CHARS {
        return line.to_owned();
    }
    let mut short: String = line.chars().take(EXCERPT_CHARS).collect();
    short.push('…');
    short
}

/// Reads a file, treating "does not exist" as `None` rather than an error.
fn read_optional(path: &Path) -> Result<Option<Vec<u8>>, GeneratedError> {
    match fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(GeneratedError::Io {
            action: "read",
            path: path.to_owned(),
            source: error,
        }),
    }
}

/// Adds every non-directory entry below `workspace/relative` to `out`, workspace-relative.
fn collect_files(
    workspace: &Path,
    relative: &Path,
    out: &mut BTreeSet<PathBuf>,
) -> Result<(), GeneratedError> {
    let absolute = workspace.join(relative);
    let entries = match fs::read_dir(&absolute) {
        Ok(entries) => entries,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(error) => {
            return Err(GeneratedError::Io {
                action: "list",
                path: absolute,
                source: error,
            });
        }
    };
    for entry in entries {
        let entry = entry.map_err(io_error("list", &absolute))?;
        let child = relative.join(entry.file_name());
        let file_type = entry
            .file_type()
            .map_err(io_error("inspect", &entry.path()))?;
        if file_type.is_dir() {
            collect_files(workspace, &child, out)?;
        } else {
            out.insert(child);
        }
    }
    Ok(())
}

/// Removes empty directories below `dir` (not `dir` itself), deepest first.
fn remove_empty_subdirectories(dir: &Path) -> Result<(), GeneratedError> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(error) => {
            return Err(GeneratedError::Io {
                action: "list",
                path: dir.to_owned(),
                source: error,
            });
        }
    };
    for entry in entries {
        let entry = entry.map_err(io_error("list", dir))?;
        let path = entry.path();
        if entry
            .file_type()
            .map_err(io_error("inspect", &path))?
            .is_dir()
        {
            remove_empty_subdirectories(&path)?;
            let is_empty = fs::read_dir(&path)
                .map_err(io_error("list", &path))?
                .next()
                .is_none();
            if is_empty {
                fs::remove_dir(&path).map_err(io_error("remove directory", &path))?;
            }
        }
    }
    Ok(())
}

/// Builds a `map_err` adapter that attaches the action and path to an I/O error.
fn io_error(action: &'static str, path: &Path) -> impl FnOnce(io::Error) -> GeneratedError {
    let path = path.to_owned();
    move |source| GeneratedError::Io {
        action,
        path,
        source,
    }
}

#[cfg(test)]
mod tests;

//! `kubernetes-validate --strict`, the offline stand-in for the API server's
//! schema validation, read so that only a clean pass counts.
//!
//! kubernetes-validate only warns about kinds it has no schema for and still
//! exits 0, so a run is accepted only when every document got its own "passed"
//! line and nothing was reported.

use std::path::PathBuf;
use std::process::Command;

use crate::tools::{self, MissingTool};

/// The oldest Kubernetes the operators support (DESIGN.md). Objects are built
/// with the newest API types, so they are checked against the oldest schemas
/// too.
pub const OLDEST_SUPPORTED_KUBERNETES: &str = "1.30.0";

/// What kubernetes-validate said about one file.
#[derive(Debug)]
pub struct Verdict {
    /// Whether it exited 0.
    pub exit_ok: bool,
    /// Documents it validated successfully.
    pub passed: usize,
    /// Its ERROR and WARN lines.
    pub problems: Vec<String>,
    /// Everything it printed, for failure messages.
    pub output: String,
}

impl Verdict {
    /// Strict success: exit 0, nothing reported, and each of `documents` validated.
    pub fn accepts(&self, documents: usize) -> bool {
        self.exit_ok && self.problems.is_empty() && self.passed == documents
    }
}

/// `kubernetes-validate --strict -k <version>`.
#[derive(Clone, Debug)]
pub struct Validator {
    program: PathBuf,
    version: String,
}

impl Validator {
    /// The validator at `program`, for Kubernetes `version`'s schemas.
    pub fn new(program: impl Into<PathBuf>, version: impl Into<String>) -> Self {
        Self {
            program: program.into(),
            version: version.into(),
        }
    }

    /// The validator `cargo xtask tools` provisions, for the newest schemas it has.
    pub fn from_env() -> Result<Self, MissingTool> {
        Ok(Self::new(
            tools::required_path(tools::KUBERNETES_VALIDATE)?,
            tools::required(tools::KUBERNETES_VERSION)?,
        ))
    }

    /// The same validator against another Kubernetes version's schemas.
    #[must_use]
    pub fn for_version(&self, version: &str) -> Self {
        Self {
            version: version.to_owned(),
            ..self.clone()
        }
    }

    /// The Kubernetes version whose schemas this validator uses.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// Validates multi-document `yaml`.
    pub fn validate(&self, yaml: &str) -> std::io::Result<Verdict> {
        let file = tempfile::Builder::new()
            .prefix("rendered-")
            .suffix(".yaml")
            .tempfile()?;
        std::fs::write(file.path(), yaml)?;
        let output = Command::new(&self.program)
            .args(["--strict", "-k", &self.version])
            .arg(file.path())
            .output()?;
        let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
        text.push_str(&String::from_utf8_lossy(&output.stderr));
        Ok(Verdict {
            exit_ok: output.status.success(),
            passed: text
                .lines()
                .filter(|line| line.starts_with("INFO") && line.contains(" passed for resource "))
                .count(),
            problems: text
                .lines()
                .filter(|line| line.starts_with("ERROR") || line.starts_with("WARN"))
                .map(str::to_owned)
                .collect(),
            output: text,
        })
    }

    /// Validates `yaml` of `documents` documents and says why it is not a clean pass.
    pub fn check(&self, what: &str, yaml: &str, documents: usize) -> Result<(), String> {
        let verdict = self
            .validate(yaml)
            .map_err(|error| format!("{what}: running kubernetes-validate: {error}"))?;
        if verdict.accepts(documents) {
            Ok(())
        } else {
            Err(format!(
                "{what} against Kubernetes {}: {documents} documents, {} passed, problems {:?}:\n{}",
                self.version, verdict.passed, verdict.problems, verdict.output
            ))
        }
    }
}

//! The files the components read: the admin token, the audit policy, the
//! ServiceAccount signing key and KWOK's stages, each readable only by its owner.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::ControlPlaneError;
use super::error::io;

const KWOK_STAGES: &str = include_str!("kwok-stages.yaml");
const AUDIT_POLICY: &str = "apiVersion: audit.k8s.io/v1\nkind: Policy\n\
     omitStages: [\"RequestReceived\"]\nrules:\n- level: Metadata\n";

/// The files the components read.
pub(super) struct Files {
    pub(super) tokens: PathBuf,
    pub(super) audit_policy: PathBuf,
    pub(super) service_account_key: PathBuf,
    pub(super) service_account_public_key: PathBuf,
    pub(super) kwok_stages: PathBuf,
}

impl Files {
    pub(super) fn write(root: &Path, admin_token: &str) -> Result<Self, ControlPlaneError> {
        let files = Self {
            tokens: root.join("tokens.csv"),
            audit_policy: root.join("audit-policy.yaml"),
            service_account_key: root.join("service-account.key"),
            service_account_public_key: root.join("service-account.pub"),
            kwok_stages: root.join("kwok-stages.yaml"),
        };
        write_private(
            &files.tokens,
            &format!("{admin_token},strata-admin,strata-admin,\"system:masters\"\n"),
        )?;
        write_private(&files.audit_policy, AUDIT_POLICY)?;
        let key = rcgen::KeyPair::generate()
            .map_err(|error| ControlPlaneError::Generate(format!("a signing key: {error}")))?;
        write_private(&files.service_account_key, &key.serialize_pem())?;
        write_private(&files.service_account_public_key, &key.public_key_pem())?;
        write_private(&files.kwok_stages, KWOK_STAGES)?;
        Ok(files)
    }
}

/// Writes a file only its owner may read, atomically: the content goes to a new file
/// in the same directory, which then replaces `path`, so a reader never sees it half
/// written (scenarios running at once write the admin's client kubeconfig at once).
pub(super) fn write_private(path: &Path, content: &str) -> Result<(), ControlPlaneError> {
    use std::io::Write;
    let dir = path.parent().ok_or_else(|| {
        io(
            &format!("writing {}", path.display()),
            std::io::Error::other("a file path without a directory"),
        )
    })?;
    // `tempfile` creates the file readable by its owner only.
    let mut file = tempfile::NamedTempFile::new_in(dir)
        .map_err(|source| io(&format!("writing {}", path.display()), source))?;
    file.write_all(content.as_bytes())
        .map_err(|source| io(&format!("writing {}", path.display()), source))?;
    file.persist(path)
        .map(drop)
        .map_err(|error| io(&format!("writing {}", path.display()), error.error))
}

/// 32 random bytes from the operating system, hex-encoded.
pub(super) fn random_token() -> Result<String, ControlPlaneError> {
    let mut bytes = [0_u8; 32];
    getrandom::fill(&mut bytes)
        .map_err(|error| ControlPlaneError::Generate(format!("random bytes: {error}")))?;
    Ok(bytes.iter().fold(String::new(), |mut text, byte| {
        let _ = write!(text, "{byte:02x}");
        text
    }))
}

/// A short, stable name for a token, so its kubeconfig file names no secret.
pub(super) fn short_hash(token: &str) -> String {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    token.hash(&mut hasher);
    format!("{:016x}", hasher.finish())
}

//! A pod's volumes as host directories, laid out as the kubelet lays them out:
//!
//! - ConfigMap, Secret, projected and downward-API volumes are written the kubelet's
//!   atomic way: the files in a generation directory `..<n>`, a `..data` link to it, and
//!   one link per top-level entry through `..data`. An update writes the next generation
//!   and swaps `..data` with a rename, so a reader sees the old files or the new ones,
//!   never a mix (the HDFS `refresh-nodes` sidecar watches its exclude list that way).
//! - `emptyDir` is a directory of the pod's, writable by everyone (mode 0777), gone with
//!   the pod. Its `sizeLimit` and `medium` are not enforced.
//! - A `persistentVolumeClaim` is a directory under the runner's claims root, named by
//!   namespace and claim, that outlives the pod: a restarted pod finds its data, and a
//!   test plays a lost volume by deleting it. With an `fsGroup` it is given to that group
//!   with the set-group-id bit, as the kubelet does for a volume that supports ownership.
//!
//! - A projected `serviceAccountToken` is the token the node agent requested for the
//!   pod (bound to it, with the source's audience and lifetime) before it started it, as
//!   the kubelet does; a runner without an agent has none, and says so. The token is not
//!   rotated: it lasts as long as the API server grants, which outlives any sandbox.
//!
//! A volume of another kind (hostPath, CSI, ...) cannot run as rendered: it is refused
//! by name.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Component, Path, PathBuf};

use k8s_openapi::api::core::v1::{
    ConfigMapProjection, DownwardAPIProjection, DownwardAPIVolumeFile, KeyToPath, Pod,
    SecretProjection, Volume, VolumeProjection,
};

use crate::env::field_value;

pub use self::sources::{Sources, Token};

mod sources;

/// The kubelet's default mode for projected files.
const DEFAULT_MODE: i32 = 0o644;
/// The link that names the current generation.
const DATA_LINK: &str = "..data";

/// Why a volume could not be made.
#[derive(Debug, thiserror::Error)]
pub enum VolumeError {
    /// The pod refers to an object that does not exist, and not as optional.
    #[error("volume {volume}: {kind} {name} does not exist")]
    Missing {
        /// The volume.
        volume: String,
        /// `ConfigMap` or `Secret`.
        kind: &'static str,
        /// The object's name.
        name: String,
    },
    /// The object exists but lacks a key an item names.
    #[error("volume {volume}: {kind} {name} has no key {key}")]
    MissingKey {
        /// The volume.
        volume: String,
        /// `ConfigMap` or `Secret`.
        kind: &'static str,
        /// The object's name.
        name: String,
        /// The key.
        key: String,
    },
    /// A projected ServiceAccount token that nobody requested for the pod.
    #[error(
        "volume {volume}: no ServiceAccount token for pod {pod} (audience {audience:?}); only a node agent requests them"
    )]
    NoToken {
        /// The volume.
        volume: String,
        /// The pod.
        pod: String,
        /// The token's audience.
        audience: String,
    },
    /// A kind of volume the runner does not run.
    #[error(
        "volume {0}: the pod runner supports configMap, secret, projected, downwardAPI, emptyDir and persistentVolumeClaim volumes only"
    )]
    Unsupported(String),
    /// An item path that would leave the volume.
    #[error("volume {volume}: item path {path} must be relative and stay inside the volume")]
    BadPath {
        /// The volume.
        volume: String,
        /// The path.
        path: String,
    },
    /// The host refused a file operation.
    #[error("volume {volume}: {action} {path}: {source}")]
    Io {
        /// The volume.
        volume: String,
        /// What was being done.
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
}

/// Where a pod's volumes live on the host.
#[derive(Clone, Debug)]
pub struct VolumeRoots {
    /// The pod's own directory (emptyDirs and projections).
    pub pod: PathBuf,
    /// The runner's claims root (persistent volumes).
    pub claims: PathBuf,
}

/// Makes every volume of `pod`; returns each volume's host directory by name.
pub fn prepare(
    pod: &Pod,
    sources: &Sources,
    roots: &VolumeRoots,
) -> Result<BTreeMap<String, PathBuf>, VolumeError> {
    let fs_group = fs_group(pod);
    let mut made = BTreeMap::new();
    for volume in pod
        .spec
        .iter()
        .flat_map(|spec| spec.volumes.iter().flatten())
    {
        let dir = match &volume.persistent_volume_claim {
            Some(claim) => {
                let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
                let dir = roots.claims.join(namespace).join(&claim.claim_name);
                claim_directory(&volume.name, &dir, fs_group)?;
                dir
            }
            None => {
                let dir = roots.pod.join("volumes").join(&volume.name);
                if volume.empty_dir.is_some() {
                    create(&volume.name, &dir, 0o777)?;
                } else {
                    let files = projected_files(pod, volume, sources)?;
                    write_generation(&volume.name, &dir, &files, fs_group)?;
                }
                dir
            }
        };
        made.insert(volume.name.clone(), dir);
    }
    Ok(made)
}

/// Writes the files of every projected volume of `pod` again, from `sources` as they
/// are now, the way the kubelet refreshes a mounted ConfigMap; volumes whose files did
/// not change are left alone.
pub fn refresh(pod: &Pod, sources: &Sources, roots: &VolumeRoots) -> Result<(), VolumeError> {
    let fs_group = fs_group(pod);
    for volume in pod
        .spec
        .iter()
        .flat_map(|spec| spec.volumes.iter().flatten())
    {
        if volume.persistent_volume_claim.is_some() || volume.empty_dir.is_some() {
            continue;
        }
        let dir = roots.pod.join("volumes").join(&volume.name);
        let files = projected_files(pod, volume, sources)?;
        if current_files(&dir)
            != files
                .iter()
                .map(|(path, (bytes, _))| (path.clone(), bytes.clone()))
                .collect()
        {
            write_generation(&volume.name, &dir, &files, fs_group)?;
        }
    }
    Ok(())
}

/// The pod's `fsGroup`, which owns its claims and projected files.
fn fs_group(pod: &Pod) -> Option<i64> {
    pod.spec
        .as_ref()
        .and_then(|spec| spec.security_context.as_ref())
        .and_then(|context| context.fs_group)
}

/// The files a projected volume holds: relative path → (content, mode).
type Files = BTreeMap<PathBuf, (Vec<u8>, u32)>;

fn projected_files(pod: &Pod, volume: &Volume, sources: &Sources) -> Result<Files, VolumeError> {
    let name = volume.name.as_str();
    // A ConfigMap, Secret or downward-API volume is a projected volume of one source.
    let (projections, mode) = if let Some(config_map) = &volume.config_map {
        let projection = ConfigMapProjection {
            name: config_map.name.clone(),
            items: config_map.items.clone(),
            optional: config_map.optional,
        };
        (
            vec![VolumeProjection {
                config_map: Some(projection),
                ..VolumeProjection::default()
            }],
            config_map.default_mode,
        )
    } else if let Some(secret) = &volume.secret {
        let projection = SecretProjection {
            name: secret.secret_name.clone().unwrap_or_default(),
            items: secret.items.clone(),
            optional: secret.optional,
        };
        (
            vec![VolumeProjection {
                secret: Some(projection),
                ..VolumeProjection::default()
            }],
            secret.default_mode,
        )
    } else if let Some(downward) = &volume.downward_api {
        let projection = DownwardAPIProjection {
            items: downward.items.clone(),
        };
        (
            vec![VolumeProjection {
                downward_api: Some(projection),
                ..VolumeProjection::default()
            }],
            downward.default_mode,
        )
    } else if let Some(projected) = &volume.projected {
        (
            projected.sources.clone().unwrap_or_default(),
            projected.default_mode,
        )
    } else {
        return Err(VolumeError::Unsupported(name.to_owned()));
    };
    let mut files = Files::new();
    for source in &projections {
        project(
            pod,
            name,
            source,
            sources,
            mode.unwrap_or(DEFAULT_MODE),
            &mut files,
        )?;
    }
    Ok(files)
}

fn project(
    pod: &Pod,
    volume: &str,
    source: &VolumeProjection,
    sources: &Sources,
    mode: i32,
    files: &mut Files,
) -> Result<(), VolumeError> {
    if let Some(config_map) = &source.config_map {
        let found = sources.config_map(&config_map.name);
        let entries = lookup(
            volume,
            "ConfigMap",
            &config_map.name,
            config_map.optional,
            found,
        )?;
        select(
            volume,
            "ConfigMap",
            &config_map.name,
            &entries,
            config_map.items.as_deref(),
            mode,
            files,
        )
    } else if let Some(secret) = &source.secret {
        let found = sources.secret(&secret.name);
        let entries = lookup(volume, "Secret", &secret.name, secret.optional, found)?;
        select(
            volume,
            "Secret",
            &secret.name,
            &entries,
            secret.items.as_deref(),
            mode,
            files,
        )
    } else if let Some(token) = &source.service_account_token {
        let pod_name = pod.metadata.name.clone().unwrap_or_default();
        let audience = token.audience.clone().unwrap_or_default();
        let key = (pod_name, audience);
        let Some(value) = sources.service_account_tokens.get(&key) else {
            let (pod, audience) = key;
            return Err(VolumeError::NoToken {
                volume: volume.to_owned(),
                pod,
                audience,
            });
        };
        files.insert(
            relative(volume, &token.path)?,
            (value.0.clone().into_bytes(), permission(mode)),
        );
        Ok(())
    } else if let Some(downward) = &source.downward_api {
        downward_files(
            pod,
            volume,
            downward.items.as_deref().unwrap_or_default(),
            mode,
            files,
        )
    } else {
        Err(VolumeError::Unsupported(volume.to_owned()))
    }
}

fn lookup(
    volume: &str,
    kind: &'static str,
    name: &str,
    optional: Option<bool>,
    found: Option<BTreeMap<String, Vec<u8>>>,
) -> Result<BTreeMap<String, Vec<u8>>, VolumeError> {
    match found {
        Some(entries) => Ok(entries),
        None if optional == Some(true) => Ok(BTreeMap::new()),
        None => Err(VolumeError::Missing {
            volume: volume.to_owned(),
            kind,
            name: name.to_owned(),
        }),
    }
}

fn select(
    volume: &str,
    kind: &'static str,
    name: &str,
    entries: &BTreeMap<String, Vec<u8>>,
    items: Option<&[KeyToPath]>,
    mode: i32,
    files: &mut Files,
) -> Result<(), VolumeError> {
    let Some(items) = items else {
        for (key, bytes) in entries {
            files.insert(relative(volume, key)?, (bytes.clone(), permission(mode)));
        }
        return Ok(());
    };
    for item in items {
        let bytes = entries
            .get(&item.key)
            .ok_or_else(|| VolumeError::MissingKey {
                volume: volume.to_owned(),
                kind,
                name: name.to_owned(),
                key: item.key.clone(),
            })?;
        files.insert(
            relative(volume, &item.path)?,
            (bytes.clone(), permission(item.mode.unwrap_or(mode))),
        );
    }
    Ok(())
}

fn downward_files(
    pod: &Pod,
    volume: &str,
    items: &[DownwardAPIVolumeFile],
    mode: i32,
    files: &mut Files,
) -> Result<(), VolumeError> {
    for item in items {
        let Some(field) = &item.field_ref else {
            return Err(VolumeError::Unsupported(volume.to_owned()));
        };
        let value = field_value(pod, &field.field_path).unwrap_or_default();
        files.insert(
            relative(volume, &item.path)?,
            (value.into_bytes(), permission(item.mode.unwrap_or(mode))),
        );
    }
    Ok(())
}

fn permission(mode: i32) -> u32 {
    u32::try_from(mode).unwrap_or(0o644) & 0o7777
}

fn relative(volume: &str, path: &str) -> Result<PathBuf, VolumeError> {
    let relative = PathBuf::from(path);
    if path.is_empty()
        || !relative
            .components()
            .all(|component| matches!(component, Component::Normal(_)))
    {
        return Err(VolumeError::BadPath {
            volume: volume.to_owned(),
            path: path.to_owned(),
        });
    }
    Ok(relative)
}

fn io<T>(
    volume: &str,
    action: &'static str,
    path: &Path,
    result: std::io::Result<T>,
) -> Result<T, VolumeError> {
    result.map_err(|source| VolumeError::Io {
        volume: volume.to_owned(),
        action,
        path: path.to_owned(),
        source,
    })
}

fn create(volume: &str, dir: &Path, mode: u32) -> Result<(), VolumeError> {
    io(volume, "mkdir", dir, fs::create_dir_all(dir))?;
    io(
        volume,
        "chmod",
        dir,
        fs::set_permissions(dir, fs::Permissions::from_mode(mode)),
    )
}

fn claim_directory(volume: &str, dir: &Path, fs_group: Option<i64>) -> Result<(), VolumeError> {
    if dir.exists() {
        return Ok(());
    }
    create(volume, dir, 0o755)?;
    if let Some(group) = fs_group.and_then(|group| u32::try_from(group).ok()) {
        io(
            volume,
            "chown",
            dir,
            std::os::unix::fs::chown(dir, Some(0), Some(group)),
        )?;
        io(
            volume,
            "chmod",
            dir,
            fs::set_permissions(dir, fs::Permissions::from_mode(0o2775)),
        )?;
    }
    Ok(())
}

fn current_files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(base: &Path, dir: &Path, found: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(base, &path, found);
            } else if let (Ok(bytes), Ok(relative)) = (fs::read(&path), path.strip_prefix(base)) {
                found.insert(relative.to_owned(), bytes);
            }
        }
    }
    let mut found = BTreeMap::new();
    walk(&dir.join(DATA_LINK), &dir.join(DATA_LINK), &mut found);
    found
}

/// The kubelet's atomic writer: a new generation directory, `..data` swapped to it by
/// rename, links for the top-level entries, and the previous generation removed.
fn write_generation(
    volume: &str,
    dir: &Path,
    files: &Files,
    fs_group: Option<i64>,
) -> Result<(), VolumeError> {
    create(volume, dir, 0o1777)?;
    let generations: Vec<u64> = fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            entry
                .file_name()
                .to_str()?
                .strip_prefix("..gen")?
                .parse()
                .ok()
        })
        .collect();
    let next = generations.iter().max().map_or(0, |last| last + 1);
    let generation = dir.join(format!("..gen{next}"));
    create(volume, &generation, 0o755)?;
    let group = fs_group.and_then(|group| u32::try_from(group).ok());
    for (relative, (bytes, mode)) in files {
        let path = generation.join(relative);
        if let Some(parent) = path.parent() {
            create(volume, parent, 0o755)?;
        }
        io(volume, "write", &path, fs::write(&path, bytes))?;
        io(
            volume,
            "chmod",
            &path,
            fs::set_permissions(&path, fs::Permissions::from_mode(*mode)),
        )?;
        if group.is_some() {
            io(
                volume,
                "chown",
                &path,
                std::os::unix::fs::chown(&path, Some(0), group),
            )?;
        }
    }
    let staged = dir.join("..data_tmp");
    let _ = fs::remove_file(&staged);
    io(
        volume,
        "link",
        &staged,
        symlink(format!("..gen{next}"), &staged),
    )?;
    io(
        volume,
        "rename",
        &staged,
        fs::rename(&staged, dir.join(DATA_LINK)),
    )?;
    let tops: std::collections::BTreeSet<_> = files
        .keys()
        .filter_map(|path| path.components().next())
        .map(|top| top.as_os_str().to_owned())
        .collect();
    for top in &tops {
        let link = dir.join(top);
        if fs::symlink_metadata(&link).is_err() {
            io(
                volume,
                "link",
                &link,
                symlink(Path::new(DATA_LINK).join(top), &link),
            )?;
        }
    }
    for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = entry.file_name();
        let stale_link = entry.file_type().is_ok_and(|kind| kind.is_symlink())
            && !name.to_string_lossy().starts_with("..")
            && !tops.contains(&name);
        if stale_link {
            let _ = fs::remove_file(entry.path());
        }
    }
    for old in generations.into_iter().filter(|old| *old != next) {
        let _ = fs::remove_dir_all(dir.join(format!("..gen{old}")));
    }
    Ok(())
}

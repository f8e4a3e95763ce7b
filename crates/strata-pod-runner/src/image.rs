//! Images as local directories. No image is pulled: `cargo xtask tools` builds a
//! directory laid out as the image is, from registry packages, with a manifest,
//! `strata-image.json`, that says which references it stands for, which of its paths
//! are bound into the container (the rest of the container's root is the host's), and
//! the image's environment, working directory and user. A pod whose image has no
//! directory cannot run as rendered, and the runner says which image it lacks.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::launch::Bind;

/// The manifest's file name inside an image directory.
pub const MANIFEST: &str = "strata-image.json";

/// What an image directory stands for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    /// The image references it serves, as pods name them.
    pub references: Vec<String>,
    /// The absolute paths of the image that the directory holds (`/opt/hadoop`).
    pub paths: Vec<PathBuf>,
    /// The image's `ENV`, in order.
    pub env: Vec<(String, String)>,
    /// The image's `WORKDIR`.
    pub working_dir: PathBuf,
    /// The image's `USER`, as uid and gid.
    pub user: (u32, u32),
    /// The image's `ENTRYPOINT` followed by its `CMD`.
    #[serde(default)]
    pub entrypoint: Vec<String>,
}

/// One image directory and its manifest.
#[derive(Clone, Debug)]
pub struct Image {
    /// The directory: the image's `/`.
    pub root: PathBuf,
    /// Its manifest.
    pub manifest: Manifest,
}

impl Image {
    /// The read-only binds that put the image's paths into a container.
    pub fn binds(&self) -> Vec<Bind> {
        self.manifest
            .paths
            .iter()
            .map(|path| Bind {
                source: self.root.join(path.strip_prefix("/").unwrap_or(path)),
                target: path.clone(),
                read_only: true,
            })
            .collect()
    }
}

/// Why an image directory could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    /// The manifest is missing or unreadable.
    #[error("cannot read the image manifest {path}: {reason}")]
    Manifest {
        /// The manifest's path.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// No directory serves the reference.
    #[error(
        "no local directory for image {0}; `cargo xtask tools` builds the images the tests use"
    )]
    Unknown(String),
}

/// The image directories a runner knows, by reference.
#[derive(Clone, Debug, Default)]
pub struct Images(BTreeMap<String, Image>);

impl Images {
    /// Adds the image directory `root`, under every reference its manifest names.
    pub fn add(&mut self, root: &Path) -> Result<(), ImageError> {
        let path = root.join(MANIFEST);
        let manifest: Manifest = std::fs::read_to_string(&path)
            .map_err(|error| error.to_string())
            .and_then(|text| serde_json::from_str(&text).map_err(|error| error.to_string()))
            .map_err(|reason| ImageError::Manifest {
                path: path.clone(),
                reason,
            })?;
        for reference in &manifest.references {
            self.0.insert(
                reference.clone(),
                Image {
                    root: root.to_owned(),
                    manifest: manifest.clone(),
                },
            );
        }
        Ok(())
    }

    /// The directory for `reference`.
    pub fn get(&self, reference: &str) -> Result<&Image, ImageError> {
        self.0
            .get(reference)
            .ok_or_else(|| ImageError::Unknown(reference.to_owned()))
    }
}

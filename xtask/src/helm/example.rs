//! The first-cluster example a chart's `NOTES.txt` shows after `helm install`.
//!
//! It is the first document of an example manifest the operator's registry entry names,
//! so the notes show the same manifest the repository documents and tests. Its namespace
//! is dropped because the notes apply it with `--namespace`, which must be the watched
//! namespace when the operator watches only one.

use std::{
    fs, io,
    path::{Path, PathBuf},
};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde::Deserialize;
use serde_json::Value;

/// Why an example cannot be shown.
#[derive(Debug, thiserror::Error)]
pub enum ExampleError {
    /// The file could not be read.
    #[error("cannot read {path}")]
    Read {
        /// The example file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
    /// The file is not YAML, or could not be written back as YAML.
    #[error("{path} is not valid YAML")]
    Yaml {
        /// The example file.
        path: PathBuf,
        /// The parser's error.
        #[source]
        source: serde_yaml_ng::Error,
    },
    /// The first document is not an object of one of the operator's kinds.
    #[error(
        "the first document of {path} must be one of the operator's kinds ({kinds}), found {found}"
    )]
    NotOperatorKind {
        /// The example file.
        path: PathBuf,
        /// The kinds the operator owns.
        kinds: String,
        /// `apiVersion/kind` of the document.
        found: String,
    },
    /// The first document has no `metadata.name`.
    #[error("the first document of {path} has no metadata.name")]
    NoName {
        /// The example file.
        path: PathBuf,
    },
    /// The manifest contains `{{` or `}}`, which Helm would read as a template action.
    #[error("{path} contains `{{{{` or `}}}}`, which NOTES.txt cannot show verbatim")]
    TemplateSyntax {
        /// The example file.
        path: PathBuf,
    },
}

/// A first-cluster example, ready for `NOTES.txt`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Example {
    /// The kind, e.g. `ZookeeperCluster`.
    pub kind: String,
    /// `metadata.name`.
    pub name: String,
    /// The manifest as YAML, without `metadata.namespace` and without comments.
    pub manifest: String,
}

impl Example {
    /// Reads the first document of `path` and checks it is one of the `crds`' kinds.
    pub fn read(path: &Path, crds: &[CustomResourceDefinition]) -> Result<Self, ExampleError> {
        let text = fs::read_to_string(path).map_err(|source| ExampleError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::parse(path, &text, crds)
    }

    /// [`Example::read`] of text already read; `path` is for messages.
    pub fn parse(
        path: &Path,
        text: &str,
        crds: &[CustomResourceDefinition],
    ) -> Result<Self, ExampleError> {
        let yaml_error = |source| ExampleError::Yaml {
            path: path.to_owned(),
            source,
        };
        let mut document = serde_yaml_ng::Deserializer::from_str(text)
            .map(Value::deserialize)
            .find(|document| !matches!(document, Ok(Value::Null)))
            .transpose()
            .map_err(yaml_error)?
            .unwrap_or(Value::Null);
        let api_version = document["apiVersion"].as_str().unwrap_or_default();
        let kind = document["kind"].as_str().unwrap_or_default().to_owned();
        let owned =
            crds.iter().any(|crd| {
                crd.spec.names.kind == kind
                    && crd.spec.versions.iter().any(|version| {
                        api_version == format!("{}/{}", crd.spec.group, version.name)
                    })
            });
        if !owned {
            return Err(ExampleError::NotOperatorKind {
                path: path.to_owned(),
                kinds: crds
                    .iter()
                    .map(|crd| crd.spec.names.kind.clone())
                    .collect::<Vec<_>>()
                    .join(", "),
                found: format!("{api_version}/{kind}"),
            });
        }
        let name = document["metadata"]["name"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| ExampleError::NoName {
                path: path.to_owned(),
            })?;
        if let Some(metadata) = document["metadata"].as_object_mut() {
            metadata.remove("namespace");
        }
        let manifest = serde_yaml_ng::to_string(&document).map_err(yaml_error)?;
        if manifest.contains("{{") || manifest.contains("}}") {
            return Err(ExampleError::TemplateSyntax {
                path: path.to_owned(),
            });
        }
        Ok(Self {
            kind,
            name,
            manifest: manifest.trim_end().to_owned(),
        })
    }

    /// `kind/name` as kubectl takes it, e.g. `zookeepercluster/simple-zk`.
    pub fn object(&self) -> String {
        format!("{}/{}", self.kind.to_lowercase(), self.name)
    }
}

#[cfg(test)]
mod tests;

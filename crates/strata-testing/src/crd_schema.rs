//! Objects of other projects' kinds (the Prometheus Operator's ServiceMonitor and
//! PrometheusRule, the Gateway API's HTTPRoute and BackendTLSPolicy), checked against
//! those projects' own CRDs, which kubernetes-validate has no schema for: it only
//! warns about them. The checks of `render`'s output send these objects here and the
//! rest to kubernetes-validate, so every rendered object is validated strictly.
//!
//! The CRDs are the pinned releases `cargo xtask tools` provisions (the same the
//! real-control-plane tests install). The validation is the venv's Python
//! `jsonschema` with the schemas made strict as the API server's strict field
//! validation is (`crd_schema.py`); their CEL rules are left to the real API server.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::{Value, json};

use crate::tools::{self, GATEWAY_API_CRDS, MissingTool, PROMETHEUS_OPERATOR_CRDS};

/// The script that validates, run by the venv's Python.
const SCRIPT: &str = include_str!("crd_schema.py");

/// The served versions' schemas of other projects' CRDs, by `apiVersion/kind`.
#[derive(Clone, Debug)]
pub struct CrdSchemas {
    python: PathBuf,
    schemas: BTreeMap<String, Value>,
}

impl CrdSchemas {
    /// The CRDs `cargo xtask tools` provisions, and the venv's Python.
    pub fn from_env() -> Result<Self, String> {
        let missing = |missing: MissingTool| missing.to_string();
        let python = tools::venv_python().map_err(missing)?;
        let dirs = [PROMETHEUS_OPERATOR_CRDS, GATEWAY_API_CRDS]
            .map(|var| tools::required_path(var).map_err(missing))
            .into_iter()
            .collect::<Result<Vec<_>, _>>()?;
        Self::from_dirs(python, &dirs)
    }

    /// The CRDs in `dirs` (one per `.yaml` file), validated with `python`.
    pub fn from_dirs(python: PathBuf, dirs: &[PathBuf]) -> Result<Self, String> {
        let mut crds = Vec::new();
        for dir in dirs {
            crds.extend(tools::read_crds(dir)?);
        }
        Ok(Self::new(python, &crds))
    }

    /// The schemas of `crds`, validated with `python` (which has `jsonschema`).
    pub fn new(python: PathBuf, crds: &[CustomResourceDefinition]) -> Self {
        let mut schemas = BTreeMap::new();
        for crd in crds {
            for version in crd.spec.versions.iter().filter(|version| version.served) {
                let schema = version
                    .schema
                    .as_ref()
                    .and_then(|schema| schema.open_api_v3_schema.as_ref())
                    .and_then(|schema| serde_json::to_value(schema).ok());
                if let Some(schema) = schema {
                    schemas.insert(
                        format!(
                            "{}/{}/{}",
                            crd.spec.group, version.name, crd.spec.names.kind
                        ),
                        schema,
                    );
                }
            }
        }
        Self { python, schemas }
    }

    /// Whether `document` is of a kind these CRDs define.
    pub fn covers(&self, document: &Value) -> bool {
        let (Some(api_version), Some(kind)) =
            (document["apiVersion"].as_str(), document["kind"].as_str())
        else {
            return false;
        };
        self.schemas.contains_key(&format!("{api_version}/{kind}"))
    }

    /// Checks `documents` (each of a covered kind) and says why they do not all pass.
    pub fn check(&self, what: &str, documents: &[Value]) -> Result<(), String> {
        if documents.is_empty() {
            return Ok(());
        }
        let input = json!({"schemas": self.schemas, "documents": documents}).to_string();
        let mut child = Command::new(&self.python)
            .args(["-c", SCRIPT])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|error| format!("{what}: cannot run {}: {error}", self.python.display()))?;
        // A Python that dies early (jsonschema missing) closes its input: its own words
        // on stderr say why, so they are read before the write's failure is reported.
        let written = child
            .stdin
            .take()
            .map(|mut stdin| stdin.write_all(input.as_bytes()));
        let output = child
            .wait_with_output()
            .map_err(|error| format!("{what}: the CRD check: {error}"))?;
        if let Some(Err(error)) = written {
            return Err(format!(
                "{what}: cannot feed the CRD check ({error}): {}",
                String::from_utf8_lossy(&output.stderr)
            ));
        }
        let answer: Value = serde_json::from_slice(&output.stdout).map_err(|error| {
            format!(
                "{what}: the CRD check printed no answer ({error}): {}",
                String::from_utf8_lossy(&output.stderr)
            )
        })?;
        let problems: Vec<&str> = answer["problems"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        if answer["checked"] == json!(documents.len()) && problems.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "{what} against their projects' CRDs: {}",
                problems.join("; ")
            ))
        }
    }
}

//! Reading YAML the way different clients do: serde_yaml_ng (YAML 1.2) and
//! PyYAML (YAML 1.1, whose resolver kubectl's reader shares).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use serde::Deserialize;
use serde_json::Value;

/// Every non-empty document of a multi-document YAML text.
pub fn documents(yaml: &str) -> Result<Vec<Value>, serde_yaml_ng::Error> {
    let mut documents = Vec::new();
    for document in serde_yaml_ng::Deserializer::from_str(yaml) {
        let value = Value::deserialize(document)?;
        if !value.is_null() {
            documents.push(value);
        }
    }
    Ok(documents)
}

/// `documents` as one multi-document YAML text.
pub fn to_multi_document_yaml(documents: &[Value]) -> Result<String, serde_yaml_ng::Error> {
    let mut yaml = String::new();
    for document in documents {
        yaml.push_str("---\n");
        yaml.push_str(&serde_yaml_ng::to_string(document)?);
    }
    Ok(yaml)
}

/// Loads every document with each PyYAML safe loader and prints them as JSON; a key that
/// is not a string, or a value JSON cannot hold (a timestamp), fails the load.
const PYYAML_TO_JSON: &str = r#"
import json, sys, yaml

def strict(node, path):
    if isinstance(node, dict):
        for key, value in node.items():
            if not isinstance(key, str):
                raise SystemExit(f"{path}: key {key!r} was read as {type(key).__name__}")
            strict(value, f"{path}.{key}")
    elif isinstance(node, list):
        for index, item in enumerate(node):
            strict(item, f"{path}[{index}]")

text = sys.stdin.read()
loaders = [yaml.SafeLoader] + ([yaml.CSafeLoader] if hasattr(yaml, "CSafeLoader") else [])
results = {}
for loader in loaders:
    documents = [d for d in yaml.load_all(text, Loader=loader) if d is not None]
    strict(documents, loader.__name__)
    results[loader.__name__] = documents
json.dump(results, sys.stdout)
"#;

/// What each PyYAML loader (pure Python and, where built, libyaml) read from
/// `yaml`, by loader name, each as an array of documents.
pub fn read_with_pyyaml(
    python: &Path,
    yaml: &str,
) -> Result<serde_json::Map<String, Value>, String> {
    let mut child = Command::new(python)
        .args(["-c", PYYAML_TO_JSON])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|error| format!("starting {}: {error}", python.display()))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(yaml.as_bytes())
            .map_err(|error| format!("writing to PyYAML: {error}"))?;
    }
    let output = child
        .wait_with_output()
        .map_err(|error| format!("waiting for PyYAML: {error}"))?;
    if !output.status.success() {
        return Err(format!(
            "PyYAML could not read the YAML: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let read: serde_json::Map<String, Value> = serde_json::from_slice(&output.stdout)
        .map_err(|error| format!("PyYAML's JSON: {error}"))?;
    if read.is_empty() {
        return Err("no PyYAML loader ran".to_owned());
    }
    Ok(read)
}

/// Whether every PyYAML loader reads `yaml` as exactly the documents
/// serde_yaml_ng reads; the error names the loader and the first difference.
pub fn readers_agree(python: &Path, yaml: &str) -> Result<usize, String> {
    let expected = Value::Array(documents(yaml).map_err(|error| error.to_string())?);
    let read = read_with_pyyaml(python, yaml)?;
    for (loader, objects) in &read {
        if *objects != expected {
            return Err(format!(
                "PyYAML's {loader} reads the YAML differently from a YAML 1.2 reader:\n\
                 PyYAML:    {objects}\nYAML 1.2:  {expected}"
            ));
        }
    }
    Ok(read.len())
}

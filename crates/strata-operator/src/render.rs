//! Offline rendering: read custom resources from YAML, print the objects the
//! operator would apply as sorted, multi-document YAML.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

/// Why a manifest file could not be rendered.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// The file is not YAML.
    #[error("document {index} is not valid YAML: {source}")]
    Yaml {
        /// Position of the document in the file, from 1.
        index: usize,
        /// The parser error.
        source: serde_yaml_ng::Error,
    },
    /// A custom resource does not deserialise into its type.
    #[error("{kind} {name}: {message}")]
    InvalidResource {
        /// The resource's kind.
        kind: String,
        /// The resource's name.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// Output could not be serialised.
    #[error("could not write YAML: {0}")]
    Output(#[from] serde_yaml_ng::Error),
}

/// Splits a multi-document YAML string into JSON values, skipping empty
/// documents.
pub fn parse_documents(yaml: &str) -> Result<Vec<Value>, RenderError> {
    let mut documents = Vec::new();
    for (index, document) in serde_yaml_ng::Deserializer::from_str(yaml).enumerate() {
        let value = Value::deserialize(document).map_err(|source| RenderError::Yaml {
            index: index + 1,
            source,
        })?;
        if !value.is_null() {
            documents.push(value);
        }
    }
    Ok(documents)
}

/// Documents of one kind, deserialised into its type.
///
/// Render inputs usually hold several kinds (a cluster and its ZNodes, a
/// Trino cluster and its catalogs); each operator picks out the ones it knows.
pub fn documents_of_kind<K>(documents: &[Value]) -> Result<Vec<K>, RenderError>
where
    K: kube::Resource<DynamicType = ()> + serde::de::DeserializeOwned,
{
    let api_version = K::api_version(&());
    let kind = K::kind(&());
    documents
        .iter()
        .filter(|document| document["apiVersion"] == *api_version && document["kind"] == *kind)
        .map(|document| {
            serde_json::from_value(document.clone()).map_err(|error| RenderError::InvalidResource {
                kind: kind.to_string(),
                name: document["metadata"]["name"]
                    .as_str()
                    .unwrap_or("<unnamed>")
                    .to_owned(),
                message: error.to_string(),
            })
        })
        .collect()
}

/// Prints objects as multi-document YAML, sorted by kind, namespace and name,
/// so that the same input always gives the same bytes.
pub fn to_sorted_yaml(objects: Vec<Value>) -> Result<String, RenderError> {
    let sorted: BTreeMap<(String, String, String), Value> = objects
        .into_iter()
        .map(|object| {
            let key = (
                object["kind"].as_str().unwrap_or_default().to_owned(),
                object["metadata"]["namespace"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                object["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            );
            (key, object)
        })
        .collect();
    let mut out = String::new();
    for object in sorted.values() {
        out.push_str("---\n");
        out.push_str(&serde_yaml_ng::to_string(object)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use serde_json::json;

    use super::*;

    #[test]
    fn documents_are_split_and_empty_ones_skipped() {
        let documents = parse_documents("---\napiVersion: v1\nkind: ConfigMap\n---\n---\na: 1\n")
            .expect("yaml");
        assert_eq!(documents.len(), 2);
    }

    #[test]
    fn invalid_yaml_names_the_document() {
        let error = parse_documents("a: 1\n---\n: : :\n").expect_err("invalid");
        assert!(error.to_string().starts_with("document 2"), "{error}");
    }

    #[test]
    fn only_documents_of_the_kind_are_picked() {
        let documents = vec![
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}),
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "b"}}),
        ];
        let config_maps: Vec<ConfigMap> = documents_of_kind(&documents).expect("valid");
        assert_eq!(config_maps.len(), 1);
    }

    #[test]
    fn output_is_sorted_and_deterministic() {
        let objects = vec![
            json!({"kind": "Service", "metadata": {"name": "b", "namespace": "n"}}),
            json!({"kind": "ConfigMap", "metadata": {"name": "z", "namespace": "n"}}),
            json!({"kind": "ConfigMap", "metadata": {"name": "a", "namespace": "n"}}),
        ];
        let mut reversed = objects.clone();
        reversed.reverse();
        let yaml = to_sorted_yaml(objects).expect("yaml");
        assert_eq!(yaml, to_sorted_yaml(reversed).expect("yaml"));
        let names: Vec<_> = yaml
            .lines()
            .filter_map(|l| l.strip_prefix("  name: "))
            .collect();
        assert_eq!(names, ["a", "z", "b"]);
    }
}

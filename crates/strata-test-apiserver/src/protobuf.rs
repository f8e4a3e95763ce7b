//! Request bodies in Kubernetes' protobuf encoding, for the kinds clients send that
//! way: client-go's typed clients (Helm's release storage among them) create and
//! update Secrets and ConfigMaps as protobuf.
//!
//! The envelope is the 4-byte magic `k8s\0` and a `runtime.Unknown` message whose
//! `raw` field holds the object. Only the fields of `ObjectMeta`, `Secret` and
//! `ConfigMap` that a client sets are decoded; the field numbers are those of
//! Kubernetes' `generated.proto`. The object is handed on as the JSON the rest of
//! the API works with. Responses stay JSON, which such clients accept too.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::ObjectMeta;
use prost::Message;
use serde_json::Value;

use crate::status::ApiError;

/// The content type of a protobuf body.
pub(crate) const CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";

const MAGIC: &[u8] = b"k8s\0";

#[derive(Clone, PartialEq, Message)]
struct Unknown {
    #[prost(message, optional, tag = "1")]
    type_meta: Option<TypeMeta>,
    #[prost(bytes = "vec", optional, tag = "2")]
    raw: Option<Vec<u8>>,
}

#[derive(Clone, PartialEq, Message)]
struct TypeMeta {
    #[prost(string, optional, tag = "1")]
    api_version: Option<String>,
    #[prost(string, optional, tag = "2")]
    kind: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
struct ProtoObjectMeta {
    #[prost(string, optional, tag = "1")]
    name: Option<String>,
    #[prost(string, optional, tag = "2")]
    generate_name: Option<String>,
    #[prost(string, optional, tag = "3")]
    namespace: Option<String>,
    #[prost(string, optional, tag = "6")]
    resource_version: Option<String>,
    #[prost(btree_map = "string, string", tag = "11")]
    labels: BTreeMap<String, String>,
    #[prost(btree_map = "string, string", tag = "12")]
    annotations: BTreeMap<String, String>,
    #[prost(string, repeated, tag = "14")]
    finalizers: Vec<String>,
}

#[derive(Clone, PartialEq, Message)]
struct ProtoSecret {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ProtoObjectMeta>,
    #[prost(btree_map = "string, bytes", tag = "2")]
    data: BTreeMap<String, Vec<u8>>,
    #[prost(string, optional, tag = "3")]
    type_: Option<String>,
    #[prost(btree_map = "string, string", tag = "4")]
    string_data: BTreeMap<String, String>,
    #[prost(bool, optional, tag = "5")]
    immutable: Option<bool>,
}

#[derive(Clone, PartialEq, Message)]
struct ProtoConfigMap {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ProtoObjectMeta>,
    #[prost(btree_map = "string, string", tag = "2")]
    data: BTreeMap<String, String>,
    #[prost(btree_map = "string, bytes", tag = "3")]
    binary_data: BTreeMap<String, Vec<u8>>,
    #[prost(bool, optional, tag = "4")]
    immutable: Option<bool>,
}

/// Whether `content_type` names the protobuf encoding.
pub(crate) fn is_protobuf(content_type: Option<&str>) -> bool {
    content_type.is_some_and(|value| value.starts_with(CONTENT_TYPE))
}

/// The object in a protobuf body, as JSON; a kind this module does not know is a
/// 415, as the API server answers a media type it cannot decode.
pub(crate) fn decode_object(body: &[u8]) -> Result<Value, ApiError> {
    let envelope = body
        .strip_prefix(MAGIC)
        .ok_or_else(|| ApiError::bad_request("a protobuf body must start with k8s\\0"))?;
    let unknown = Unknown::decode(envelope).map_err(invalid)?;
    let type_meta = unknown.type_meta.unwrap_or_default();
    let raw = unknown.raw.unwrap_or_default();
    let api_version = type_meta.api_version.unwrap_or_default();
    let kind = type_meta.kind.unwrap_or_default();
    let object = match (api_version.as_str(), kind.as_str()) {
        ("v1", "Secret") => {
            let secret = ProtoSecret::decode(raw.as_slice()).map_err(invalid)?;
            serde_json::to_value(Secret {
                metadata: metadata(secret.metadata),
                data: non_empty(secret.data).map(|data| {
                    data.into_iter()
                        .map(|(key, value)| (key, ByteString(value)))
                        .collect()
                }),
                string_data: non_empty(secret.string_data),
                type_: secret.type_,
                immutable: secret.immutable,
            })
        }
        ("v1", "ConfigMap") => {
            let config_map = ProtoConfigMap::decode(raw.as_slice()).map_err(invalid)?;
            serde_json::to_value(ConfigMap {
                metadata: metadata(config_map.metadata),
                data: non_empty(config_map.data),
                binary_data: non_empty(config_map.binary_data).map(|data| {
                    data.into_iter()
                        .map(|(key, value)| (key, ByteString(value)))
                        .collect()
                }),
                immutable: config_map.immutable,
            })
        }
        _ => {
            return Err(ApiError::new(
                415,
                "UnsupportedMediaType",
                format!(
                    "protobuf bodies are decoded for v1 Secrets and ConfigMaps only, not {api_version} {kind}; send JSON"
                ),
            ));
        }
    };
    object.map_err(|error| ApiError::bad_request(format!("re-encoding as JSON: {error}")))
}

fn invalid(error: prost::DecodeError) -> ApiError {
    ApiError::bad_request(format!("invalid protobuf body: {error}"))
}

fn non_empty<K, V>(map: BTreeMap<K, V>) -> Option<BTreeMap<K, V>> {
    (!map.is_empty()).then_some(map)
}

fn metadata(meta: Option<ProtoObjectMeta>) -> ObjectMeta {
    let meta = meta.unwrap_or_default();
    ObjectMeta {
        name: meta.name,
        generate_name: meta.generate_name,
        namespace: meta.namespace,
        resource_version: meta.resource_version,
        labels: non_empty(meta.labels),
        annotations: non_empty(meta.annotations),
        finalizers: (!meta.finalizers.is_empty()).then_some(meta.finalizers),
        ..ObjectMeta::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Secret as client-go encodes it: the envelope, type meta and the object.
    fn encoded_secret() -> Vec<u8> {
        let secret = ProtoSecret {
            metadata: Some(ProtoObjectMeta {
                name: Some("sh.helm.release.v1.zk.v1".to_owned()),
                labels: BTreeMap::from([("owner".to_owned(), "helm".to_owned())]),
                ..ProtoObjectMeta::default()
            }),
            data: BTreeMap::from([("release".to_owned(), b"H4sI".to_vec())]),
            type_: Some("helm.sh/release.v1".to_owned()),
            ..ProtoSecret::default()
        };
        let unknown = Unknown {
            type_meta: Some(TypeMeta {
                api_version: Some("v1".to_owned()),
                kind: Some("Secret".to_owned()),
            }),
            raw: Some(secret.encode_to_vec()),
        };
        [MAGIC, unknown.encode_to_vec().as_slice()].concat()
    }

    #[test]
    fn a_protobuf_secret_becomes_its_json() {
        let object = decode_object(&encoded_secret()).expect("decodes");
        assert_eq!(
            object,
            serde_json::json!({
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "sh.helm.release.v1.zk.v1", "labels": {"owner": "helm"}},
                "data": {"release": "SDRzSQ=="},
                "type": "helm.sh/release.v1",
            })
        );
    }

    #[test]
    fn other_kinds_and_broken_bodies_are_refused() {
        let unknown = Unknown {
            type_meta: Some(TypeMeta {
                api_version: Some("apps/v1".to_owned()),
                kind: Some("Deployment".to_owned()),
            }),
            raw: Some(Vec::new()),
        };
        let deployment = [MAGIC, unknown.encode_to_vec().as_slice()].concat();
        assert_eq!(decode_object(&deployment).map_err(|e| e.code), Err(415));
        assert_eq!(decode_object(b"{}").map_err(|e| e.code), Err(400));
    }
}

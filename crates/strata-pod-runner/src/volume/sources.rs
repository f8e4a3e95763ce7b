//! What a pod's volumes and environment are made from: its namespace's ConfigMaps and
//! Secrets, and the ServiceAccount tokens the node agent requested.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};

/// The ConfigMaps and Secrets of a pod's namespace, by name.
#[derive(Clone, Debug, Default)]
pub struct Sources {
    /// ConfigMaps by name.
    pub config_maps: BTreeMap<String, ConfigMap>,
    /// Secrets by name.
    pub secrets: BTreeMap<String, Secret>,
    /// ServiceAccount tokens by pod name and audience (empty: the API server's).
    pub service_account_tokens: BTreeMap<(String, String), Token>,
}

/// A ServiceAccount token: a bearer credential, never shown by `Debug`.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(pub String);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

impl Sources {
    /// A ConfigMap's entries, text and binary, as bytes.
    pub fn config_map(&self, name: &str) -> Option<BTreeMap<String, Vec<u8>>> {
        self.config_maps.get(name).map(|config_map| {
            let mut entries: BTreeMap<String, Vec<u8>> = config_map
                .data
                .iter()
                .flatten()
                .map(|(key, value)| (key.clone(), value.clone().into_bytes()))
                .collect();
            for (key, value) in config_map.binary_data.iter().flatten() {
                entries.insert(key.clone(), value.0.clone());
            }
            entries
        })
    }

    /// A Secret's entries (`stringData` included, as the API server would merge it).
    pub fn secret(&self, name: &str) -> Option<BTreeMap<String, Vec<u8>>> {
        self.secrets.get(name).map(|secret| {
            let mut entries: BTreeMap<String, Vec<u8>> = secret
                .data
                .iter()
                .flatten()
                .map(|(key, value)| (key.clone(), value.0.clone()))
                .collect();
            for (key, value) in secret.string_data.iter().flatten() {
                entries.insert(key.clone(), value.clone().into_bytes());
            }
            entries
        })
    }
}

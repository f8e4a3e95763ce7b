//! Trino connections: Superset databases built from Trino's discovery ConfigMaps.

use std::collections::{BTreeMap, BTreeSet};

use strata_operator::error::ReconcileError;

use crate::crd::TrinoConnection;

/// Where each discovery ConfigMap is mounted, under its own name.
pub const TRINO_DISCOVERY_DIR: &str = "/strata/trino";
/// The keys of a Trino discovery ConfigMap the init container reads; `ca.crt` is read
/// too when `TRINO_TLS` is `true`.
pub const DISCOVERY_KEYS: [&str; 3] = ["TRINO_HOST", "TRINO_PORT", "TRINO_TLS"];
/// The spec's field, for messages.
pub const CONNECTIONS_FIELD: &str = "clusterConfig.trinoConnections";

/// A connection, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidatedTrinoConnection {
    /// The database's name in Superset.
    pub name: String,
    /// The discovery ConfigMap.
    pub discovery_config_map: String,
    /// Where the ConfigMap is mounted.
    pub directory: String,
    /// The default catalog.
    pub catalog: Option<String>,
    /// The Secret with `username` and `password`.
    pub credentials_secret: Option<String>,
}

/// The connections, checked: each named once and not blank. The stock image has no
/// `trino` package, so every query would fail while the cluster looked healthy: like
/// LDAP, connections need a custom image.
pub fn trino_connections(
    connections: &[TrinoConnection],
    stock_image: bool,
) -> Result<Vec<ValidatedTrinoConnection>, ReconcileError> {
    if connections.is_empty() {
        return Ok(Vec::new());
    }
    if stock_image {
        return Err(ReconcileError::invalid_spec(
            "TrinoConnectionNeedsDriver",
            format!(
                "{CONNECTIONS_FIELD} needs the `trino` Python package, which the stock \
                 Superset image does not ship, so every query would fail: build an image \
                 that adds it (see the derived image in the Superset docs) and set \
                 spec.image.custom to it"
            ),
        ));
    }
    let mut names = BTreeSet::new();
    for connection in connections {
        let invalid = |problem: String| {
            Err(ReconcileError::invalid_spec(
                "InvalidTrinoConnection",
                format!("{CONNECTIONS_FIELD}: {problem}"),
            ))
        };
        if connection.name.trim().is_empty() || connection.discovery_config_map.is_empty() {
            return invalid("every connection needs a name and a discoveryConfigMap".to_owned());
        }
        if !names.insert(connection.name.as_str()) {
            return invalid(format!(
                "the name {:?} is given twice; Superset knows a database by its name",
                connection.name
            ));
        }
    }
    Ok(connections
        .iter()
        .map(|connection| ValidatedTrinoConnection {
            name: connection.name.clone(),
            discovery_config_map: connection.discovery_config_map.clone(),
            directory: format!("{TRINO_DISCOVERY_DIR}/{}", connection.discovery_config_map),
            catalog: connection.catalog.clone(),
            credentials_secret: connection.credentials_secret.clone(),
        })
        .collect())
}

/// Each discovery ConfigMap once, with the volume it is mounted from
/// (`trino-discovery-<n>`: a ConfigMap's name may be longer than a volume's).
pub fn discovery_volumes(connections: &[ValidatedTrinoConnection]) -> BTreeMap<&str, String> {
    let config_maps: BTreeSet<&str> = connections
        .iter()
        .map(|connection| connection.discovery_config_map.as_str())
        .collect();
    config_maps
        .into_iter()
        .enumerate()
        .map(|(index, config_map)| (config_map, format!("trino-discovery-{index}")))
        .collect()
}

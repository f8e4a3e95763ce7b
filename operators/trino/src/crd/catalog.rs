//! `TrinoCatalog`: one Trino catalog, written as `<name>.properties` on every node of
//! each `TrinoCluster` whose `catalogLabelSelector` matches its labels.
//!
//! Values that are secret, or that another operator publishes, are never copied into
//! the operator's ConfigMaps: each becomes an environment variable read from its
//! Secret or ConfigMap, and the catalog file names it as `${ENV:NAME}`.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strata_status::ResourceStatus;

/// A catalog that Trino clusters in its namespace serve when their label selector
/// matches it.
#[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[kube(
    group = "trino.strata.dev",
    version = "v1alpha1",
    kind = "TrinoCatalog",
    plural = "trinocatalogs",
    shortname = "trinocat",
    namespaced,
    status = "CatalogStatus",
    derive = "PartialEq",
    doc = "A Trino catalog, served by the TrinoClusters whose catalogLabelSelector matches it.",
    printcolumn = r#"{"name":"Catalog","type":"string","jsonPath":".status.catalogName"}"#,
    printcolumn = r#"{"name":"Available","type":"string","jsonPath":".status.conditions[?(@.type==\"Available\")].status"}"#,
    printcolumn = r#"{"name":"Used By","type":"string","jsonPath":".status.usedBy"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct TrinoCatalogSpec {
    /// The catalog's name in SQL (`SELECT … FROM <name>.schema.table`): lower-case
    /// letters, digits, `_` and `-`. Defaults to `metadata.name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalog_name: Option<String>,

    /// The connector: exactly one of the fields.
    pub connector: Connector,

    /// Catalog properties written after the connector's own, so they win; for
    /// connector settings the typed fields do not cover. `connector.name` is refused.
    /// Not checked against Trino's property list: a key Trino does not know stops
    /// every node that serves the catalog.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub config_overrides: BTreeMap<String, String>,
}

/// The connector of a catalog. The schema allows several or none, so that such a spec
/// reaches the operator, which names the problem in a condition.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Connector {
    /// The TPC-H benchmark data set, generated on the fly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpch: Option<TpchConnector>,
    /// The TPC-DS benchmark data set, generated on the fly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpcds: Option<TpcdsConnector>,
    /// Tables held in worker memory, lost on restart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryConnector>,
    /// Tables that discard writes and read as empty, for testing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blackhole: Option<BlackholeConnector>,
    /// A PostgreSQL database.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub postgresql: Option<PostgresqlConnector>,
    /// Hive tables through a Hive metastore.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hive: Option<HiveConnector>,
    /// Iceberg tables.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iceberg: Option<IcebergConnector>,
    /// Any connector by name, with its properties.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generic: Option<GenericConnector>,
}

/// `connector.name=tpch`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct TpchConnector {
    /// `tpch.splits-per-node`: splits generated per node and table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub splits_per_node: Option<u32>,
    /// `tpch.column-naming`: `SIMPLIFIED` (Trino's default, `custkey`) or `STANDARD`
    /// (`c_custkey`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column_naming: Option<TpchColumnNaming>,
}

/// Column names of the TPC-H tables.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq, strum::Display)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[strum(serialize_all = "SCREAMING_SNAKE_CASE")]
pub enum TpchColumnNaming {
    /// `custkey`.
    Simplified,
    /// `c_custkey`.
    Standard,
}

/// `connector.name=tpcds`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct TpcdsConnector {
    /// `tpcds.splits-per-node`: splits generated per node and table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub splits_per_node: Option<u32>,
}

/// `connector.name=memory`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct MemoryConnector {
    /// `memory.max-data-per-node`: the most table data one worker holds, such as
    /// `1Gi`. Trino's default when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_data_per_node: Option<Quantity>,
}

/// `connector.name=blackhole`; it has no settings.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
pub struct BlackholeConnector {}

/// `connector.name=postgresql`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct PostgresqlConnector {
    /// `connection-url`: a JDBC URL such as `jdbc:postgresql://db.example.com:5432/sales`.
    pub connection_url: String,
    /// A Secret in the catalog's namespace with the keys `username` and `password`.
    pub credentials_secret: String,
}

/// `connector.name=hive`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct HiveConnector {
    /// The Hive metastore.
    pub metastore: Metastore,
}

/// Where a Hive metastore is: exactly one of `uri` or `configMap`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Metastore {
    /// The thrift URI, such as `thrift://hive-metastore:9083`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
    /// A discovery ConfigMap that holds the URI, as a Hive operator publishes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map: Option<ConfigMapUri>,
}

/// A discovery ConfigMap and its key.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ConfigMapUri {
    /// The ConfigMap in the catalog's namespace.
    pub name: String,
    /// The key that holds the URI. Defaults to `HIVE`.
    #[serde(default = "default_metastore_key")]
    pub key: String,
}

fn default_metastore_key() -> String {
    "HIVE".to_owned()
}

/// `connector.name=iceberg`: exactly one of the catalog types.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct IcebergConnector {
    /// `iceberg.catalog.type=hive_metastore`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hive_metastore: Option<Metastore>,
    /// `iceberg.catalog.type=rest`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rest: Option<IcebergRestCatalog>,
    /// `iceberg.catalog.type=jdbc`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jdbc: Option<IcebergJdbcCatalog>,
}

/// An Iceberg REST catalog.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct IcebergRestCatalog {
    /// `iceberg.rest-catalog.uri`.
    pub uri: String,
    /// `iceberg.rest-catalog.warehouse`, if the catalog serves several.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warehouse: Option<String>,
}

/// An Iceberg catalog kept in a JDBC database.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct IcebergJdbcCatalog {
    /// `iceberg.jdbc-catalog.connection-url`, such as
    /// `jdbc:postgresql://db:5432/iceberg`.
    pub connection_url: String,
    /// `iceberg.jdbc-catalog.driver-class`. Defaults to the PostgreSQL driver for a
    /// `jdbc:postgresql:` URL, the only driver Trino's Iceberg plugin ships; another
    /// driver needs a custom image (`spec.image.custom` of the cluster) that adds it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_class: Option<String>,
    /// A Secret with the keys `username` and `password`.
    pub credentials_secret: String,
    /// `iceberg.jdbc-catalog.catalog-name`: the catalog's name in the database.
    pub catalog_name: String,
    /// `iceberg.jdbc-catalog.default-warehouse-dir`: where new tables go.
    pub default_warehouse_dir: String,
}

/// Any connector: its name and properties, with values from Secrets or ConfigMaps
/// passed through the environment.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct GenericConnector {
    /// `connector.name`.
    pub connector_name: String,
    /// Properties written as given.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub properties: BTreeMap<String, String>,
    /// Properties whose values come from Secret keys.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub secret_properties: BTreeMap<String, KeyRef>,
    /// Properties whose values come from ConfigMap keys.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub config_map_properties: BTreeMap<String, KeyRef>,
}

/// One key of a Secret or ConfigMap in the catalog's namespace.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "camelCase")]
pub struct KeyRef {
    /// The object's name.
    pub name: String,
    /// The key.
    pub key: String,
}

/// Observed state of a `TrinoCatalog`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct CatalogStatus {
    /// The catalog's name in SQL, once its spec is valid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalog_name: Option<String>,
    /// The `TrinoCluster`s whose label selector matches the catalog, sorted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub used_by: Vec<String>,
    /// A hash of the versions of the Secrets and ConfigMaps the catalog's values come
    /// from. The pods read those values when they start, so a new hash rolls the pods
    /// of every cluster that serves the catalog.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub references_hash: Option<String>,
    /// Available (every reference resolves) and Degraded, with the observed generation.
    #[serde(flatten)]
    pub resource: ResourceStatus,
}

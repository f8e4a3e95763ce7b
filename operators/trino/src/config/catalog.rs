//! A `TrinoCatalog` checked and turned into its properties file and the environment
//! variables that carry its secret and published values.

use std::collections::BTreeMap;

use kube::ResourceExt;
use strata_model::files::java_properties;
use strata_operator::error::ReconcileError;

use super::data_size::trino_data_size;
use crate::crd::catalog::{
    Connector, GenericConnector, IcebergConnector, KeyRef, Metastore, TrinoCatalog,
};

/// The longest catalog name accepted; it becomes a file name and part of variable
/// names.
pub const MAX_CATALOG_NAME_LENGTH: usize = 63;

/// The prefix of every catalog variable; `envOverrides` may not set such a variable.
pub const CATALOG_VARIABLE_PREFIX: &str = "CATALOG_";

/// The one JDBC driver Trino's Iceberg plugin ships (`plugin/trino-iceberg/pom.xml`
/// of 483 has PostgreSQL's at runtime scope, and no other database's).
pub const ICEBERG_BUNDLED_JDBC_DRIVER: &str = "org.postgresql.Driver";

/// The property that names the Iceberg JDBC catalog's driver.
pub const ICEBERG_JDBC_DRIVER_PROPERTY: &str = "iceberg.jdbc-catalog.driver-class";

/// Where an environment variable's value comes from.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ValueSource {
    /// A Secret key (`secretKeyRef`).
    Secret(KeyRef),
    /// A ConfigMap key (`configMapKeyRef`).
    ConfigMap(KeyRef),
}

/// An environment variable a catalog file reads as `${ENV:variable}`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct CatalogVariable {
    /// The variable's name.
    pub variable: String,
    /// Its value's source.
    pub source: ValueSource,
    /// Where the spec names the source, for messages.
    pub field: String,
    /// Whether the value is a list that the container joins with commas before Trino
    /// reads it (a metastore list published one URI a line).
    pub comma_list: bool,
}

/// A `TrinoCatalog` with its connector checked and its file rendered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidatedCatalog {
    /// `metadata.name`.
    pub object_name: String,
    /// The name in SQL and of the file (`<name>.properties`).
    pub name: String,
    /// `connector.name`, for messages and the check against documented keys.
    pub connector_name: String,
    /// The properties in file order: `connector.name` first, the connector's own,
    /// then the overrides.
    pub properties: Vec<(String, String)>,
    /// The variables the file reads.
    pub variables: Vec<CatalogVariable>,
}

impl ValidatedCatalog {
    /// Checks `catalog`: its name, exactly one connector, and overrides without line
    /// breaks or `connector.name`.
    pub fn new(catalog: &TrinoCatalog) -> Result<Self, ReconcileError> {
        let object_name = catalog.name_any();
        let name = catalog
            .spec
            .catalog_name
            .clone()
            .unwrap_or_else(|| object_name.clone());
        check_catalog_name(&name)?;
        let prefix = format!("{CATALOG_VARIABLE_PREFIX}{}", variable_part(&name));
        let mut builder = Builder {
            prefix,
            properties: Vec::new(),
            variables: Vec::new(),
        };
        let connector_name = connector(&catalog.spec.connector, &mut builder)?;
        for (key, value) in &catalog.spec.config_overrides {
            if key == "connector.name" {
                return Err(ReconcileError::invalid_spec(
                    "InvalidConfigOverride",
                    "configOverrides: connector.name is set by spec.connector; choose the \
                     connector there (spec.connector.generic takes any name)",
                ));
            }
            check_line(&format!("configOverrides.{key}"), key, value)?;
            builder.set(key, value);
        }
        Ok(Self {
            object_name,
            name,
            connector_name,
            properties: builder.properties,
            variables: builder.variables,
        })
    }

    /// The value Trino reads for `key`: the last one in the file, as Java's
    /// `Properties` keeps it.
    pub fn property(&self, key: &str) -> Option<&str> {
        self.properties
            .iter()
            .rev()
            .find(|(name, _)| name == key)
            .map(|(_, value)| value.as_str())
    }

    /// The file's content.
    pub fn file(&self) -> String {
        java_properties::write(
            "",
            self.properties
                .iter()
                .map(|(key, value)| (key.as_str(), value.as_str())),
        )
        // Keys were checked to be non-empty.
        .unwrap_or_default()
    }

    /// The file's key in the catalog ConfigMap.
    pub fn file_name(&self) -> String {
        format!("{}.properties", self.name)
    }
}

/// Refuses a catalog name Trino or a file name cannot carry.
fn check_catalog_name(name: &str) -> Result<(), ReconcileError> {
    let valid = !name.is_empty()
        && name.len() <= MAX_CATALOG_NAME_LENGTH
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
        && name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    if valid {
        Ok(())
    } else {
        Err(ReconcileError::invalid_spec(
            "InvalidCatalogName",
            format!(
                "the catalog name {name:?} must be 1 to {MAX_CATALOG_NAME_LENGTH} lower-case \
                 letters, digits, '_' or '-', starting with a letter or digit; set \
                 spec.catalogName"
            ),
        ))
    }
}

/// A name as part of an environment variable name.
fn variable_part(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect()
}

/// The provider of the first secret reference `${provider:key}` in `text`, as Trino's
/// secrets resolver (airlift's `SecretsResolver`) matches one:
/// `\$\{([a-zA-Z][a-zA-Z0-9_-]*):`. It looks the provider up in lower case, so
/// `${env:`, `${Env:` and `${ENV:` all read the pods' environment, and a plugin in a
/// custom image may add other providers.
pub fn secret_reference(text: &str) -> Option<&str> {
    text.match_indices("${").find_map(|(start, _)| {
        let rest = &text[start + 2..];
        let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))?;
        let (provider, after) = rest.split_at(end);
        (after.starts_with(':') && provider.starts_with(|c: char| c.is_ascii_alphabetic()))
            .then_some(provider)
    })
}

/// Refuses an empty key, a line break in a key or value (a value must never end its
/// entry and start another), and a secret reference of any provider and any case
/// ([`secret_reference`]: the pods' environment holds every catalog's credentials and
/// the shared secret, so a catalog author could send them elsewhere). Overrides fail as
/// `InvalidConfigOverride`, connector fields as `InvalidConnector`.
fn check_line(field: &str, key: &str, value: &str) -> Result<(), ReconcileError> {
    if let Some(provider) = [key, value].into_iter().find_map(secret_reference) {
        return Err(ReconcileError::invalid_spec(
            if field.starts_with("configOverrides") {
                "InvalidConfigOverride"
            } else {
                "InvalidConnector"
            },
            format!(
                "{field}: a catalog may not name a secret provider (${{{provider}:...}}): \
                 Trino resolves ${{env:...}} in any case from the pods' environment, which \
                 holds other catalogs' credentials and the cluster's shared secret; name a \
                 Secret key in spec.connector.generic.secretProperties instead"
            ),
        ));
    }
    if key.trim().is_empty() || [key, value].iter().any(|text| text.contains(['\n', '\r'])) {
        let reason = if field.starts_with("configOverrides") {
            "InvalidConfigOverride"
        } else {
            "InvalidConnector"
        };
        return Err(ReconcileError::invalid_spec(
            reason,
            format!("{field}: keys must be non-empty and keys and values must be single lines"),
        ));
    }
    Ok(())
}

struct Builder {
    prefix: String,
    properties: Vec<(String, String)>,
    variables: Vec<CatalogVariable>,
}

impl Builder {
    /// Sets `key`, replacing an earlier value in place.
    fn set(&mut self, key: &str, value: impl Into<String>) {
        let value = value.into();
        match self.properties.iter_mut().find(|(k, _)| k == key) {
            Some(entry) => entry.1 = value,
            None => self.properties.push((key.to_owned(), value)),
        }
    }

    /// Sets `key` to `${ENV:<prefix>_<purpose>}`, read from `source`.
    fn set_from(&mut self, key: &str, purpose: &str, source: ValueSource, field: String) {
        self.set_variable(key, purpose, source, field, false);
    }

    fn set_variable(
        &mut self,
        key: &str,
        purpose: &str,
        source: ValueSource,
        field: String,
        comma_list: bool,
    ) {
        let variable = format!("{}_{purpose}", self.prefix);
        self.set(key, format!("${{ENV:{variable}}}"));
        self.variables.push(CatalogVariable {
            variable,
            source,
            field,
            comma_list,
        });
    }

    fn credentials(&mut self, user_key: &str, password_key: &str, secret: &str, field: &str) {
        for (key, purpose, secret_key) in [
            (user_key, "USER", "username"),
            (password_key, "PASSWORD", "password"),
        ] {
            self.set_from(
                key,
                purpose,
                ValueSource::Secret(KeyRef {
                    name: secret.to_owned(),
                    key: secret_key.to_owned(),
                }),
                field.to_owned(),
            );
        }
    }

    fn metastore(&mut self, metastore: &Metastore, field: &str) -> Result<(), ReconcileError> {
        match (&metastore.uri, &metastore.config_map) {
            (Some(uri), None) => {
                check_line(&format!("{field}.uri"), "uri", uri)?;
                self.set("hive.metastore.uri", uri.clone());
            }
            (None, Some(config_map)) => self.set_variable(
                "hive.metastore.uri",
                "METASTORE_URI",
                ValueSource::ConfigMap(KeyRef {
                    name: config_map.name.clone(),
                    key: config_map.key.clone(),
                }),
                format!("{field}.configMap"),
                true,
            ),
            (uri, _) => {
                return Err(ReconcileError::invalid_spec(
                    "InvalidConnector",
                    format!(
                        "{field} must name exactly one of uri or configMap, but names {}",
                        if uri.is_some() { "both" } else { "neither" }
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// Renders the connector's properties; returns `connector.name`.
fn connector(connector: &Connector, builder: &mut Builder) -> Result<String, ReconcileError> {
    let Connector {
        tpch,
        tpcds,
        memory,
        blackhole,
        postgresql,
        hive,
        iceberg,
        generic,
    } = connector;
    let named: Vec<&'static str> = [
        ("tpch", tpch.is_some()),
        ("tpcds", tpcds.is_some()),
        ("memory", memory.is_some()),
        ("blackhole", blackhole.is_some()),
        ("postgresql", postgresql.is_some()),
        ("hive", hive.is_some()),
        ("iceberg", iceberg.is_some()),
        ("generic", generic.is_some()),
    ]
    .into_iter()
    .filter_map(|(name, set)| set.then_some(name))
    .collect();
    if named.len() != 1 {
        return Err(ReconcileError::invalid_spec(
            "InvalidConnector",
            format!(
                "spec.connector must name exactly one connector, but names {}",
                if named.is_empty() {
                    "none".to_owned()
                } else {
                    named.join(", ")
                }
            ),
        ));
    }
    if let Some(generic) = generic {
        return generic_connector(generic, builder).map(|()| generic.connector_name.clone());
    }
    let name = named[0];
    builder.set("connector.name", name);
    if let Some(tpch) = tpch {
        if let Some(splits) = tpch.splits_per_node {
            builder.set("tpch.splits-per-node", splits.to_string());
        }
        if let Some(naming) = tpch.column_naming {
            builder.set("tpch.column-naming", naming.to_string());
        }
    }
    if let Some(splits) = tpcds.as_ref().and_then(|tpcds| tpcds.splits_per_node) {
        builder.set("tpcds.splits-per-node", splits.to_string());
    }
    if let Some(size) = memory
        .as_ref()
        .and_then(|memory| memory.max_data_per_node.as_ref())
    {
        let size = trino_data_size(size).map_err(|error| {
            ReconcileError::invalid_spec(
                "InvalidConnector",
                format!("spec.connector.memory.maxDataPerNode: {error}"),
            )
        })?;
        builder.set("memory.max-data-per-node", size);
    }
    if let Some(postgresql) = postgresql {
        check_line(
            "spec.connector.postgresql.connectionUrl",
            "connectionUrl",
            &postgresql.connection_url,
        )?;
        builder.set("connection-url", postgresql.connection_url.clone());
        builder.credentials(
            "connection-user",
            "connection-password",
            &postgresql.credentials_secret,
            "spec.connector.postgresql.credentialsSecret",
        );
    }
    if let Some(hive) = hive {
        builder.metastore(&hive.metastore, "spec.connector.hive.metastore")?;
    }
    if let Some(iceberg) = iceberg {
        iceberg_connector(iceberg, builder)?;
    }
    Ok(name.to_owned())
}

fn iceberg_connector(
    iceberg: &IcebergConnector,
    builder: &mut Builder,
) -> Result<(), ReconcileError> {
    match (&iceberg.hive_metastore, &iceberg.rest, &iceberg.jdbc) {
        (Some(metastore), None, None) => {
            builder.set("iceberg.catalog.type", "hive_metastore");
            builder.metastore(metastore, "spec.connector.iceberg.hiveMetastore")
        }
        (None, Some(rest), None) => {
            check_line("spec.connector.iceberg.rest.uri", "uri", &rest.uri)?;
            builder.set("iceberg.catalog.type", "rest");
            builder.set("iceberg.rest-catalog.uri", rest.uri.clone());
            if let Some(warehouse) = &rest.warehouse {
                check_line(
                    "spec.connector.iceberg.rest.warehouse",
                    "warehouse",
                    warehouse,
                )?;
                builder.set("iceberg.rest-catalog.warehouse", warehouse.clone());
            }
            Ok(())
        }
        (None, None, Some(jdbc)) => {
            for (field, value) in [
                ("connectionUrl", &jdbc.connection_url),
                ("catalogName", &jdbc.catalog_name),
                ("defaultWarehouseDir", &jdbc.default_warehouse_dir),
            ] {
                check_line(
                    &format!("spec.connector.iceberg.jdbc.{field}"),
                    field,
                    value,
                )?;
            }
            let driver_class = match (&jdbc.driver_class, jdbc.connection_url.as_str()) {
                (Some(class), _) => {
                    check_line(
                        "spec.connector.iceberg.jdbc.driverClass",
                        "driverClass",
                        class,
                    )?;
                    class.clone()
                }
                (None, url) if url.starts_with("jdbc:postgresql:") => {
                    ICEBERG_BUNDLED_JDBC_DRIVER.to_owned()
                }
                (None, _) => {
                    return Err(ReconcileError::invalid_spec(
                        "InvalidConnector",
                        format!(
                            "spec.connector.iceberg.jdbc.driverClass is required for a \
                             connection URL other than jdbc:postgresql:. Trino's Iceberg \
                             plugin ships only the PostgreSQL driver \
                             ({ICEBERG_BUNDLED_JDBC_DRIVER}), so another database needs an \
                             image with its driver in /usr/lib/trino/plugin/iceberg, named \
                             in the TrinoCluster's spec.image.custom"
                        ),
                    ));
                }
            };
            builder.set("iceberg.catalog.type", "jdbc");
            builder.set(ICEBERG_JDBC_DRIVER_PROPERTY, driver_class);
            builder.set(
                "iceberg.jdbc-catalog.connection-url",
                jdbc.connection_url.clone(),
            );
            builder.credentials(
                "iceberg.jdbc-catalog.connection-user",
                "iceberg.jdbc-catalog.connection-password",
                &jdbc.credentials_secret,
                "spec.connector.iceberg.jdbc.credentialsSecret",
            );
            builder.set(
                "iceberg.jdbc-catalog.catalog-name",
                jdbc.catalog_name.clone(),
            );
            builder.set(
                "iceberg.jdbc-catalog.default-warehouse-dir",
                jdbc.default_warehouse_dir.clone(),
            );
            Ok(())
        }
        _ => Err(ReconcileError::invalid_spec(
            "InvalidConnector",
            "spec.connector.iceberg must name exactly one of hiveMetastore, rest or jdbc",
        )),
    }
}

fn generic_connector(
    generic: &GenericConnector,
    builder: &mut Builder,
) -> Result<(), ReconcileError> {
    check_line(
        "spec.connector.generic.connectorName",
        "connectorName",
        &generic.connector_name,
    )?;
    builder.set("connector.name", generic.connector_name.clone());
    for (key, value) in &generic.properties {
        check_line(
            &format!("spec.connector.generic.properties.{key}"),
            key,
            value,
        )?;
        if key == "connector.name" {
            return Err(ReconcileError::invalid_spec(
                "InvalidConnector",
                "spec.connector.generic.properties: connector.name is \
                 spec.connector.generic.connectorName",
            ));
        }
        builder.set(key, value.clone());
    }
    let mut purposes: BTreeMap<String, &str> = BTreeMap::new();
    let referenced = generic
        .secret_properties
        .iter()
        .map(|(key, reference)| {
            (
                key,
                ValueSource::Secret(reference.clone()),
                "secretProperties",
            )
        })
        .chain(
            generic
                .config_map_properties
                .iter()
                .map(|(key, reference)| {
                    (
                        key,
                        ValueSource::ConfigMap(reference.clone()),
                        "configMapProperties",
                    )
                }),
        );
    for (key, source, field) in referenced {
        let field = format!("spec.connector.generic.{field}.{key}");
        check_line(&field, key, "")?;
        if key == "connector.name" {
            return Err(ReconcileError::invalid_spec(
                "InvalidConnector",
                format!("{field}: connector.name is spec.connector.generic.connectorName"),
            ));
        }
        let purpose = variable_part(key);
        if let Some(other) = purposes.insert(purpose.clone(), key) {
            return Err(ReconcileError::invalid_spec(
                "InvalidConnector",
                format!(
                    "{field}: the properties {other} and {key} would share the environment \
                     variable {}_{purpose}; rename one",
                    builder.prefix
                ),
            ));
        }
        builder.set_from(key, &purpose, source, field);
    }
    Ok(())
}

#[cfg(test)]
mod tests;

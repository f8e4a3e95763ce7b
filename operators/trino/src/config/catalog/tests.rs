use pretty_assertions::assert_eq;
use rstest::rstest;
use serde_json::{Value, json};

use super::*;

fn catalog(name: &str, spec: Value) -> TrinoCatalog {
    serde_json::from_value(json!({
        "apiVersion": "trino.strata.dev/v1alpha1",
        "kind": "TrinoCatalog",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec
    }))
    .unwrap_or_else(|error| unreachable!("the fixture is a valid TrinoCatalog: {error}"))
}

fn checked(spec: Value) -> Result<ValidatedCatalog, ReconcileError> {
    ValidatedCatalog::new(&catalog("sales", spec))
}

fn secret(name: &str, key: &str) -> ValueSource {
    ValueSource::Secret(KeyRef {
        name: name.to_owned(),
        key: key.to_owned(),
    })
}

fn config_map(name: &str, key: &str) -> ValueSource {
    ValueSource::ConfigMap(KeyRef {
        name: name.to_owned(),
        key: key.to_owned(),
    })
}

#[rstest]
#[case::tpch(
    json!({"tpch": {"splitsPerNode": 4, "columnNaming": "STANDARD"}}),
    "connector.name=tpch\ntpch.splits-per-node=4\ntpch.column-naming=STANDARD\n",
    vec![]
)]
#[case::tpcds(json!({"tpcds": {}}), "connector.name=tpcds\n", vec![])]
#[case::memory(
    json!({"memory": {"maxDataPerNode": "512Mi"}}),
    "connector.name=memory\nmemory.max-data-per-node=512MB\n",
    vec![]
)]
#[case::blackhole(json!({"blackhole": {}}), "connector.name=blackhole\n", vec![])]
#[case::postgresql(
    json!({"postgresql": {"connectionUrl": "jdbc:postgresql://db:5432/sales", "credentialsSecret": "pg"}}),
    "connector.name=postgresql\nconnection-url=jdbc:postgresql://db:5432/sales\n\
     connection-user=${ENV:CATALOG_SALES_USER}\nconnection-password=${ENV:CATALOG_SALES_PASSWORD}\n",
    vec![("CATALOG_SALES_USER", secret("pg", "username")), ("CATALOG_SALES_PASSWORD", secret("pg", "password"))]
)]
#[case::hive_by_uri(
    json!({"hive": {"metastore": {"uri": "thrift://metastore:9083"}}}),
    "connector.name=hive\nhive.metastore.uri=thrift://metastore:9083\n",
    vec![]
)]
#[case::hive_by_discovery_config_map(
    json!({"hive": {"metastore": {"configMap": {"name": "hive"}}}}),
    "connector.name=hive\nhive.metastore.uri=${ENV:CATALOG_SALES_METASTORE_URI}\n",
    vec![("CATALOG_SALES_METASTORE_URI", config_map("hive", "HIVE"))]
)]
#[case::iceberg_rest(
    json!({"iceberg": {"rest": {"uri": "http://rest:8181", "warehouse": "main"}}}),
    "connector.name=iceberg\niceberg.catalog.type=rest\niceberg.rest-catalog.uri=http://rest:8181\n\
     iceberg.rest-catalog.warehouse=main\n",
    vec![]
)]
#[case::iceberg_jdbc(
    json!({"iceberg": {"jdbc": {
        "connectionUrl": "jdbc:postgresql://db/iceberg", "credentialsSecret": "ice",
        "catalogName": "lake", "defaultWarehouseDir": "s3://lake/"
    }}}),
    "connector.name=iceberg\niceberg.catalog.type=jdbc\n\
     iceberg.jdbc-catalog.driver-class=org.postgresql.Driver\n\
     iceberg.jdbc-catalog.connection-url=jdbc:postgresql://db/iceberg\n\
     iceberg.jdbc-catalog.connection-user=${ENV:CATALOG_SALES_USER}\n\
     iceberg.jdbc-catalog.connection-password=${ENV:CATALOG_SALES_PASSWORD}\n\
     iceberg.jdbc-catalog.catalog-name=lake\n\
     iceberg.jdbc-catalog.default-warehouse-dir=s3://lake/\n",
    vec![("CATALOG_SALES_USER", secret("ice", "username")), ("CATALOG_SALES_PASSWORD", secret("ice", "password"))]
)]
#[case::generic_with_referenced_values(
    json!({"generic": {
        "connectorName": "mysql",
        "properties": {"connection-url": "jdbc:mysql://db:3306"},
        "secretProperties": {"connection-password": {"name": "my", "key": "pw"}},
        "configMapProperties": {"connection-user": {"name": "users", "key": "trino"}}
    }}),
    "connector.name=mysql\nconnection-url=jdbc:mysql://db:3306\n\
     connection-password=${ENV:CATALOG_SALES_CONNECTION_PASSWORD}\n\
     connection-user=${ENV:CATALOG_SALES_CONNECTION_USER}\n",
    vec![
        ("CATALOG_SALES_CONNECTION_PASSWORD", secret("my", "pw")),
        ("CATALOG_SALES_CONNECTION_USER", config_map("users", "trino")),
    ]
)]
fn each_connector_renders_its_properties_and_variables(
    #[case] connector: Value,
    #[case] file: &str,
    #[case] variables: Vec<(&str, ValueSource)>,
) -> Result<(), ReconcileError> {
    let catalog = checked(json!({"connector": connector}))?;
    assert_eq!(catalog.file(), file);
    let found: Vec<(&str, ValueSource)> = catalog
        .variables
        .iter()
        .map(|variable| (variable.variable.as_str(), variable.source.clone()))
        .collect();
    assert_eq!(found, variables);
    Ok(())
}

#[rstest]
#[case::no_connector(json!({"connector": {}}), "InvalidConnector")]
#[case::two_connectors(json!({"connector": {"tpch": {}, "memory": {}}}), "InvalidConnector")]
#[case::metastore_both_ways(
    json!({"connector": {"hive": {"metastore": {"uri": "thrift://m:9083", "configMap": {"name": "hive"}}}}}),
    "InvalidConnector"
)]
#[case::metastore_neither_way(json!({"connector": {"hive": {"metastore": {}}}}), "InvalidConnector")]
#[case::iceberg_without_catalog_type(json!({"connector": {"iceberg": {}}}), "InvalidConnector")]
#[case::iceberg_jdbc_of_an_unknown_database(
    json!({"connector": {"iceberg": {"jdbc": {
        "connectionUrl": "jdbc:oracle:thin:@db", "credentialsSecret": "ice",
        "catalogName": "lake", "defaultWarehouseDir": "s3://lake/"
    }}}}),
    "InvalidConnector"
)]
#[case::iceberg_jdbc_on_mysql_without_a_driver(
    json!({"connector": {"iceberg": {"jdbc": {
        "connectionUrl": "jdbc:mysql://db:3306/iceberg", "credentialsSecret": "ice",
        "catalogName": "lake", "defaultWarehouseDir": "s3://lake/"
    }}}}),
    "InvalidConnector"
)]
#[case::generic_variables_collide(
    json!({"connector": {"generic": {
        "connectorName": "mysql",
        "secretProperties": {"a.b": {"name": "s", "key": "k"}, "a-b": {"name": "s", "key": "k"}}
    }}}),
    "InvalidConnector"
)]
#[case::override_of_the_connector_name(
    json!({"connector": {"tpch": {}}, "configOverrides": {"connector.name": "memory"}}),
    "InvalidConfigOverride"
)]
#[case::override_with_a_line_break(
    json!({"connector": {"tpch": {}}, "configOverrides": {"tpch.splits-per-node": "4\nconnector.name=memory"}}),
    "InvalidConfigOverride"
)]
#[case::url_with_a_line_break(
    json!({"connector": {"postgresql": {"connectionUrl": "jdbc:postgresql://db\nx=y", "credentialsSecret": "pg"}}}),
    "InvalidConnector"
)]
#[case::generic_property_naming_the_connector(
    json!({"connector": {"generic": {"connectorName": "mysql", "properties": {"connector.name": "x"}}}}),
    "InvalidConnector"
)]
#[case::blank_override_key(
    json!({"connector": {"tpch": {}}, "configOverrides": {" ": "x"}}),
    "InvalidConfigOverride"
)]
#[case::override_reading_the_environment(
    json!({"connector": {"tpch": {}}, "configOverrides": {"tpch.column-naming": "${ENV:TRINO_INTERNAL_SHARED_SECRET}"}}),
    "InvalidConfigOverride"
)]
#[case::override_reading_the_environment_in_lower_case(
    json!({"connector": {"tpch": {}}, "configOverrides": {"tpch.column-naming": "${env:TRINO_INTERNAL_SHARED_SECRET}"}}),
    "InvalidConfigOverride"
)]
#[case::override_reading_the_environment_in_mixed_case(
    json!({"connector": {"tpch": {}}, "configOverrides": {"tpch.column-naming": "x-${eNv:CATALOG_OTHER_PASSWORD}"}}),
    "InvalidConfigOverride"
)]
#[case::another_secret_provider(
    json!({"connector": {"tpch": {}}, "configOverrides": {"tpch.column-naming": "${vault:secret/trino}"}}),
    "InvalidConfigOverride"
)]
#[case::generic_property_reading_the_environment(
    json!({"connector": {"generic": {"connectorName": "postgresql", "properties": {"connection-user": "${env:TRINO_INTERNAL_SHARED_SECRET}"}}}}),
    "InvalidConnector"
)]
#[case::url_reading_the_environment(
    json!({"connector": {"postgresql": {"connectionUrl": "jdbc:postgresql://evil/${ENV:CATALOG_OTHER_PASSWORD}", "credentialsSecret": "pg"}}}),
    "InvalidConnector"
)]
#[case::upper_case_name(json!({"catalogName": "Sales", "connector": {"tpch": {}}}), "InvalidCatalogName")]
#[case::dotted_name(json!({"catalogName": "sales.eu", "connector": {"tpch": {}}}), "InvalidCatalogName")]
fn invalid_catalogs_are_refused_with_a_reason(#[case] spec: Value, #[case] reason: &str) {
    match checked(spec) {
        Ok(catalog) => panic!("accepted: {catalog:?}"),
        Err(error) => assert_eq!(error.reason(), reason, "{error}"),
    }
}

#[test]
fn overrides_win_over_the_connectors_own_properties() -> Result<(), ReconcileError> {
    let catalog = checked(json!({
        "connector": {"tpch": {"splitsPerNode": 4}},
        "configOverrides": {"tpch.splits-per-node": "8", "tpch.max-rows-per-page": "100"}
    }))?;
    assert_eq!(
        catalog.file(),
        "connector.name=tpch\ntpch.splits-per-node=8\ntpch.max-rows-per-page=100\n"
    );
    Ok(())
}

#[test]
fn a_generic_catalog_is_known_by_its_connectors_name() -> Result<(), ReconcileError> {
    let catalog = checked(json!({"connector": {"generic": {"connectorName": "mysql"}}}))?;
    assert_eq!(catalog.connector_name, "mysql");
    Ok(())
}

#[test]
fn the_catalog_name_defaults_to_the_object_name() -> Result<(), ReconcileError> {
    assert_eq!(
        checked(json!({"connector": {"tpch": {}}}))?.file_name(),
        "sales.properties"
    );
    assert_eq!(
        checked(json!({"catalogName": "sales_eu", "connector": {"tpch": {}}}))?.file_name(),
        "sales_eu.properties"
    );
    Ok(())
}

#[rstest]
#[case::upper_case("${ENV:X}", Some("ENV"))]
#[case::lower_case("${env:X}", Some("env"))]
#[case::mixed_case("a${Env:X}b", Some("Env"))]
#[case::a_plugins_provider("${file-1:/etc/x}", Some("file-1"))]
#[case::a_later_reference("${not a reference} and ${env:X}", Some("env"))]
#[case::a_digit_first("${1env:X}", None)]
#[case::no_colon("${env}", None)]
#[case::a_dollar_alone("costs $5: {x}", None)]
#[case::plain_text("jdbc:postgresql://db:5432/x", None)]
fn secret_references_are_found_as_trinos_resolver_matches_them(
    #[case] text: &str,
    #[case] provider: Option<&str>,
) {
    assert_eq!(secret_reference(text), provider);
}

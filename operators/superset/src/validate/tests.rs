use pretty_assertions::assert_eq;
use rstest::rstest;
use serde_json::{Value, json};
use strata_operator::error::ReconcileError;
use strata_operator::reference::KeySource;

use super::*;

/// A cluster on PostgreSQL with an admin, with `cluster_config` replacing the keys it
/// names in `clusterConfig`.
pub(crate) fn cluster(cluster_config: Value, nodes: Value) -> SupersetCluster {
    let mut config = json!({
        "metadataDatabase": {"postgresql": {
            "host": "postgres.db.svc", "database": "superset", "credentialsSecret": "superset-db"
        }},
        "adminUser": {"secretName": "superset-admin"}
    });
    if let (Some(config), Value::Object(patch)) = (config.as_object_mut(), cluster_config) {
        config.extend(patch);
    }
    let nodes = if nodes.is_null() {
        json!({"roleGroups": {"default": {"replicas": 2}}})
    } else {
        nodes
    };
    serde_json::from_value(json!({
        "apiVersion": "superset.strata.dev/v1alpha1",
        "kind": "SupersetCluster",
        "metadata": {"name": "simple-superset", "namespace": "default", "uid": "uid-1"},
        "spec": {"clusterConfig": config, "nodes": nodes}
    }))
    .unwrap_or_else(|error| unreachable!("the fixture is a valid SupersetCluster: {error}"))
}

pub(crate) fn validated(cluster_config: Value) -> Result<ValidatedCluster, ReconcileError> {
    ValidatedCluster::new(
        &cluster(cluster_config, Value::Null),
        DEFAULT_CLUSTER_DOMAIN,
    )
}

#[test]
fn the_secrets_the_pods_read_are_listed_with_their_keys() -> Result<(), ReconcileError> {
    let cluster = validated(json!({"mapboxApiKeySecret": "mapbox"}))?;
    let secrets: Vec<(String, Vec<&str>)> = cluster
        .secrets()
        .into_iter()
        .map(|secret| (secret.name, secret.keys))
        .collect();
    assert_eq!(
        secrets,
        [
            ("superset-db".to_owned(), vec!["username", "password"]),
            (
                "superset-admin".to_owned(),
                vec!["username", "firstname", "lastname", "email", "password"]
            ),
            ("mapbox".to_owned(), vec!["apiKey"]),
        ]
    );
    Ok(())
}

#[rstest]
#[case::neither_database(json!({"metadataDatabase": {}}), "InvalidMetadataDatabase")]
#[case::both_databases(
    json!({"metadataDatabase": {
        "postgresql": {"host": "h", "database": "d", "credentialsSecret": "s"},
        "generic": {"uriSecret": "u"}
    }}),
    "InvalidMetadataDatabase"
)]
#[case::a_database_host_with_a_path(
    postgresql_at("postgres.db.svc/other", "superset"),
    "InvalidMetadataDatabase"
)]
#[case::an_ipv6_database_host_without_brackets(
    postgresql_at("fd00::10", "superset"),
    "InvalidMetadataDatabase"
)]
#[case::a_database_name_with_a_query(
    postgresql_at("postgres.db.svc", "superset?sslmode=disable"),
    "InvalidMetadataDatabase"
)]
#[case::a_database_name_with_a_percent(
    postgresql_at("postgres.db.svc", "super%73et"),
    "InvalidMetadataDatabase"
)]
#[case::an_empty_database_name(postgresql_at("postgres.db.svc", ""), "InvalidMetadataDatabase")]
#[case::ldap_and_oidc(
    json!({"authentication": {
        "ldap": {"serverUri": "ldaps://l", "bindDn": "cn=b", "bindPasswordSecret": "b", "searchBase": "dc=x"},
        "oidc": {"issuerUrl": "https://i", "clientId": "c", "clientSecretSecret": "s"}
    }}),
    "ConflictingAuthentication"
)]
#[case::ldap_on_the_stock_image(
    json!({"authentication": {
        "ldap": {"serverUri": "ldaps://l", "bindDn": "cn=b", "bindPasswordSecret": "b", "searchBase": "dc=x"}
    }}),
    "LdapNeedsPythonLdap"
)]
#[case::ldap_in_clear_text(
    json!({"authentication": {
        "ldap": {"serverUri": "ldap://l", "bindDn": "cn=b", "bindPasswordSecret": "b", "searchBase": "dc=x"}
    }}),
    "LdapInClearText"
)]
#[case::start_tls_on_ldaps(
    json!({"authentication": {
        "ldap": {"serverUri": "ldaps://l", "startTls": true, "bindDn": "cn=b", "bindPasswordSecret": "b", "searchBase": "dc=x"}
    }}),
    "InvalidLdapTls"
)]
#[case::an_ldap_ca_for_clear_text(
    json!({"authentication": {
        "ldap": {"serverUri": "ldap://l", "allowInsecure": true, "caCertificate": {"configMapName": "ldap-ca"}, "bindDn": "cn=b", "bindPasswordSecret": "b", "searchBase": "dc=x"}
    }}),
    "InvalidLdapTls"
)]
#[case::an_ldap_ca_in_two_objects(
    json!({"authentication": {
        "ldap": {"serverUri": "ldaps://l", "caCertificate": {"configMapName": "ldap-ca", "secretName": "ldap-ca"}, "bindDn": "cn=b", "bindPasswordSecret": "b", "searchBase": "dc=x"}
    }}),
    "InvalidLdapTls"
)]
#[case::oidc_without_the_openid_scope(
    json!({"authentication": {
        "oidc": {"issuerUrl": "https://i", "clientId": "c", "clientSecretSecret": "s", "scopes": ["email", "profile"]}
    }}),
    "OidcWithoutOpenidScope"
)]
#[case::database_ca_in_a_secret_and_a_configmap(
    postgresql_tls(json!({"caCertificate": {"secretName": "ca", "configMapName": "ca"}})),
    "InvalidDatabaseTls"
)]
#[case::database_ca_naming_nothing(
    postgresql_tls(json!({"caCertificate": {}})),
    "InvalidDatabaseTls"
)]
#[case::database_ca_that_require_never_checks(
    postgresql_tls(json!({"sslMode": "require", "caCertificate": {"secretName": "ca"}})),
    "InvalidDatabaseTls"
)]
#[case::trino_connection_on_the_stock_image(
    json!({"trinoConnections": [{"name": "Trino", "discoveryConfigMap": "simple-trino"}]}),
    "TrinoConnectionNeedsDriver"
)]
#[case::an_ingress_to_an_ip_address(json!({"ingress": {"host": "192.0.2.7"}}), "InvalidIngress")]
fn invalid_cluster_configs_are_refused_with_a_reason(#[case] config: Value, #[case] reason: &str) {
    match validated(config) {
        Ok(_) => unreachable!("the spec must be refused with {reason}"),
        Err(error) => assert_eq!(error.reason(), reason, "{error}"),
    }
}

#[rstest]
#[case::override_key_not_an_identifier(
    json!({"roleGroups": {"default": {"configOverrides": {"superset_config.py": {"row-limit": "1"}}}}}),
    "InvalidConfigOverride"
)]
#[case::memory_below_what_superset_needs(
    json!({"config": {"resources": {"memory": {"limit": "256Mi"}}}, "roleGroups": {"default": {}}}),
    "MemoryLimitTooLow"
)]
#[case::no_role_groups(json!({"roleGroups": {}}), "NoRoleGroups")]
fn invalid_nodes_are_refused_with_a_reason(#[case] nodes: Value, #[case] reason: &str) {
    match ValidatedCluster::new(&cluster(json!({}), nodes), DEFAULT_CLUSTER_DOMAIN) {
        Ok(_) => unreachable!("the spec must be refused with {reason}"),
        Err(error) => assert_eq!(error.reason(), reason, "{error}"),
    }
}

#[test]
fn defaults_fill_every_setting() -> Result<(), ReconcileError> {
    let cluster = validated(json!({}))?;
    let group = &cluster.nodes.groups[0];
    assert_eq!((group.product.workers, group.product.threads), (1, 20));
    assert_eq!(group.termination_grace_period_seconds, 120);
    assert_eq!(cluster.webserver_timeout, 60);
    assert_eq!(cluster.wheels.len(), 3, "the pg8000 driver");
    assert!(group.product.superset_config.contains("ROW_LIMIT = 50000"));
    Ok(())
}

#[rstest]
#[case::pg8000_driver(json!({}), &["asn1crypto", "pg8000", "scramp"])]
#[case::image_has_a_driver(
    json!({"metadataDatabase": {"generic": {"uriSecret": "u"}, "driver": "none"}}),
    &[]
)]
#[case::oidc_needs_authlib(
    json!({"authentication": {"oidc": {"issuerUrl": "https://i", "clientId": "c", "clientSecretSecret": "s"}}}),
    &["asn1crypto", "pg8000", "scramp", "authlib"]
)]
fn the_pods_get_the_python_packages_the_image_lacks(
    #[case] config: Value,
    #[case] packages: &[&str],
) -> Result<(), ReconcileError> {
    let cluster = validated(config)?;
    let names: Vec<&str> = cluster
        .wheels
        .iter()
        .map(|wheel| wheel.file_name.split('-').next().unwrap_or_default())
        .collect();
    assert_eq!(names, packages);
    Ok(())
}

/// A custom image may carry python-ldap, so LDAP is accepted there.
#[test]
fn ldap_is_accepted_on_a_custom_image() -> Result<(), ReconcileError> {
    let mut with_ldap = cluster(
        json!({"authentication": {
            "ldap": {"serverUri": "ldaps://l", "bindDn": "cn=b", "bindPasswordSecret": "b", "searchBase": "dc=x"}
        }}),
        Value::Null,
    );
    with_ldap.spec.image.custom = Some("registry.example.com/superset-ldap:6.1.0".to_owned());
    ValidatedCluster::new(&with_ldap, DEFAULT_CLUSTER_DOMAIN)?;
    Ok(())
}

/// Finding 23: the LDAP server's certificate is demanded, against the CA the spec names
/// (mounted from its object) or the system trust store; StartTLS makes `ldap://`
/// acceptable without `allowInsecure`.
#[rstest]
#[case::ldaps_with_a_ca_in_a_config_map(
    json!({"serverUri": "ldaps://ldap.example.com", "caCertificate": {"configMapName": "ldap-ca"}}),
    &["AUTH_LDAP_TLS_DEMAND = True", "AUTH_LDAP_TLS_CACERTFILE = os.environ[\"STRATA_LDAP_CA_FILE\"]"],
    Some((KeySource::ConfigMap, "ldap-ca"))
)]
#[case::start_tls_with_a_ca_in_a_secret(
    json!({"serverUri": "ldap://ldap.example.com", "startTls": true, "caCertificate": {"secretName": "ldap-tls"}}),
    &["AUTH_LDAP_TLS_DEMAND = True", "AUTH_LDAP_USE_TLS = True", "AUTH_LDAP_TLS_CACERTFILE = os.environ[\"STRATA_LDAP_CA_FILE\"]"],
    Some((KeySource::Secret, "ldap-tls"))
)]
#[case::ldaps_against_the_system_trust_store(
    json!({"serverUri": "ldaps://ldap.example.com"}),
    &["AUTH_LDAP_TLS_DEMAND = True"],
    None
)]
fn ldap_tls_reaches_the_config_and_the_ca_is_read(
    #[case] ldap: Value,
    #[case] lines: &[&str],
    #[case] ca: Option<(KeySource, &str)>,
) -> Result<(), ReconcileError> {
    let mut ldap = ldap;
    ldap["bindDn"] = json!("cn=b");
    ldap["bindPasswordSecret"] = json!("b");
    ldap["searchBase"] = json!("dc=x");
    let mut with_ldap = cluster(json!({"authentication": {"ldap": ldap}}), Value::Null);
    with_ldap.spec.image.custom = Some("registry.example.com/superset-ldap:6.1.0".to_owned());
    let validated = ValidatedCluster::new(&with_ldap, DEFAULT_CLUSTER_DOMAIN)?;
    let file = &validated.nodes.groups[0].product.superset_config;
    for line in lines {
        assert!(
            file.lines().any(|candidate| candidate == *line),
            "{line}: {file}"
        );
    }
    assert_eq!(
        validated
            .ldap_ca
            .as_ref()
            .map(|ca| (ca.object, ca.name.as_str())),
        ca
    );
    Ok(())
}

/// `clusterConfig` with a PostgreSQL database at `host`, named `database`.
fn postgresql_at(host: &str, database: &str) -> Value {
    json!({"metadataDatabase": {"postgresql": {
        "host": host, "database": database, "credentialsSecret": "superset-db"
    }}})
}

/// An IPv6 address is written in brackets in the URI, and without them where the TLS
/// hook compares it with what SQLAlchemy parses from that URI.
#[test]
fn an_ipv6_database_host_is_bracketed_in_the_uri_alone() -> Result<(), ReconcileError> {
    let mut config = postgresql_at("[fd00::10]", "superset");
    config["metadataDatabase"]["postgresql"]["tls"] = json!({});
    let cluster = validated(config)?;
    let file = &cluster.nodes.groups[0].product.superset_config;
    assert!(file.contains("\"@[fd00::10]:5432/superset\""), "{file}");
    assert!(
        file.contains("secure_metadata_database(host=\"fd00::10\", port=5432"),
        "{file}"
    );
    Ok(())
}

/// `clusterConfig` with the fixture's PostgreSQL database and `tls`.
fn postgresql_tls(tls: Value) -> Value {
    json!({"metadataDatabase": {"postgresql": {
        "host": "postgres.db.svc", "database": "superset", "credentialsSecret": "superset-db",
        "tls": tls
    }}})
}

#[rstest]
#[case::no_tls_leaves_the_driver_default(json!({}), None, None)]
#[case::verify_full_by_default_with_a_secret_ca(
    postgresql_tls(json!({"caCertificate": {"secretName": "db-ca"}})),
    Some("ssl_mode=\"verify-full\", ca_file=\"/strata/metadata-database-tls/ca.crt\""),
    Some((KeySource::Secret, "db-ca"))
)]
#[case::verify_ca_from_a_configmap(
    postgresql_tls(json!({"sslMode": "verify-ca", "caCertificate": {"configMapName": "db-ca"}})),
    Some("ssl_mode=\"verify-ca\", ca_file=\"/strata/metadata-database-tls/ca.crt\""),
    Some((KeySource::ConfigMap, "db-ca"))
)]
#[case::verify_full_against_the_system_trust_store(
    postgresql_tls(json!({})),
    Some("ssl_mode=\"verify-full\", ca_file=None"),
    None
)]
#[case::require_encrypts_without_checking(
    postgresql_tls(json!({"sslMode": "require"})),
    Some("ssl_mode=\"require\", ca_file=None"),
    None
)]
fn the_metadata_database_tls_reaches_the_config_and_the_ca_is_read(
    #[case] config: Value,
    #[case] hook: Option<&str>,
    #[case] ca: Option<(KeySource, &str)>,
) -> Result<(), ReconcileError> {
    let cluster = validated(config)?;
    let file = &cluster.nodes.groups[0].product.superset_config;
    match hook {
        Some(arguments) => {
            assert!(
                file.contains("from strata_database_tls import secure_metadata_database"),
                "{file}"
            );
            assert!(
                file.contains(&format!(
                    "STRATA_METADATA_DATABASE_TLS = secure_metadata_database(\
                     host=\"postgres.db.svc\", port=5432, database=\"superset\", {arguments})"
                )),
                "{file}"
            );
        }
        None => assert!(!file.contains("strata_database_tls"), "{file}"),
    }
    assert_eq!(cluster.database.tls(), hook.is_some());
    let read = cluster
        .database
        .ca()
        .map(|source| (source.object, source.name.as_str()));
    assert_eq!(read, ca);
    Ok(())
}

/// `clusterConfig` with `connections`, on an image that has the `trino` package.
fn with_trino(connections: Value) -> Result<ValidatedCluster, ReconcileError> {
    let mut cluster = cluster(json!({"trinoConnections": connections}), Value::Null);
    cluster.spec.image.custom = Some("registry.example.com/superset-trino:6.1.0".to_owned());
    ValidatedCluster::new(&cluster, DEFAULT_CLUSTER_DOMAIN)
}

#[rstest]
#[case::a_name_given_twice(json!([
    {"name": "Trino", "discoveryConfigMap": "a"},
    {"name": "Trino", "discoveryConfigMap": "b"}
]))]
#[case::a_blank_name(json!([{"name": " ", "discoveryConfigMap": "a"}]))]
#[case::no_configmap(json!([{"name": "Trino", "discoveryConfigMap": ""}]))]
fn invalid_trino_connections_are_refused(#[case] connections: Value) {
    match with_trino(connections) {
        Ok(_) => unreachable!("the connections must be refused"),
        Err(error) => assert_eq!(error.reason(), "InvalidTrinoConnection", "{error}"),
    }
}

#[test]
fn trino_connections_read_their_discovery_and_credentials() -> Result<(), ReconcileError> {
    let cluster = with_trino(json!([
        {"name": "Trino", "discoveryConfigMap": "simple-trino", "catalog": "tpch",
         "credentialsSecret": "superset-trino"},
        {"name": "Trino (anonymous)", "discoveryConfigMap": "simple-trino"}
    ]))?;
    let directories: Vec<&str> = cluster
        .trino_connections
        .iter()
        .map(|connection| connection.directory.as_str())
        .collect();
    assert_eq!(directories, ["/strata/trino/simple-trino"; 2]);
    assert_eq!(
        discovery_volumes(&cluster.trino_connections),
        std::collections::BTreeMap::from([("simple-trino", "trino-discovery-0".to_owned())])
    );
    let credentials = cluster
        .secrets()
        .into_iter()
        .find(|secret| secret.name == "superset-trino")
        .map(|secret| secret.keys);
    assert_eq!(credentials, Some(vec!["username", "password"]));
    Ok(())
}

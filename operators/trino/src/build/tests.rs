use std::collections::BTreeSet;

use pretty_assertions::assert_eq;
use rstest::rstest;
use serde_json::{Value, json};
use strata_operator::error::ReconcileError;

use super::*;
use crate::config::known_properties::{
    ACCESS_CONTROL_PROPERTIES, ACCESS_CONTROL_RULE_SECTIONS, CONFIG_PROPERTIES,
    LDAP_AUTHENTICATOR_PROPERTIES, NODE_PROPERTIES, PASSWORD_AUTHENTICATOR_PROPERTIES,
    REMOVED_PROPERTIES, TYPED_CONNECTORS, catalog_properties,
};
use crate::config::security::PasswordAuthenticator;
use crate::config::server;
use crate::crd::TrinoCatalog;
use crate::validate::tests::{catalog, cluster};
use crate::validate::{DEFAULT_CLUSTER_DOMAIN, ValidatedCluster};
use strata_testing::manifests::named;

fn model(patch: Value, catalogs: &[TrinoCatalog]) -> Result<ValidatedCluster, ReconcileError> {
    ValidatedCluster::new(&cluster(patch), catalogs, DEFAULT_CLUSTER_DOMAIN)
}

/// What the controller would have read: the default rules and a CA.
fn inputs() -> BuildInputs {
    BuildInputs {
        security: SecurityMaterial {
            ca_pem: Some(CA_PEM.to_owned()),
            rules: crate::config::access_control::access_control_rules(None).ok(),
            password_file: None,
            ..SecurityMaterial::default()
        },
        ..BuildInputs::default()
    }
}

/// A stand-in for the CA's certificate.
const CA_PEM: &str = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

fn objects(model: &ValidatedCluster) -> Result<Vec<Value>, ReconcileError> {
    objects_with(model, &inputs())
}

fn objects_with(
    model: &ValidatedCluster,
    inputs: &BuildInputs,
) -> Result<Vec<Value>, ReconcileError> {
    Ok(cluster_objects(model, inputs)
        .into_objects(false)
        .map_err(|error| ReconcileError::operator_bug("Erase", error.to_string()))?
        .into_iter()
        .map(|object| object.into_value())
        .collect())
}

/// Every typed connector, in a form that writes every key it can.
fn every_connector() -> Vec<TrinoCatalog> {
    [
        ("tpch", json!({"tpch": {"splitsPerNode": 2, "columnNaming": "STANDARD"}})),
        ("tpcds", json!({"tpcds": {"splitsPerNode": 2}})),
        ("memory", json!({"memory": {"maxDataPerNode": "1Gi"}})),
        ("blackhole", json!({"blackhole": {}})),
        (
            "postgresql",
            json!({"postgresql": {"connectionUrl": "jdbc:postgresql://db/x", "credentialsSecret": "pg"}}),
        ),
        ("hive", json!({"hive": {"metastore": {"configMap": {"name": "hive"}}}})),
        (
            "iceberg-hms",
            json!({"iceberg": {"hiveMetastore": {"uri": "thrift://m:9083"}}}),
        ),
        (
            "iceberg-rest",
            json!({"iceberg": {"rest": {"uri": "http://r:8181", "warehouse": "w"}}}),
        ),
        (
            "iceberg-jdbc",
            json!({"iceberg": {"jdbc": {
                "connectionUrl": "jdbc:postgresql://db/i", "credentialsSecret": "ice",
                "catalogName": "lake", "defaultWarehouseDir": "s3://lake/"
            }}}),
        ),
    ]
    .into_iter()
    .map(|(name, connector)| catalog(name, json!({"connector": connector})))
    .collect()
}

/// The keys of a properties file, as `java.util.Properties` would read them (the
/// operator writes no continuation lines and escapes no key character it uses).
fn keys(file: &str) -> Vec<String> {
    file.lines()
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(|line| line.split_once('=').map_or(line, |(key, _)| key).to_owned())
        .collect()
}

#[test]
fn every_object() -> Result<(), ReconcileError> {
    let objects = objects(&model(json!({}), &[])?)?;
    let names = strata_testing::manifests::object_names(&objects);
    let expected = [
        "Secret/simple-trino-internal-secret",
        "Secret/simple-trino-metrics",
        "ConfigMap/simple-trino-access-control",
        "ConfigMap/simple-trino",
        "ConfigMap/simple-trino-catalog",
        "ConfigMap/simple-trino-coordinator-default",
        "Service/simple-trino-coordinator-default",
        "Service/simple-trino-coordinator-default-metrics",
        "StatefulSet/simple-trino-coordinator-default",
        "PodDisruptionBudget/simple-trino-coordinator",
        "ConfigMap/simple-trino-worker-default",
        "Service/simple-trino-worker-default",
        "Service/simple-trino-worker-default-metrics",
        "StatefulSet/simple-trino-worker-default",
        "PodDisruptionBudget/simple-trino-worker",
        "Service/simple-trino-coordinator",
    ];
    assert_eq!(names, expected.map(str::to_owned).into_iter().collect());
    Ok(())
}

#[test]
fn every_generated_key_is_one_the_pinned_release_documents() -> Result<(), ReconcileError> {
    let coordinators = json!({
        "config": {"queryMaxMemory": "10Gi", "queryMaxMemoryPerNode": "1Gi"},
        "roleGroups": {"default": {"replicas": 1}}
    });
    let workers = json!({
        "config": {"queryMaxMemoryPerNode": "1Gi"},
        "roleGroups": {"default": {"replicas": 2}}
    });
    let secured = model(
        json!({
            "coordinators": coordinators,
            "workers": workers,
            "clusterConfig": {"authentication": [
                {"password": {"secretName": "users"}},
                {"ldap": {"url": "ldap://l:389", "allowInsecure": true, "caConfigMap": "ca",
                          "userBindPattern": "uid=${USER}", "userBaseDn": "dc=x",
                          "groupAuthPattern": "(uid=${USER})"}},
                {"oauth2": {"issuer": "https://idp/realm", "clientCredentialsSecret": "c",
                            "principalField": "email", "scopes": ["openid"], "caConfigMap": "ca",
                            "additionalAudiences": ["api"]}}
            ]}
        }),
        &every_connector(),
    )?;
    let plain = model(
        json!({"clusterConfig": {"tls": {"enabled": false}, "ingress": {"host": "trino.example.com"}}}),
        &[],
    )?;
    let mut written = BTreeSet::new();
    for group in [&secured, &plain]
        .into_iter()
        .flat_map(|model| &model.roles)
        .flat_map(|role| &role.groups)
    {
        let authenticators = PasswordAuthenticator::GracefulShutdown
            .file_name()
            .to_owned();
        for (file, known) in [
            (server::CONFIG_PROPERTIES, CONFIG_PROPERTIES),
            (server::NODE_PROPERTIES, NODE_PROPERTIES),
            (server::ACCESS_CONTROL_PROPERTIES, ACCESS_CONTROL_PROPERTIES),
            (authenticators.as_str(), PASSWORD_AUTHENTICATOR_PROPERTIES),
            (
                "ldap-authenticator.properties",
                LDAP_AUTHENTICATOR_PROPERTIES,
            ),
        ] {
            let Some(text) = group.product.files.get(file) else {
                continue;
            };
            for key in keys(text) {
                assert!(
                    known.contains(&key.as_str()),
                    "{file}: {key} is not documented"
                );
                written.insert(key);
            }
        }
    }
    let rules: serde_json::Map<String, Value> = serde_json::from_str(
        &crate::config::access_control::access_control_rules(None).unwrap_or_default(),
    )
    .map_err(|error| ReconcileError::operator_bug("Rules", error.to_string()))?;
    for section in rules.keys() {
        assert!(
            ACCESS_CONTROL_RULE_SECTIONS.contains(&section.as_str()),
            "{section}"
        );
    }
    let model = secured;
    for catalog in &model.catalogs {
        assert!(TYPED_CONNECTORS.contains(&catalog.connector_name.as_str()));
        let known = catalog_properties(&catalog.connector_name);
        for key in keys(&catalog.file()) {
            assert!(
                known.contains(&key.as_str()),
                "{}: {key} is not documented for {}",
                catalog.name,
                catalog.connector_name
            );
            written.insert(key);
        }
    }
    for removed in REMOVED_PROPERTIES {
        assert!(
            !written.contains(*removed),
            "{removed} was removed from Trino"
        );
    }
    let typed = TYPED_CONNECTORS
        .iter()
        .flat_map(|connector| catalog_properties(connector).iter());
    for key in CONFIG_PROPERTIES
        .iter()
        .chain(typed)
        .chain(LDAP_AUTHENTICATOR_PROPERTIES)
    {
        assert!(
            written.contains(*key),
            "the fixture writes every listed key at least once, so the check saw each \
             file: {key} is missing"
        );
    }
    Ok(())
}

#[rstest]
#[case::one_worker(1, 1)]
#[case::nine_workers(9, 1)]
#[case::ten_workers(10, 1)]
#[case::twenty_five_workers(25, 2)]
#[case::a_hundred_workers(100, 10)]
fn pdbs_allow_one_coordinator_and_a_tenth_of_the_workers(
    #[case] workers: u16,
    #[case] expected_workers: i64,
) -> Result<(), ReconcileError> {
    let model = model(
        json!({"workers": {"roleGroups": {"a": {"replicas": workers - workers / 2}, "b": {"replicas": workers / 2}}}}),
        &[],
    )?;
    let objects = objects(&model)?;
    assert_eq!(
        named(&objects, "PodDisruptionBudget", "simple-trino-coordinator")["spec"]["maxUnavailable"],
        1
    );
    assert_eq!(
        named(&objects, "PodDisruptionBudget", "simple-trino-worker")["spec"]["maxUnavailable"],
        expected_workers
    );
    Ok(())
}

#[test]
fn a_disabled_pdb_is_not_built() -> Result<(), ReconcileError> {
    let workers = json!({
        "roleConfig": {"podDisruptionBudget": {"enabled": false}},
        "roleGroups": {"default": {"replicas": 2}}
    });
    let objects = objects(&model(json!({"workers": workers}), &[])?)?;
    assert!(
        !objects
            .iter()
            .any(|object| object["metadata"]["name"] == "simple-trino-worker")
    );
    Ok(())
}

fn template_hashes(model: &ValidatedCluster) -> Result<Vec<Value>, ReconcileError> {
    let objects = objects(model)?;
    Ok([
        "simple-trino-coordinator-default",
        "simple-trino-worker-default",
    ]
    .iter()
    .map(|name| {
        named(&objects, "StatefulSet", name)["spec"]["template"]["metadata"]["annotations"]
                ["strata.dev/config-hash"]
                .clone()
    })
    .collect())
}

#[test]
fn a_catalog_change_rolls_every_pod() -> Result<(), ReconcileError> {
    let tpch = catalog("tpch", json!({"connector": {"tpch": {}}}));
    let before = template_hashes(&model(json!({}), std::slice::from_ref(&tpch))?)?;
    let edited = catalog("tpch", json!({"connector": {"tpch": {"splitsPerNode": 4}}}));
    let added = catalog("memory", json!({"connector": {"memory": {}}}));
    for catalogs in [vec![], vec![edited], vec![tpch.clone(), added]] {
        let after = template_hashes(&model(json!({}), &catalogs)?)?;
        for (before, after) in before.iter().zip(&after) {
            assert_ne!(before, after, "{catalogs:?}");
        }
    }
    assert_eq!(
        before,
        template_hashes(&model(json!({}), &[tpch])?)?,
        "the same catalogs give the same hash"
    );
    Ok(())
}

#[test]
fn coordinator_and_workers_mount_the_same_catalogs() -> Result<(), ReconcileError> {
    let model = model(json!({}), &every_connector())?;
    let objects = objects(&model)?;
    let catalog_items = |name: &str| {
        named(&objects, "StatefulSet", name)["spec"]["template"]["spec"]["volumes"][0]["projected"]
            ["sources"][2]
            .clone()
    };
    let coordinator = catalog_items("simple-trino-coordinator-default");
    assert_eq!(coordinator["configMap"]["name"], "simple-trino-catalog");
    assert_eq!(
        coordinator["configMap"]["items"].as_array().map(Vec::len),
        Some(9)
    );
    assert_eq!(coordinator, catalog_items("simple-trino-worker-default"));
    Ok(())
}

#[test]
fn workers_drain_before_they_stop_and_the_coordinator_pauses() -> Result<(), ReconcileError> {
    let objects = objects(&model(json!({}), &[])?)?;
    let container = |name: &str| {
        named(&objects, "StatefulSet", name)["spec"]["template"]["spec"]["containers"][0].clone()
    };
    assert_eq!(
        container("simple-trino-worker-default")["lifecycle"]["preStop"]["exec"]["command"],
        json!([
            "bash",
            "/strata/scripts/graceful-shutdown.sh",
            "graceful-shutdown"
        ])
    );
    assert_eq!(
        container("simple-trino-coordinator-default")["lifecycle"]["preStop"]["exec"]["command"],
        json!(["sleep", "5"]),
        "the coordinator only pauses while it leaves the client Service"
    );
    Ok(())
}

#[test]
fn secrets_reach_the_pods_by_reference_and_the_shared_secret_is_never_built()
-> Result<(), ReconcileError> {
    let model = model(json!({}), &every_connector())?;
    let objects = objects(&model)?;
    let secret = named(&objects, "Secret", "simple-trino-internal-secret");
    assert!(
        secret.get("data").is_none() && secret.get("stringData").is_none(),
        "{secret}"
    );
    let env = &named(&objects, "StatefulSet", "simple-trino-worker-default")["spec"]["template"]["spec"]
        ["containers"][0]["env"];
    let by_name = |name: &str| {
        env.as_array()
            .and_then(|env| env.iter().find(|variable| variable["name"] == name))
            .cloned()
            .unwrap_or_default()
    };
    assert_eq!(
        by_name("TRINO_INTERNAL_SHARED_SECRET")["valueFrom"]["secretKeyRef"],
        json!({"name": "simple-trino-internal-secret", "key": "sharedSecret", "optional": false})
    );
    assert_eq!(
        by_name("CATALOG_POSTGRESQL_PASSWORD")["valueFrom"]["secretKeyRef"],
        json!({"name": "pg", "key": "password", "optional": false})
    );
    assert_eq!(
        by_name("CATALOG_HIVE_METASTORE_URI")["valueFrom"]["configMapKeyRef"],
        json!({"name": "hive", "key": "HIVE", "optional": false})
    );
    assert_eq!(
        by_name("STRATA_COMMA_LISTS")["value"],
        "CATALOG_HIVE_METASTORE_URI",
        "a published metastore list may hold one URI a line, which start.sh joins"
    );
    Ok(())
}

#[test]
fn the_pods_run_as_the_trino_user_with_a_read_only_root() -> Result<(), ReconcileError> {
    let objects = objects(&model(json!({}), &[])?)?;
    let pod =
        &named(&objects, "StatefulSet", "simple-trino-worker-default")["spec"]["template"]["spec"];
    assert_eq!(pod["securityContext"]["runAsUser"], 1000);
    assert_eq!(pod["securityContext"]["runAsGroup"], 1000);
    assert_eq!(
        pod["containers"][0]["securityContext"]["readOnlyRootFilesystem"],
        true
    );
    let mounts: Vec<(String, Value)> = pod["containers"][0]["volumeMounts"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|mount| {
            (
                mount["mountPath"].as_str().unwrap_or_default().to_owned(),
                mount.get("readOnly").cloned().unwrap_or(Value::Bool(false)),
            )
        })
        .collect();
    assert_eq!(
        mounts,
        [
            ("/etc/trino".to_owned(), Value::Bool(true)),
            ("/strata/scripts".to_owned(), Value::Bool(true)),
            ("/data/trino".to_owned(), Value::Bool(false)),
            ("/tmp".to_owned(), Value::Bool(false)),
            ("/strata/tls".to_owned(), Value::Bool(true)),
            ("/strata/keystore".to_owned(), Value::Bool(false)),
        ]
    );
    Ok(())
}

/// Every script the container runs (its command, probes and hook) is mounted where
/// they name it: the scripts volume projects chosen keys only.
#[rstest]
#[case::coordinator("simple-trino-coordinator-default")]
#[case::worker("simple-trino-worker-default")]
fn every_script_the_container_names_is_mounted(#[case] set: &str) -> Result<(), ReconcileError> {
    let objects = objects(&model(json!({}), &[])?)?;
    let pod = &named(&objects, "StatefulSet", set)["spec"]["template"]["spec"];
    let mounted: BTreeSet<String> = pod["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|volume| volume["name"] == "scripts")
        .flat_map(|volume| {
            volume["configMap"]["items"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|item| {
            item["path"]
                .as_str()
                .map(|path| format!("/strata/scripts/{path}"))
        })
        .collect();
    let container = pod["containers"][0].to_string();
    let named_scripts: BTreeSet<String> = container
        .split('"')
        .flat_map(|part| part.split_whitespace())
        .filter(|word| word.starts_with("/strata/scripts/"))
        .map(str::to_owned)
        .collect();
    assert!(!named_scripts.is_empty(), "{container}");
    let missing: Vec<&String> = named_scripts.difference(&mounted).collect();
    assert!(
        missing.is_empty(),
        "{missing:?} are not mounted: {mounted:?}"
    );
    Ok(())
}

mod monitoring;
mod security;

use k8s_openapi::api::apps::v1::StatefulSet;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use strata_operator::error::ReconcileError;

use super::*;
use crate::validate::tests::validated;
use strata_testing::manifests::named;

fn objects(config: Value) -> Result<Vec<Value>, ReconcileError> {
    Ok(cluster_objects(&validated(config)?)
        .into_objects(false)
        .map_err(|error| ReconcileError::operator_bug("Erase", error.to_string()))?
        .into_iter()
        .map(|object| object.into_value())
        .collect())
}

#[test]
fn every_object() -> Result<(), ReconcileError> {
    let objects = objects(json!({}))?;
    let names = strata_testing::manifests::object_names(&objects);
    let expected = [
        "Secret/simple-superset-secret-key",
        "ConfigMap/simple-superset-packages",
        "ConfigMap/simple-superset-node-default",
        "Service/simple-superset-node-default",
        "StatefulSet/simple-superset-node-default",
        "PodDisruptionBudget/simple-superset-node",
        "Service/simple-superset",
    ];
    assert_eq!(names, expected.map(str::to_owned).into_iter().collect());
    Ok(())
}

#[test]
fn the_secret_key_is_never_part_of_what_is_applied_or_rendered() -> Result<(), ReconcileError> {
    let objects = objects(json!({}))?;
    let secret = named(&objects, "Secret", "simple-superset-secret-key");
    assert!(
        secret.get("data").is_none() && secret.get("stringData").is_none(),
        "{secret}"
    );
    Ok(())
}

#[test]
fn the_packages_configmap_ships_the_driver_wheels() -> Result<(), ReconcileError> {
    let objects = objects(json!({}))?;
    let driver = named(&objects, "ConfigMap", "simple-superset-packages");
    let keys: Vec<&String> = driver["binaryData"]
        .as_object()
        .map(|data| data.keys().collect())
        .unwrap_or_default();
    assert_eq!(
        keys,
        [
            "asn1crypto-1.5.1-py2.py3-none-any.whl",
            "pg8000-1.31.6-py3-none-any.whl",
            "scramp-1.5.0-py3-none-any.whl"
        ]
    );
    let without = objects_without_driver()?;
    assert!(
        !without
            .iter()
            .any(|object| object["metadata"]["name"] == "simple-superset-driver")
    );
    Ok(())
}

fn objects_without_driver() -> Result<Vec<Value>, ReconcileError> {
    objects(json!({"metadataDatabase": {
        "postgresql": {"host": "h", "database": "d", "credentialsSecret": "superset-db"},
        "driver": "none"
    }}))
}

#[test]
fn gunicorn_is_the_process_and_every_secret_is_a_reference() -> Result<(), ReconcileError> {
    let objects = objects(json!({}))?;
    let set: StatefulSet = serde_json::from_value(
        named(&objects, "StatefulSet", "simple-superset-node-default").clone(),
    )
    .map_err(|error| ReconcileError::operator_bug("Parse", error.to_string()))?;
    let pod = set.spec.template.spec.unwrap_or_default();
    let web = &pod.containers[0];
    let command = web.command.clone().unwrap_or_default();
    assert_eq!(command.first().map(String::as_str), Some("gunicorn"));
    assert_eq!(
        command.last().map(String::as_str),
        Some("superset.app:create_app()")
    );
    assert!(!command.iter().any(|arg| arg.contains("statsd")));
    let init = pod.init_containers.unwrap_or_default();
    assert_eq!(init[0].name, "init-database");
    for container in [web, &init[0]] {
        for variable in container.env.iter().flatten() {
            let secret_like = ["SECRET", "PASSWORD", "USERNAME", "URI", "KEY"]
                .iter()
                .any(|word| variable.name.contains(word));
            if secret_like && variable.name != "SUPERSET_CONFIG_PATH" {
                assert!(
                    variable.value.is_none() && variable.value_from.is_some(),
                    "{} must come from a Secret",
                    variable.name
                );
            }
        }
    }
    let admin: Vec<&str> = init[0]
        .env
        .iter()
        .flatten()
        .map(|variable| variable.name.as_str())
        .filter(|name| name.starts_with("STRATA_ADMIN_"))
        .collect();
    assert_eq!(admin.len(), 5);
    assert_eq!(
        set.spec.pod_management_policy.as_deref(),
        Some("OrderedReady"),
        "init containers never migrate at once"
    );
    Ok(())
}

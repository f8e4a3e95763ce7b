use k8s_openapi::api::apps::v1::StatefulSet;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use strata_operator::error::ReconcileError;

use super::*;
use crate::validate::DEFAULT_CLUSTER_DOMAIN;
use crate::validate::tests::{cluster, validated};
use strata_testing::manifests::named;

fn objects(config: Value) -> Result<Vec<Value>, ReconcileError> {
    objects_of(&validated(config)?)
}

fn objects_of(cluster: &ValidatedCluster) -> Result<Vec<Value>, ReconcileError> {
    Ok(cluster_objects(cluster)
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
        "Service/simple-superset-node-default-metrics",
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
    let graceful = command
        .iter()
        .skip_while(|arg| *arg != "--graceful-timeout")
        .nth(1)
        .map(String::as_str);
    assert_eq!(
        (graceful, pod.termination_grace_period_seconds),
        (Some("110"), Some(120)),
        "the 5 s preStop pause, then gunicorn's graceful timeout, then 5 s for its exit"
    );
    let pre_stop = web
        .lifecycle
        .as_ref()
        .and_then(|lifecycle| lifecycle.pre_stop.as_ref())
        .and_then(|hook| hook.exec.as_ref())
        .and_then(|exec| exec.command.clone());
    assert_eq!(pre_stop, Some(vec!["sleep".to_owned(), "5".to_owned()]));
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

/// `superset_config.py` runs in the init container too (it migrates the database with
/// the same configuration), so a setting that reads an `envOverrides` variable needs
/// the variable there as well as in the web server.
#[test]
fn env_overrides_reach_the_init_container_as_well_as_the_web_server() -> Result<(), ReconcileError>
{
    let nodes = json!({
        "envOverrides": {"CACHE_REDIS_HOST": "redis"},
        "roleGroups": {"default": {"envOverrides": {"FEATURE_LEVEL": "2"}}}
    });
    let objects = objects_of(&ValidatedCluster::new(
        &cluster(json!({}), nodes),
        DEFAULT_CLUSTER_DOMAIN,
    )?)?;
    let set: StatefulSet = serde_json::from_value(
        named(&objects, "StatefulSet", "simple-superset-node-default").clone(),
    )
    .map_err(|error| ReconcileError::operator_bug("Parse", error.to_string()))?;
    let pod = set.spec.template.spec.unwrap_or_default();
    let init = pod.init_containers.unwrap_or_default();
    for container in [&pod.containers[0], &init[0]] {
        let overrides: Vec<(&str, Option<&str>)> = container
            .env
            .iter()
            .flatten()
            .filter(|variable| {
                ["CACHE_REDIS_HOST", "FEATURE_LEVEL"].contains(&variable.name.as_str())
            })
            .map(|variable| (variable.name.as_str(), variable.value.as_deref()))
            .collect();
        assert_eq!(
            overrides,
            [
                ("CACHE_REDIS_HOST", Some("redis")),
                ("FEATURE_LEVEL", Some("2"))
            ],
            "container {}",
            container.name
        );
    }
    Ok(())
}

/// The CA reaches both containers as `ca.crt` alone, and the hook ships next to
/// `superset_config.py`.
#[test]
fn the_database_ca_is_mounted_alone_and_the_tls_hook_ships() -> Result<(), ReconcileError> {
    let objects = objects(json!({"metadataDatabase": {"postgresql": {
        "host": "postgres.db.svc", "database": "superset", "credentialsSecret": "superset-db",
        "tls": {"caCertificate": {"secretName": "db-tls"}}
    }}}))?;
    let set = named(&objects, "StatefulSet", "simple-superset-node-default");
    let pod = &set["spec"]["template"]["spec"];
    let volume = pod["volumes"]
        .as_array()
        .and_then(|volumes| {
            volumes
                .iter()
                .find(|volume| volume["name"] == "metadata-database-ca")
        })
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        volume["secret"],
        json!({"secretName": "db-tls", "items": [{"key": "ca.crt", "path": "ca.crt"}]})
    );
    for container in [&pod["initContainers"][0], &pod["containers"][0]] {
        let mounted = container["volumeMounts"].as_array().is_some_and(|mounts| {
            mounts.iter().any(|mount| {
                mount["name"] == "metadata-database-ca"
                    && mount["mountPath"] == "/strata/metadata-database-tls"
                    && mount["readOnly"] == true
            })
        });
        assert!(mounted, "{container}");
    }
    let config = named(&objects, "ConfigMap", "simple-superset-node-default");
    let hook = config["data"]["strata_database_tls.py"]
        .as_str()
        .unwrap_or_default();
    assert!(hook.contains("def secure_metadata_database("), "{config}");
    Ok(())
}

/// Finding 23: the web server, which binds to LDAP at each login, mounts the LDAP
/// server's CA alone and is told where it is.
#[test]
fn the_ldap_ca_is_mounted_alone_where_the_config_reads_it() -> Result<(), ReconcileError> {
    let mut with_ldap = cluster(
        json!({"authentication": {"ldap": {
            "serverUri": "ldaps://ldap.example.com", "caCertificate": {"secretName": "ldap-tls"},
            "bindDn": "cn=b", "bindPasswordSecret": "b", "searchBase": "dc=x"
        }}}),
        Value::Null,
    );
    with_ldap.spec.image.custom = Some("registry.example.com/superset-ldap:6.1.0".to_owned());
    let objects = objects_of(&ValidatedCluster::new(&with_ldap, DEFAULT_CLUSTER_DOMAIN)?)?;
    let pod =
        &named(&objects, "StatefulSet", "simple-superset-node-default")["spec"]["template"]["spec"];
    let volume = pod["volumes"]
        .as_array()
        .and_then(|volumes| volumes.iter().find(|volume| volume["name"] == "ldap-ca"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        volume["secret"],
        json!({"secretName": "ldap-tls", "items": [{"key": "ca.crt", "path": "ca.crt"}]}),
        "only ca.crt, never the Secret's key"
    );
    let web = &pod["containers"][0];
    assert!(
        web["volumeMounts"]
            .as_array()
            .is_some_and(|mounts| mounts.iter().any(|mount| {
                mount["name"] == "ldap-ca"
                    && mount["mountPath"] == "/strata/ldap-tls"
                    && mount["readOnly"] == true
            })),
        "{web}"
    );
    assert!(
        web["env"]
            .as_array()
            .is_some_and(|env| env.iter().any(|variable| {
                variable["name"] == "STRATA_LDAP_CA_FILE"
                    && variable["value"] == "/strata/ldap-tls/ca.crt"
            })),
        "{web}"
    );
    Ok(())
}

/// The init container learns the connections and their credentials; both containers
/// mount the discovery ConfigMap, whose CA the web server's Trino client reads.
#[test]
fn trino_connections_reach_the_init_container_and_mount_their_discovery()
-> Result<(), ReconcileError> {
    let mut with_trino = cluster(
        json!({"trinoConnections": [{"name": "Trino", "discoveryConfigMap": "simple-trino",
            "catalog": "tpch", "credentialsSecret": "superset-trino"}]}),
        Value::Null,
    );
    with_trino.spec.image.custom = Some("registry.example.com/superset-trino:6.1.0".to_owned());
    let objects = objects_of(&ValidatedCluster::new(&with_trino, DEFAULT_CLUSTER_DOMAIN)?)?;
    let set = named(&objects, "StatefulSet", "simple-superset-node-default");
    let pod = &set["spec"]["template"]["spec"];
    assert!(
        pod["volumes"]
            .as_array()
            .is_some_and(|volumes| volumes.contains(
                &json!({"name": "trino-discovery-0", "configMap": {"name": "simple-trino"}})
            )),
        "{pod}"
    );
    let init = &pod["initContainers"][0];
    let env = init["env"].as_array().cloned().unwrap_or_default();
    let connections = env
        .iter()
        .find(|variable| variable["name"] == "STRATA_TRINO_CONNECTIONS")
        .and_then(|variable| variable["value"].as_str())
        .map(serde_json::from_str::<Value>)
        .transpose()
        .map_err(|error| ReconcileError::operator_bug("Json", error.to_string()))?;
    assert_eq!(
        connections,
        Some(
            json!([{"name": "Trino", "directory": "/strata/trino/simple-trino", "catalog": "tpch"}])
        )
    );
    assert!(
        env.contains(
            &json!({"name": "STRATA_TRINO_PASSWORD_0", "valueFrom": {"secretKeyRef":
            {"name": "superset-trino", "key": "password", "optional": false}}})
        ),
        "{init}"
    );
    for container in [init, &pod["containers"][0]] {
        assert!(
            container["volumeMounts"].as_array().is_some_and(|mounts| mounts.contains(
                &json!({"name": "trino-discovery-0", "mountPath": "/strata/trino/simple-trino", "readOnly": true})
            )),
            "{container}"
        );
    }
    let web_env = pod["containers"][0]["env"].to_string();
    assert!(!web_env.contains("STRATA_TRINO"), "{web_env}");
    Ok(())
}

#[test]
fn gunicorn_sends_its_statsd_metrics_to_the_exporter_on_the_pods_loopback()
-> Result<(), ReconcileError> {
    let objects = objects(json!({}))?;
    let pod =
        &named(&objects, "StatefulSet", "simple-superset-node-default")["spec"]["template"]["spec"];
    let gunicorn = pod["containers"][0]["command"].to_string();
    assert!(
        gunicorn.contains(r#""--statsd-host","127.0.0.1:9125","--statsd-prefix","superset","superset.app:create_app()""#),
        "{gunicorn}"
    );
    let exporter = &pod["containers"][1];
    assert_eq!(exporter["name"], "statsd-exporter");
    assert_eq!(
        exporter["args"],
        json!([
            "--statsd.listen-udp=127.0.0.1:9125",
            "--statsd.listen-tcp=",
            "--web.listen-address=:9102",
            "--statsd.mapping-config=/etc/statsd-exporter/statsd-mapping.yaml"
        ])
    );
    assert_eq!(
        exporter["securityContext"]["allowPrivilegeEscalation"],
        false
    );
    let config = named(&objects, "ConfigMap", "simple-superset-node-default");
    assert!(
        config["data"]["statsd-mapping.yaml"]
            .as_str()
            .is_some_and(|mapping| mapping.contains("superset_gunicorn_responses_total")),
        "{config}"
    );
    let service = named(&objects, "Service", "simple-superset-node-default-metrics");
    assert_eq!(
        service["metadata"]["annotations"]["prometheus.io/port"],
        "9102"
    );
    Ok(())
}

#[test]
fn the_ingress_routes_its_host_to_the_client_service() -> Result<(), ReconcileError> {
    assert!(
        !strata_testing::manifests::object_names(&objects(json!({}))?)
            .contains("Ingress/simple-superset"),
        "no Ingress unless asked for"
    );
    let objects =
        objects(json!({"ingress": {"host": "superset.example.com", "tlsSecret": "superset-tls"}}))?;
    let ingress = named(&objects, "Ingress", "simple-superset");
    assert_eq!(
        ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"],
        json!({"service": {"name": "simple-superset", "port": {"name": "http"}}})
    );
    assert_eq!(ingress["spec"]["tls"][0]["secretName"], "superset-tls");
    assert_eq!(
        ingress["metadata"]["labels"]["app.kubernetes.io/instance"],
        "simple-superset"
    );
    Ok(())
}

mod celery;

//! The objects of a cluster with `clusterConfig.tls` on: what changes, and that nothing
//! else does.

use std::collections::BTreeMap;

use pretty_assertions::assert_eq;
use rstest::rstest;
use serde_json::{Value, json};

use super::*;
use crate::validate::tests::validated;

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn with_tls(client_authentication: Option<&str>) -> Value {
    with_tls_from(Some("zk-tls"), client_authentication)
}

/// TLS with the user's Secret `secret_name`, or the operator's certificates.
fn with_tls_from(secret_name: Option<&str>, client_authentication: Option<&str>) -> Value {
    let mut tls = json!({"enabled": true});
    if let Some(name) = secret_name {
        tls["secretName"] = json!(name);
    }
    if let Some(value) = client_authentication {
        tls["clientAuthentication"] = json!(value);
    }
    json!({"clusterConfig": {"tls": tls}, "servers": {"roleGroups": {"default": {"replicas": 3}}}})
}

fn zoo_cfg(spec: Value) -> Result<BTreeMap<String, String>, Box<dyn std::error::Error>> {
    let cluster = validated(spec)?;
    let group = cluster.servers.groups.first().ok_or("no role group")?;
    Ok(group
        .product
        .zoo_cfg
        .to_properties()
        .lines()
        .filter_map(|line| line.split_once('='))
        .map(|(key, value)| (key.to_owned(), value.to_owned()))
        .collect())
}

/// The user's Secret has one CA; the operator's certificates keep the client CA apart,
/// which the quorum does not trust (a ZNode's certificate is no peer's).
#[rstest]
#[case::clients_without_certificates(Some("zk-tls"), None, "none", "/tls/ca.crt")]
#[case::mutual_tls(Some("zk-tls"), Some("Required"), "need", "/tls/ca.crt")]
#[case::operator_certificates(None, None, "none", "/tls/client-ca.crt")]
#[case::operator_certificates_and_mutual_tls(None, Some("Required"), "need", "/tls/client-ca.crt")]
fn zoo_cfg_serves_tls_to_clients_and_the_quorum(
    #[case] secret_name: Option<&str>,
    #[case] client_authentication: Option<&str>,
    #[case] client_auth: &str,
    #[case] client_truststore: &str,
) -> TestResult {
    let cfg = zoo_cfg(with_tls_from(secret_name, client_authentication))?;
    for (key, value) in [
        (
            "serverCnxnFactory",
            "org.apache.zookeeper.server.NettyServerCnxnFactory",
        ),
        ("secureClientPort", "2282"),
        ("admin.enableServer", "true"),
        ("admin.serverAddress", "127.0.0.1"),
        ("admin.serverPort", "8080"),
        ("admin.snapshot.enabled", "false"),
        ("admin.restore.enabled", "false"),
        ("ssl.clientAuth", client_auth),
        ("ssl.enabledProtocols", "TLSv1.3,TLSv1.2"),
        (
            "ssl.ciphersuites",
            "TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384,TLS_CHACHA20_POLY1305_SHA256,\
             TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,\
             TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,\
             TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        ),
        ("sslQuorum", "true"),
        ("ssl.keyStore.location", "/keystore/keystore.pem"),
        ("ssl.keyStore.type", "PEM"),
        ("ssl.trustStore.location", client_truststore),
        ("ssl.trustStore.type", "PEM"),
        ("ssl.quorum.keyStore.location", "/keystore/keystore.pem"),
        ("ssl.quorum.keyStore.type", "PEM"),
        ("ssl.quorum.trustStore.location", "/tls/ca.crt"),
        ("ssl.quorum.trustStore.type", "PEM"),
    ] {
        assert_eq!(cfg.get(key).map(String::as_str), Some(value), "{key}");
    }
    assert_eq!(
        cfg.get("server.1").map(String::as_str),
        Some(
            "simple-zk-server-default-0.simple-zk-server-default.data.svc.cluster.local\
             :2888:3888"
        ),
        "no client address in the server lines: ZooKeeper publishes them to clients"
    );
    assert!(
        !cfg.keys().any(|key| key.contains("password")),
        "a PEM keystore has no password: {cfg:?}"
    );
    for key in ["clientPort", "clientPortAddress"] {
        assert_eq!(
            cfg.get(key),
            None,
            "no plaintext client port, not even on loopback: a port-forward reaches it"
        );
    }
    Ok(())
}

#[test]
fn without_tls_zoo_cfg_has_no_tls_key_and_clients_use_2181() -> TestResult {
    let cfg = zoo_cfg(json!({
        "clusterConfig": {"tls": {"enabled": false}},
        "servers": {"roleGroups": {"default": {"replicas": 3}}}
    }))?;
    assert!(
        !cfg.keys().any(|key| key.starts_with("ssl")
            || ["secureClientPort", "serverCnxnFactory", "clientPortAddress"]
                .contains(&key.as_str())),
        "{cfg:?}"
    );
    assert!(
        cfg.get("server.1")
            .is_some_and(|line| line.ends_with(";2181"))
    );
    assert_eq!(cfg.get("clientPort").map(String::as_str), Some("2181"));
    assert_eq!(
        cfg.get("admin.enableServer").map(String::as_str),
        Some("false")
    );
    Ok(())
}

#[test]
fn pods_build_their_keystore_from_the_secret_and_expose_only_the_secure_port() -> TestResult {
    let objects = build_cluster(&validated(with_tls(None))?);
    let group = objects.role_groups.first().ok_or("no role group")?;
    let pod = serde_json::to_value(&group.stateful_set.spec.template)?["spec"].clone();

    let init = &pod["initContainers"][1];
    assert_eq!(init["name"], "tls-keystore");
    assert_eq!(
        init["command"][2],
        "umask 077 && cat /tls/tls.key /tls/tls.crt > /keystore/keystore.pem"
    );
    let volumes: BTreeMap<String, Value> = pod["volumes"]
        .as_array()
        .ok_or("no volumes")?
        .iter()
        .map(|volume| {
            (
                volume["name"].as_str().unwrap_or_default().to_owned(),
                volume.clone(),
            )
        })
        .collect();
    assert_eq!(
        volumes["tls"]["secret"],
        json!({"secretName": "zk-tls", "defaultMode": 0o440})
    );
    assert_eq!(volumes["keystore"]["emptyDir"]["medium"], "Memory");

    let server = &pod["containers"][0];
    let mounts: Vec<(&str, bool)> = server["volumeMounts"]
        .as_array()
        .ok_or("no mounts")?
        .iter()
        .filter(|mount| ["tls", "keystore"].contains(&mount["name"].as_str().unwrap_or_default()))
        .map(|mount| {
            (
                mount["mountPath"].as_str().unwrap_or_default(),
                mount["readOnly"] == true,
            )
        })
        .collect();
    assert_eq!(mounts, [("/tls", true), ("/keystore", true)]);

    let port_names = |value: &Value| -> Vec<String> {
        value
            .as_array()
            .into_iter()
            .flatten()
            .map(|port| port["name"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    assert_eq!(
        port_names(&server["ports"]),
        ["client-tls", "quorum", "leader-election", "metrics"]
    );
    let client_service = serde_json::to_value(&objects.client_service)?;
    assert_eq!(client_service["spec"]["ports"][0]["port"], 2282);
    assert_eq!(port_names(&client_service["spec"]["ports"]), ["client-tls"]);
    let headless = serde_json::to_value(&group.headless_service)?;
    assert_eq!(
        port_names(&headless["spec"]["ports"]),
        ["client-tls", "quorum", "leader-election"]
    );
    // The probes ask the admin server on loopback; nothing asks port 2181.
    for probe in ["startupProbe", "livenessProbe", "readinessProbe"] {
        let script = server[probe]["exec"]["command"][2]
            .as_str()
            .unwrap_or_default();
        assert!(
            script.contains("/dev/tcp/127.0.0.1/8080") && !script.contains("2181"),
            "{probe}: {script}"
        );
    }
    Ok(())
}

#[test]
fn discovery_names_the_secure_port_and_says_tls() -> TestResult {
    let objects = build_cluster(&validated(with_tls(None))?);
    let data = objects.discovery_config_map.data.ok_or("no data")?;
    assert_eq!(
        data,
        BTreeMap::from(
            [
                ("ZOOKEEPER", "simple-zk.data.svc.cluster.local:2282"),
                ("ZOOKEEPER_HOSTS", "simple-zk.data.svc.cluster.local:2282"),
                ("ZOOKEEPER_CHROOT", "/"),
                ("ZOOKEEPER_CLIENT_PORT", "2282"),
                ("ZOOKEEPER_TLS", "true"),
                ("ZOOKEEPER_CLIENT_AUTHENTICATION", "None"),
            ]
            .map(|(key, value)| (key.to_owned(), value.to_owned()))
        )
    );
    Ok(())
}

#[test]
fn without_tls_users_may_set_the_tls_keys_their_own_way() -> TestResult {
    let cfg = zoo_cfg(
        json!({"clusterConfig": {"tls": {"enabled": false}}, "servers": {
            "configOverrides": {"zoo.cfg": {
                "ssl.clientAuth": "want",
                "serverCnxnFactory": "org.apache.zookeeper.server.NettyServerCnxnFactory",
            }},
            "roleGroups": {"default": {}},
        }}),
    )?;
    assert_eq!(cfg.get("ssl.clientAuth").map(String::as_str), Some("want"));
    assert_eq!(
        cfg.get("serverCnxnFactory").map(String::as_str),
        Some("org.apache.zookeeper.server.NettyServerCnxnFactory")
    );
    Ok(())
}

//! TLS, authentication and authorization as the built objects show them.

use pretty_assertions::assert_eq;
use rstest::rstest;
use serde_json::{Value, json};
use strata_operator::error::ReconcileError;
use strata_testing::manifests::named;

use super::{CA_PEM, inputs, model, objects, objects_with};
use crate::build::BuildInputs;
use crate::config::password_file::password_file;
use crate::config::server;

const AUTHENTICATED: &str =
    r#"{"clusterConfig": {"authentication": [{"password": {"secretName": "users"}}]}}"#;

fn patch(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_default()
}

fn config_properties(objects: &[Value], group: &str) -> String {
    named(objects, "ConfigMap", group)["data"][server::CONFIG_PROPERTIES]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn container(objects: &[Value], set: &str) -> Value {
    named(objects, "StatefulSet", set)["spec"]["template"]["spec"]["containers"][0].clone()
}

fn env_value(container: &Value, name: &str) -> Value {
    container["env"]
        .as_array()
        .and_then(|env| env.iter().find(|variable| variable["name"] == name))
        .map(|variable| variable["value"].clone())
        .unwrap_or_default()
}

#[test]
fn tls_is_on_by_default_with_https_only_and_internal_tls_by_fqdn() -> Result<(), ReconcileError> {
    let objects = objects(&model(json!({}), &[])?)?;
    let config = config_properties(&objects, "simple-trino-worker-default");
    for line in [
        "http-server.http.enabled=false",
        "http-server.https.enabled=true",
        "http-server.https.port=8443",
        "http-server.https.keystore.path=/strata/keystore/server.pem",
        "internal-communication.https.required=true",
        "internal-communication.https.truststore.path=/strata/tls/ca.crt",
        "discovery.uri=https://simple-trino-coordinator-default.default.svc.cluster.local:8443",
    ] {
        assert!(
            config.lines().any(|written| written == line),
            "{line} in {config}"
        );
    }
    assert!(!config.contains("http-server.http.port"), "{config}");
    let node = named(&objects, "ConfigMap", "simple-trino-worker-default")["data"]
        [server::NODE_PROPERTIES]
        .clone();
    assert!(
        node.as_str()
            .unwrap_or_default()
            .contains("node.internal-address-source=FQDN"),
        "{node}"
    );
    let service = named(&objects, "Service", "simple-trino-coordinator");
    assert_eq!(service["spec"]["ports"][0]["port"], 8443);
    assert_eq!(service["spec"]["ports"][0]["name"], "https");
    let worker = container(&objects, "simple-trino-worker-default");
    assert_eq!(
        env_value(&worker, "STRATA_TRINO_URL"),
        "https://$(POD_NAME).simple-trino-worker-default.default.svc.cluster.local:8443",
        "the probe and the hook check the certificate for the pod's FQDN"
    );
    let volumes = &named(&objects, "StatefulSet", "simple-trino-worker-default")["spec"]["template"]
        ["spec"]["volumes"];
    let by_name = |name: &str| {
        volumes
            .as_array()
            .and_then(|volumes| volumes.iter().find(|volume| volume["name"] == name))
            .cloned()
            .unwrap_or_default()
    };
    assert_eq!(
        by_name("tls")["secret"]["secretName"],
        "simple-trino-worker-default-tls"
    );
    assert_eq!(by_name("keystore")["emptyDir"]["medium"], "Memory");
    Ok(())
}

#[test]
fn without_tls_the_nodes_serve_plain_http_and_the_status_warns() -> Result<(), ReconcileError> {
    let model = model(json!({"clusterConfig": {"tls": {"enabled": false}}}), &[])?;
    assert!(
        model
            .warnings
            .iter()
            .any(|warning| warning.reason.as_str() == "TlsDisabled")
    );
    let objects = objects(&model)?;
    let config = config_properties(&objects, "simple-trino-coordinator-default");
    assert!(config.contains("http-server.http.port=8080"), "{config}");
    assert!(!config.contains("https"), "{config}");
    let discovery = &named(&objects, "ConfigMap", "simple-trino")["data"];
    assert_eq!(
        discovery,
        &json!({
            "TRINO": "http://simple-trino-coordinator.default.svc.cluster.local:8080",
            "TRINO_HOST": "simple-trino-coordinator.default.svc.cluster.local",
            "TRINO_PORT": "8080",
            "TRINO_TLS": "false"
        })
    );
    Ok(())
}

#[test]
fn the_discovery_config_map_gives_a_client_the_url_and_the_ca() -> Result<(), ReconcileError> {
    let objects = objects(&model(json!({}), &[])?)?;
    let discovery = &named(&objects, "ConfigMap", "simple-trino")["data"];
    assert_eq!(
        discovery,
        &json!({
            "TRINO": "https://simple-trino-coordinator.default.svc.cluster.local:8443",
            "TRINO_HOST": "simple-trino-coordinator.default.svc.cluster.local",
            "TRINO_PORT": "8443",
            "TRINO_TLS": "true",
            "ca.crt": CA_PEM
        })
    );
    Ok(())
}

#[test]
fn authentication_needs_every_node_to_check_passwords_with_the_shutdown_user_first()
-> Result<(), ReconcileError> {
    let model = model(patch(AUTHENTICATED), &[])?;
    let users = std::collections::BTreeMap::from([("alice".to_owned(), b"secret".to_vec())]);
    let file = password_file(&users, &server::OPERATOR_USERS)
        .map_err(|problem| ReconcileError::operator_bug("PasswordFile", problem.to_string()))?;
    let mut with_users: BuildInputs = inputs();
    with_users.security.password_file = Some((file.clone(), "uid/7".to_owned()));
    let objects = objects_with(&model, &with_users)?;
    for group in [
        "simple-trino-coordinator-default",
        "simple-trino-worker-default",
    ] {
        let config = config_properties(&objects, group);
        assert!(
            config.contains("http-server.authentication.type=PASSWORD"),
            "{config}"
        );
        assert!(
            config.contains(
                "password-authenticator.config-files=/etc/trino/shutdown-authenticator.properties,\
                 /etc/trino/metrics-authenticator.properties,\
                 /etc/trino/password-authenticator.properties"
            ),
            "{config}"
        );
    }
    let worker = container(&objects, "simple-trino-worker-default");
    assert_eq!(
        worker["lifecycle"]["preStop"]["exec"]["command"],
        json!([
            "bash",
            "/strata/scripts/graceful-shutdown.sh",
            "graceful-shutdown",
            "/strata/graceful-shutdown/password"
        ])
    );
    // The shutdown user's Secret is made once in the cluster; the users' file is sent
    // sealed: neither shows a value, and the users' Secret shows the version it was
    // made from.
    let shutdown = named(&objects, "Secret", "simple-trino-graceful-shutdown");
    assert!(shutdown.get("data").is_none() && shutdown.get("stringData").is_none());
    let users = named(&objects, "Secret", "simple-trino-password-db");
    assert!(users.get("data").is_none(), "{users}");
    assert_eq!(
        users["metadata"]["annotations"]["trino.strata.dev/users-secret-version"],
        "uid/7"
    );
    let everything = serde_json::to_string(&objects).unwrap_or_default();
    assert!(
        !everything.contains("$2y$"),
        "a hash was built into a shown object"
    );
    Ok(())
}

#[rstest]
#[case::authentication_without_tls(
    r#"{"clusterConfig": {"tls": {"enabled": false}, "authentication": [{"password": {"secretName": "users"}}]}}"#,
    "AuthenticationNeedsTls"
)]
#[case::empty_users_secret(
    r#"{"clusterConfig": {"authentication": [{"password": {"secretName": ""}}]}}"#,
    "InvalidAuthentication"
)]
#[case::two_password_authentications(
    r#"{"clusterConfig": {"authentication": [{"password": {"secretName": "a"}}, {"password": {"secretName": "b"}}]}}"#,
    "InvalidAuthentication"
)]
#[case::empty_rules_config_map(
    r#"{"clusterConfig": {"authorization": {"rulesConfigMap": ""}}}"#,
    "InvalidAuthorization"
)]
#[case::empty_tls_secret(
    r#"{"clusterConfig": {"tls": {"secretName": ""}}}"#,
    "TlsSecretMissing"
)]
#[case::oauth2_issuer_in_clear_text(
    r#"{"clusterConfig": {"authentication": [{"oauth2": {"issuer": "http://idp/realm", "clientCredentialsSecret": "c"}}]}}"#,
    "InvalidAuthentication"
)]
#[case::oauth2_without_client(
    r#"{"clusterConfig": {"authentication": [{"oauth2": {"issuer": "https://idp/realm", "clientCredentialsSecret": ""}}]}}"#,
    "InvalidAuthentication"
)]
#[case::ldap_in_clear_text(
    r#"{"clusterConfig": {"authentication": [{"ldap": {"url": "ldap://ldap:389", "userBindPattern": "uid=${USER},dc=x"}}]}}"#,
    "InsecureLdap"
)]
#[case::ldap_without_a_scheme(
    r#"{"clusterConfig": {"authentication": [{"ldap": {"url": "ldap.example.org", "userBindPattern": "uid=${USER},dc=x"}}]}}"#,
    "InvalidAuthentication"
)]
#[case::ldap_pattern_without_the_user(
    r#"{"clusterConfig": {"authentication": [{"ldap": {"url": "ldaps://ldap:636", "userBindPattern": "uid=admin,dc=x"}}]}}"#,
    "InvalidAuthentication"
)]
#[case::ldap_half_a_group_search(
    r#"{"clusterConfig": {"authentication": [{"ldap": {"url": "ldaps://ldap:636", "userBindPattern": "uid=${USER},dc=x", "userBaseDn": "dc=x"}}]}}"#,
    "InvalidAuthentication"
)]
fn invalid_security_settings_are_refused(#[case] text: &str, #[case] reason: &str) {
    let error = model(patch(text), &[]).expect_err("refused");
    assert_eq!(error.reason(), reason, "{error}");
}

#[test]
fn the_rules_are_mounted_from_their_own_config_map_outside_the_pod_hash()
-> Result<(), ReconcileError> {
    let model = model(json!({}), &[])?;
    let hashes = |rules: &str| -> Result<Value, ReconcileError> {
        let mut inputs = inputs();
        inputs.security.rules = Some(rules.to_owned());
        let objects = objects_with(&model, &inputs)?;
        Ok(named(&objects, "StatefulSet", "simple-trino-worker-default")["spec"]["template"]
            ["metadata"]["annotations"]
            .clone())
    };
    assert_eq!(hashes("{}")?, hashes(r#"{"catalogs": []}"#)?);
    let objects = objects(&model)?;
    let source = &named(&objects, "StatefulSet", "simple-trino-worker-default")["spec"]["template"]
        ["spec"]["volumes"][0]["projected"]["sources"][1]["configMap"];
    assert_eq!(
        source,
        &json!({
            "name": "simple-trino-access-control",
            "items": [{"key": "rules.json", "path": "access-control-rules.json"}]
        })
    );
    Ok(())
}

#[test]
fn switching_tls_restarts_every_pod_together() -> Result<(), ReconcileError> {
    let together = |patch: Value| -> Result<Value, ReconcileError> {
        let objects = objects(&model(patch, &[])?)?;
        Ok(named(&objects, "StatefulSet", "simple-trino-worker-default")["spec"]["template"]
            ["metadata"]["annotations"]["strata.dev/restart-together"]
            .clone())
    };
    assert_ne!(
        together(json!({}))?,
        together(json!({"clusterConfig": {"tls": {"enabled": false}}}))?
    );
    Ok(())
}

#[test]
fn ldap_comes_after_the_shutdown_user_and_trusts_the_users_ca() -> Result<(), ReconcileError> {
    let model = model(
        patch(
            r#"{"clusterConfig": {"authentication": [
                {"ldap": {"url": "ldaps://openldap:636", "userBindPattern": "uid=${USER},ou=people,dc=example,dc=org",
                          "userBaseDn": "ou=people,dc=example,dc=org", "groupAuthPattern": "(uid=${USER})",
                          "caConfigMap": "ldap-ca"}},
                {"password": {"secretName": "users"}}
            ]}}"#,
        ),
        &[],
    )?;
    let objects = objects(&model)?;
    let data = &named(&objects, "ConfigMap", "simple-trino-worker-default")["data"];
    let config = data[server::CONFIG_PROPERTIES].as_str().unwrap_or_default();
    assert!(
        config.contains(
            "password-authenticator.config-files=/etc/trino/shutdown-authenticator.properties,\
             /etc/trino/metrics-authenticator.properties,\
             /etc/trino/ldap-authenticator.properties,/etc/trino/password-authenticator.properties"
        ),
        "the user's authenticators in the spec's order, after the operator's: {config}"
    );
    let ldap = data["ldap-authenticator.properties"]
        .as_str()
        .unwrap_or_default();
    for line in [
        "password-authenticator.name=ldap",
        "ldap.url=ldaps://openldap:636",
        "ldap.user-bind-pattern=uid=${USER},ou=people,dc=example,dc=org",
        "ldap.user-base-dn=ou=people,dc=example,dc=org",
        "ldap.group-auth-pattern=(uid=${USER})",
        "ldap.ssl.truststore.path=/strata/ldap-ca/ca.crt",
    ] {
        assert!(
            ldap.lines().any(|written| written == line),
            "{line} in {ldap}"
        );
    }
    assert!(!ldap.contains("allow-insecure"), "{ldap}");
    let pod =
        &named(&objects, "StatefulSet", "simple-trino-worker-default")["spec"]["template"]["spec"];
    assert!(
        pod["volumes"].as_array().is_some_and(|volumes| volumes
            .iter()
            .any(|volume| volume["name"] == "ldap-ca" && volume["configMap"]["name"] == "ldap-ca")),
        "{pod}"
    );
    Ok(())
}

#[test]
fn oauth2_reads_its_client_from_the_secret_and_trusts_the_providers_ca()
-> Result<(), ReconcileError> {
    let model = model(
        patch(
            r#"{"clusterConfig": {"authentication": [{"oauth2": {
                "issuer": "https://idp.example.org/realms/data", "clientCredentialsSecret": "trino-client",
                "principalField": "preferred_username", "scopes": ["openid", "profile"],
                "additionalAudiences": ["data-api", "account"],
                "caConfigMap": "idp-ca"}}]}}"#,
        ),
        &[],
    )?;
    let objects = objects(&model)?;
    let config = config_properties(&objects, "simple-trino-coordinator-default");
    for line in [
        "http-server.authentication.type=PASSWORD,OAUTH2",
        "password-authenticator.config-files=/etc/trino/shutdown-authenticator.properties,/etc/trino/metrics-authenticator.properties",
        "http-server.authentication.oauth2.issuer=https://idp.example.org/realms/data",
        "http-server.authentication.oauth2.client-id=${ENV:STRATA_OAUTH2_CLIENT_ID}",
        "http-server.authentication.oauth2.client-secret=${ENV:STRATA_OAUTH2_CLIENT_SECRET}",
        "http-server.authentication.oauth2.principal-field=preferred_username",
        "http-server.authentication.oauth2.scopes=openid,profile",
        "http-server.authentication.oauth2.oidc.use-userinfo-endpoint=false",
        "http-server.authentication.oauth2.additional-audiences=data-api,account",
        "oauth2-jwk.http-client.trust-store-path=/strata/oauth2-ca/ca.crt",
        "web-ui.authentication.type=oauth2",
    ] {
        assert!(
            config.lines().any(|written| written == line),
            "{line} in {config}"
        );
    }
    let worker = config_properties(&objects, "simple-trino-worker-default");
    assert!(
        !worker.contains("web-ui."),
        "a worker serves no web UI and refuses the key: {worker}"
    );
    let container = container(&objects, "simple-trino-coordinator-default");
    let secret_of = |name: &str| {
        container["env"]
            .as_array()
            .and_then(|env| env.iter().find(|variable| variable["name"] == name))
            .map(|variable| variable["valueFrom"]["secretKeyRef"].clone())
            .unwrap_or_default()
    };
    assert_eq!(
        secret_of("STRATA_OAUTH2_CLIENT_SECRET"),
        json!({"name": "trino-client", "key": "clientSecret", "optional": false})
    );
    assert_eq!(
        secret_of("STRATA_OAUTH2_CLIENT_ID"),
        json!({"name": "trino-client", "key": "clientId", "optional": false})
    );
    Ok(())
}

//! The objects of TLS, authentication and authorization, and the discovery ConfigMap.
//!
//! | object | name | when |
//! | --- | --- | --- |
//! | Secret with the shutdown user's password and password file (created once, never rendered with values) | `<trino>-graceful-shutdown` | authentication |
//! | Secret with the metrics user's name, password and password file (created once, never rendered with values) | `<trino>-metrics` | always |
//! | Secret with the users' password file (sealed: its hashes never rendered) | `<trino>-password-db` | password authentication |
//! | ConfigMap with the access control rules | `<trino>-access-control` | always |
//! | discovery ConfigMap: the coordinator's URL, the TLS flag and the CA | `<trino>` | always |

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use strata_model::build::object_meta;
use strata_model::exposure::ExternalAddress;
use strata_operator::apply::{DesiredObjects, random_token};

use super::certificates::coordinator_service_names;
use super::service::server_port;
use crate::config::access_control::RULES_KEY;
use crate::config::password_file::{PasswordFile, hash_password};
use crate::config::security::PASSWORD_DB_KEY;
use crate::config::server::{METRICS_USER, SHUTDOWN_USER};
use crate::validate::ValidatedCluster;

/// The key of the shutdown user's password, which the preStop hook reads.
pub const SHUTDOWN_PASSWORD_KEY: &str = "password";
/// Random bytes in the password of each of the operator's users (64 hex characters).
pub const OPERATOR_PASSWORD_BYTES: usize = 32;
/// The keys of the metrics user's Secret, which a ServiceMonitor's `basicAuth` reads.
pub mod metrics_credentials {
    /// The user name, `strata-metrics`.
    pub const USERNAME: &str = "username";
    /// Its password, where the cluster authenticates.
    pub const PASSWORD: &str = "password";
    /// An empty value: the password to send where the cluster does not authenticate,
    /// since Trino then refuses any password (`Password not allowed for insecure
    /// authentication`).
    pub const NO_PASSWORD: &str = "noPassword";
}
/// Annotation on the password file Secret: the version of the users Secret it was made
/// from, which stands in for the file's hashes when the operator compares it.
pub const USERS_VERSION_ANNOTATION: &str = "trino.strata.dev/users-secret-version";

/// What the certificate and security steps read or made in the cluster: `render`
/// has none of it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SecurityMaterial {
    /// The CA clients trust, for the discovery ConfigMap.
    pub ca_pem: Option<String>,
    /// The access control rules; `None` while the user's ConfigMap is unknown (in
    /// `render`).
    pub rules: Option<String>,
    /// The users' password file and the version of the users Secret it came from.
    pub password_file: Option<(PasswordFile, String)>,
    /// Where clients outside the cluster reach the coordinator, as far as the API
    /// server knows it, for the discovery ConfigMap.
    pub external_address: ExternalAddress,
    /// The Ingress's URL, once its controller gave it an address.
    pub ingress_url: Option<String>,
    /// The HTTPRoute's host and path, once a Gateway accepted it.
    pub route: Option<String>,
}

/// `<trino>-graceful-shutdown`.
pub fn graceful_shutdown_secret_name(cluster: &ValidatedCluster) -> String {
    format!("{}-graceful-shutdown", cluster.identity.name)
}

/// `<trino>-metrics`: the metrics user's credentials.
pub fn metrics_secret_name(cluster: &ValidatedCluster) -> String {
    format!("{}-metrics", cluster.identity.name)
}

/// `<trino>-password-db`.
pub fn password_db_secret_name(cluster: &ValidatedCluster) -> String {
    format!("{}-password-db", cluster.identity.name)
}

/// `<trino>-access-control`.
pub fn access_control_config_map_name(cluster: &ValidatedCluster) -> String {
    format!("{}-access-control", cluster.identity.name)
}

/// Adds the objects of the cluster's security: the Secrets before the pods that mount
/// them, the rules and the discovery ConfigMap.
pub fn push_security_objects(
    desired: &mut DesiredObjects,
    cluster: &ValidatedCluster,
    material: &SecurityMaterial,
) {
    if cluster.security.authenticates() {
        desired.push_create_once(
            opaque_secret(cluster, graceful_shutdown_secret_name(cluster)),
            fill_graceful_shutdown_secret,
        );
    }
    // Made whether the cluster authenticates or not, so that turning authentication on
    // later finds the password Prometheus already holds.
    desired.push_create_once(
        opaque_secret(cluster, metrics_secret_name(cluster)),
        fill_metrics_secret,
    );
    if let Some((file, version)) = &material.password_file {
        let mut shown = opaque_secret(cluster, password_db_secret_name(cluster));
        shown
            .metadata
            .annotations
            .get_or_insert_with(BTreeMap::new)
            .insert(USERS_VERSION_ANNOTATION.to_owned(), version.clone());
        let mut sealed = shown.clone();
        sealed.data = Some(BTreeMap::from([(
            PASSWORD_DB_KEY.to_owned(),
            ByteString(file.text().as_bytes().to_vec()),
        )]));
        desired.push_sealed(shown, sealed);
    }
    desired.push(access_control_config_map(
        cluster,
        material.rules.as_deref(),
    ));
    desired.push(discovery_config_map(cluster, material));
}

fn opaque_secret(cluster: &ValidatedCluster, name: String) -> Secret {
    Secret {
        metadata: object_meta(
            &name,
            &cluster.identity.namespace,
            cluster.identity.labels.labels(),
        ),
        type_: Some("Opaque".to_owned()),
        ..Secret::default()
    }
}

/// Makes the shutdown user's password and its password file, once, just before the
/// Secret is created: the operator never holds them afterwards.
pub fn fill_graceful_shutdown_secret(secret: &mut Secret) -> Result<(), String> {
    let (password, password_file) = operator_user(SHUTDOWN_USER)?;
    secret.string_data = Some(BTreeMap::from([
        (SHUTDOWN_PASSWORD_KEY.to_owned(), password),
        (PASSWORD_DB_KEY.to_owned(), password_file),
    ]));
    Ok(())
}

/// A random password for the operator's `user`, and the password file line Trino
/// checks it against.
fn operator_user(user: &str) -> Result<(String, String), String> {
    let password = random_token(OPERATOR_PASSWORD_BYTES).map_err(|error| error.to_string())?;
    let hash = hash_password(&password)?;
    Ok((password, format!("{user}:{hash}\n")))
}

/// Makes the metrics user's password and its password file, once, just before the
/// Secret is created.
pub fn fill_metrics_secret(secret: &mut Secret) -> Result<(), String> {
    let (password, password_file) = operator_user(METRICS_USER)?;
    secret.string_data = Some(BTreeMap::from([
        (
            metrics_credentials::USERNAME.to_owned(),
            METRICS_USER.to_owned(),
        ),
        (metrics_credentials::PASSWORD.to_owned(), password),
        (metrics_credentials::NO_PASSWORD.to_owned(), String::new()),
        (PASSWORD_DB_KEY.to_owned(), password_file),
    ]));
    Ok(())
}

/// `<trino>-access-control`: the rules every node enforces, read again every few
/// seconds, so it is not part of the pods' hash. Without `rules` (in `render`, when the
/// user's ConfigMap is not in the file) it has no data.
pub fn access_control_config_map(cluster: &ValidatedCluster, rules: Option<&str>) -> ConfigMap {
    ConfigMap {
        metadata: object_meta(
            &access_control_config_map_name(cluster),
            &cluster.identity.namespace,
            cluster.identity.labels.labels(),
        ),
        data: rules.map(|rules| BTreeMap::from([(RULES_KEY.to_owned(), rules.to_owned())])),
        ..ConfigMap::default()
    }
}

/// The discovery ConfigMap's keys.
pub mod discovery {
    /// The coordinator's URL, such as `https://simple-trino-coordinator.default.svc.cluster.local:8443`.
    pub const URL: &str = "TRINO";
    /// The coordinator Service's FQDN.
    pub const HOST: &str = "TRINO_HOST";
    /// Its port.
    pub const PORT: &str = "TRINO_PORT";
    /// `true` when clients must speak HTTPS.
    pub const TLS: &str = "TRINO_TLS";
    /// The CA a client checks the coordinator's certificate against, with TLS.
    pub const CA: &str = "ca.crt";
    /// With `clusterConfig.service.type: LoadBalancer`, once it has an address: its IP
    /// or host name, and the port (`TRINO_EXTERNAL_PORT`).
    pub const EXTERNAL_HOST: &str = "TRINO_EXTERNAL_HOST";
    /// With `NodePort`: the port on every node.
    pub const NODE_PORT: &str = "TRINO_NODE_PORT";
    /// With `clusterConfig.ingress`, once the Ingress has an address: the URL through
    /// it.
    pub const EXTERNAL_URL: &str = "TRINO_EXTERNAL_URL";
    /// With `clusterConfig.httpRoute`, once a Gateway accepted it: the route's host
    /// and path, without a scheme, which is the Gateway listener's to choose.
    pub const EXTERNAL_ROUTE: &str = "TRINO_EXTERNAL_ROUTE";
}

/// `<trino>`: what a client (Superset, a notebook) needs to connect, in the cluster's
/// namespace.
pub fn discovery_config_map(cluster: &ValidatedCluster, material: &SecurityMaterial) -> ConfigMap {
    let settings = cluster.security.settings();
    let host = coordinator_service_names(cluster)
        .into_iter()
        .next()
        .unwrap_or_default();
    let port = settings.port();
    let mut data = BTreeMap::from([
        (
            discovery::URL.to_owned(),
            format!("{}://{host}:{port}", settings.scheme()),
        ),
        (discovery::HOST.to_owned(), host),
        (discovery::PORT.to_owned(), port.to_string()),
        (discovery::TLS.to_owned(), settings.tls.to_string()),
    ]);
    if let Some(ca) = material.ca_pem.as_deref().filter(|_| settings.tls) {
        data.insert(discovery::CA.to_owned(), ca.to_owned());
    }
    data.extend(material.external_address.discovery_keys(
        discovery::URL,
        server_port(cluster).name,
        port,
    ));
    if let Some(url) = &material.ingress_url {
        data.insert(discovery::EXTERNAL_URL.to_owned(), url.clone());
    }
    if let Some(route) = &material.route {
        data.insert(discovery::EXTERNAL_ROUTE.to_owned(), route.clone());
    }
    ConfigMap {
        metadata: object_meta(
            cluster.identity.name.as_str(),
            &cluster.identity.namespace,
            cluster.identity.labels.labels(),
        ),
        data: Some(data),
        ..ConfigMap::default()
    }
}

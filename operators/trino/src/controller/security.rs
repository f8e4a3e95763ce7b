//! The security step, between validation and build: what TLS, authentication and
//! authorization need from the cluster.
//!
//! - Certificates: the shared step ([`strata_operator::tls::certificate_step`]) with
//!   Trino's names.
//! - Password authentication: the users Secret is read (only when its version changed,
//!   [`strata_operator::certificates::read_secret`]) and made into the password file;
//!   the file is kept by the Secret's version, so passwords are hashed again only when
//!   the Secret changes (or the operator restarts).
//! - LDAP and OAuth2: the ConfigMaps with the servers' CAs must have `ca.crt`, the
//!   OAuth2 client's Secret `clientId` and `clientSecret`; their versions roll the
//!   pods, which read them at start.
//! - Authorization: the user's rules, from the ConfigMap the reference cache holds,
//!   with the operator's rule for the shutdown user in front.
//!
//! Every problem is reported before anything is applied, and names the user or the
//! section, never a password or a rule's content.

use std::collections::HashMap;
use std::sync::Mutex;

use k8s_openapi::api::core::v1::ConfigMap;
use strata_operator::controller::Context;
use strata_operator::error::ReconcileError;
use strata_operator::reference::{KeySource, KeysRead};
use strata_operator::tls::{TlsMaterial, certificate_step};

use super::cluster::ClusterContext;
use crate::build::SecurityMaterial;
use crate::build::certificates::{certificate_request, requirements};
use crate::config::access_control::{RULES_KEY, access_control_rules};
use crate::config::password_file::{PasswordFile, password_file};
use crate::config::security::{LDAP_CA_KEY, OAUTH2_CLIENT_KEYS};
use crate::config::server::OPERATOR_USERS;
use crate::validate::ValidatedCluster;

/// The spec field of the users Secret, as errors name it.
const USERS_FIELD: &str = "clusterConfig.authentication[].password.secretName";
/// The spec field of the rules ConfigMap.
const RULES_FIELD: &str = "clusterConfig.authorization.rulesConfigMap";
/// The spec field of the LDAP server's CA.
const LDAP_CA_FIELD: &str = "clusterConfig.authentication[].ldap.caConfigMap";
/// The spec field of the OAuth2 client's credentials.
const OAUTH2_CLIENT_FIELD: &str = "clusterConfig.authentication[].oauth2.clientCredentialsSecret";
/// The spec field of the OAuth2 provider's CA.
const OAUTH2_CA_FIELD: &str = "clusterConfig.authentication[].oauth2.caConfigMap";

/// Password files made before, by `(namespace, Secret)`, with the version of the
/// Secret each was made from.
#[derive(Debug, Default)]
pub struct PasswordFiles(Mutex<HashMap<(String, String), (String, PasswordFile)>>);

impl PasswordFiles {
    fn known(&self, key: &(String, String), version: &str) -> Option<PasswordFile> {
        let files = self.0.lock().ok()?;
        files
            .get(key)
            .filter(|(known, _)| known == version)
            .map(|(_, file)| file.clone())
    }

    fn remember(&self, key: (String, String), version: String, file: PasswordFile) {
        if let Ok(mut files) = self.0.lock() {
            files.insert(key, (version, file));
        }
    }
}

/// Reads or makes what the cluster's security needs: the certificates (with their
/// versions, which roll the pods), the rules and the password file.
pub async fn security_step(
    cluster: &ValidatedCluster,
    rotate_ca: Option<&str>,
    context: &Context<ClusterContext>,
) -> Result<(TlsMaterial, SecurityMaterial), ReconcileError> {
    let security = &cluster.security;
    let namespace = &cluster.identity.namespace;
    let mut tls = match &security.tls {
        Some(source) => {
            certificate_step(
                source,
                namespace,
                |lifetime| certificate_request(cluster, lifetime),
                &requirements(cluster),
                rotate_ca,
                context,
            )
            .await?
        }
        None => TlsMaterial::default(),
    };
    // The CAs of the LDAP server and the OAuth2 provider, and the OAuth2 client's
    // credentials, are read at start: a new version rolls the pods.
    let mut reads = Vec::new();
    if let Some((_, Some(name))) = &security.ldap {
        reads.push(KeysRead {
            object: KeySource::ConfigMap,
            name,
            keys: vec![LDAP_CA_KEY],
            field: LDAP_CA_FIELD,
        });
    }
    if let Some((_, secret, ca)) = &security.oauth2 {
        reads.push(KeysRead {
            object: KeySource::Secret,
            name: secret,
            keys: OAUTH2_CLIENT_KEYS.to_vec(),
            field: OAUTH2_CLIENT_FIELD,
        });
        if let Some(ca) = ca {
            reads.push(KeysRead {
                object: KeySource::ConfigMap,
                name: ca,
                keys: vec![LDAP_CA_KEY],
                field: OAUTH2_CA_FIELD,
            });
        }
    }
    let versions = context
        .references
        .check_keys(namespace, reads)
        .map_err(ReconcileError::from)?;
    tls.versions.extend(versions);
    let rules = match &security.rules_config_map {
        Some(name) => user_rules(namespace, name, context)?,
        None => access_control_rules(None).unwrap_or_default(),
    };
    let password_file = match &security.users_secret {
        Some(name) => Some(users_password_file(namespace, name, context).await?),
        None => None,
    };
    let material = SecurityMaterial {
        ca_pem: security.tls.as_ref().map(|_| tls.ca_pem.clone()),
        rules: Some(rules),
        password_file,
        ..SecurityMaterial::default()
    };
    Ok((tls, material))
}

fn user_rules(
    namespace: &str,
    name: &str,
    context: &Context<ClusterContext>,
) -> Result<String, ReconcileError> {
    context
        .references
        .check_keys(
            namespace,
            [KeysRead {
                object: KeySource::ConfigMap,
                name,
                keys: vec![RULES_KEY],
                field: RULES_FIELD,
            }],
        )
        .map_err(ReconcileError::from)?;
    let config_map = context
        .references
        .get::<ConfigMap>(namespace, name)
        .map_err(ReconcileError::from)?;
    let text = config_map
        .as_ref()
        .and_then(|config_map| config_map.data.as_ref()?.get(RULES_KEY).cloned())
        .unwrap_or_default();
    access_control_rules(Some(&text)).map_err(|error| {
        ReconcileError::invalid_spec(
            "InvalidAccessRules",
            format!("ConfigMap {name} ({RULES_FIELD}), key {RULES_KEY}, {error}"),
        )
    })
}

async fn users_password_file(
    namespace: &str,
    name: &str,
    context: &Context<ClusterContext>,
) -> Result<(PasswordFile, String), ReconcileError> {
    let versions = context
        .references
        .check_keys(
            namespace,
            [KeysRead {
                object: KeySource::Secret,
                name,
                keys: Vec::new(),
                field: USERS_FIELD,
            }],
        )
        .map_err(ReconcileError::from)?;
    let version = versions
        .get(&format!("Secret/{name}"))
        .cloned()
        .unwrap_or_default();
    let key = (namespace.to_owned(), name.to_owned());
    if let Some(file) = context.extra.password_files.known(&key, &version) {
        return Ok((file, version));
    }
    // The reference cache's version is `<uid>/<resourceVersion>`; the values read
    // before are kept by `resourceVersion`.
    let users = strata_operator::certificates::read_secret(
        &context.client,
        &context.secret_values,
        namespace,
        name,
        version.rsplit('/').next(),
    )
    .await?
    .unwrap_or_default();
    let invalid = |message: String| {
        ReconcileError::invalid_spec(
            "InvalidPasswordEntry",
            format!("Secret {name} ({USERS_FIELD}): {message}"),
        )
    };
    if users.is_empty() {
        return Err(invalid(
            "it has no user: add one key per user, with the password as its value".to_owned(),
        ));
    }
    let file =
        password_file(&users, &OPERATOR_USERS).map_err(|problem| invalid(problem.to_string()))?;
    context
        .extra
        .password_files
        .remember(key, version.clone(), file.clone());
    Ok((file, version))
}

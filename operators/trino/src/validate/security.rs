//! `clusterConfig.tls`, `authentication` and `authorization`, checked.

use strata_operator::error::ReconcileError;
use strata_operator::tls::{CertificateSource, certificate_source};
use strata_status::SpecWarning;

use crate::config::security::{PasswordAuthenticator, SecuritySettings};
use crate::crd::{TrinoAuthentication, TrinoClusterConfig};

/// TLS, authentication and authorization, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidatedSecurity {
    /// Where the certificates come from; `None` for plain HTTP.
    pub tls: Option<CertificateSource>,
    /// The Secret with the users and their passwords, with password authentication.
    pub users_secret: Option<String>,
    /// The ConfigMap with the user's access control rules.
    pub rules_config_map: Option<String>,
}

impl ValidatedSecurity {
    /// Checks the three settings: authentication needs TLS (Trino refuses passwords
    /// over plain HTTP), and every name must be set.
    pub fn new(config: &TrinoClusterConfig) -> Result<Self, ReconcileError> {
        let tls = certificate_source(
            config.tls.enabled,
            config.tls.secret_name.as_deref(),
            config.tls.certificate_lifetime.as_deref(),
        )?;
        let mut users_secret = None;
        for (index, authentication) in config.authentication.iter().enumerate() {
            let field = format!("clusterConfig.authentication[{index}]");
            match authentication {
                TrinoAuthentication::Password(password) => {
                    if password.secret_name.is_empty() {
                        return Err(invalid(format!(
                            "{field}.password.secretName is empty: name the Secret with one \
                             key per user"
                        )));
                    }
                    if users_secret.is_some() {
                        return Err(invalid(format!(
                            "{field} is a second password authentication: keep every user \
                             in one Secret"
                        )));
                    }
                    users_secret = Some(password.secret_name.clone());
                }
            }
        }
        if tls.is_none() && !config.authentication.is_empty() {
            return Err(ReconcileError::invalid_spec(
                "AuthenticationNeedsTls",
                "clusterConfig.authentication needs TLS: Trino accepts passwords only over \
                 HTTPS, so remove clusterConfig.tls.enabled: false",
            ));
        }
        let rules_config_map = config
            .authorization
            .as_ref()
            .and_then(|authorization| authorization.rules_config_map.clone());
        if rules_config_map.as_deref() == Some("") {
            return Err(invalid_authorization(
                "clusterConfig.authorization.rulesConfigMap is empty: name the ConfigMap with \
                 rules.json, or leave it out"
                    .to_owned(),
            ));
        }
        Ok(Self {
            tls,
            users_secret,
            rules_config_map,
        })
    }

    /// Whether clients must authenticate.
    pub fn authenticates(&self) -> bool {
        self.users_secret.is_some()
    }

    /// What every node's files say.
    pub fn settings(&self) -> SecuritySettings {
        let mut authenticators = Vec::new();
        if self.authenticates() {
            authenticators.push(PasswordAuthenticator::GracefulShutdown);
        }
        if self.users_secret.is_some() {
            authenticators.push(PasswordAuthenticator::Users);
        }
        SecuritySettings {
            tls: self.tls.is_some(),
            authenticators,
        }
    }

    /// The Warning a cluster without TLS carries.
    pub fn plaintext_warning(&self) -> Option<SpecWarning> {
        self.tls.is_none().then(|| SpecWarning {
            reason: strata_status::reason!("TlsDisabled"),
            message: "clusterConfig.tls.enabled is false: clients and the nodes talk plain \
                      HTTP on 8080, and anyone who reaches the pods can run queries as any \
                      user they name. Remove the setting to have HTTPS with the operator's \
                      certificates"
                .to_owned(),
        })
    }
}

fn invalid(message: String) -> ReconcileError {
    ReconcileError::invalid_spec("InvalidAuthentication", message)
}

fn invalid_authorization(message: String) -> ReconcileError {
    ReconcileError::invalid_spec("InvalidAuthorization", message)
}

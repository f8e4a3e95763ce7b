//! `clusterConfig.tls`, `authentication` and `authorization`, checked.

use strata_operator::error::ReconcileError;
use strata_operator::tls::{CertificateSource, certificate_source};
use strata_status::SpecWarning;

use crate::config::security::{
    LdapSettings, OAuth2Settings, PasswordAuthenticator, SecuritySettings,
};
use crate::crd::{
    LdapAuthentication, OAuth2Authentication, TrinoAuthentication, TrinoClusterConfig,
};

/// TLS, authentication and authorization, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidatedSecurity {
    /// Where the certificates come from; `None` for plain HTTP.
    pub tls: Option<CertificateSource>,
    /// The Secret with the users and their passwords, with password authentication.
    pub users_secret: Option<String>,
    /// The ConfigMap with the user's access control rules.
    pub rules_config_map: Option<String>,
    /// The LDAP directory, with the ConfigMap of its CA.
    pub ldap: Option<(LdapSettings, Option<String>)>,
    /// The user's authenticators in the spec's order (the shutdown user's comes first).
    pub user_authenticators: Vec<PasswordAuthenticator>,
    /// OAuth 2.0: its settings, the client credentials Secret and its CA's ConfigMap.
    pub oauth2: Option<(OAuth2Settings, String, Option<String>)>,
    /// Whether the coordinator is reached through a proxy that sends `X-Forwarded-*`
    /// headers: an Ingress (`clusterConfig.ingress`) or a Gateway
    /// (`clusterConfig.httpRoute`).
    pub behind_proxy: bool,
}

impl ValidatedSecurity {
    /// Checks the three settings: authentication needs TLS (Trino refuses passwords
    /// over plain HTTP), every name must be set, and LDAP must not send passwords in
    /// clear text unless the user says so.
    pub fn new(config: &TrinoClusterConfig) -> Result<Self, ReconcileError> {
        let tls = certificate_source(
            config.tls.enabled,
            config.tls.secret_name.as_deref(),
            config.tls.certificate_lifetime.as_deref(),
        )?;
        let mut users_secret = None;
        let mut ldap = None;
        let mut oauth2 = None;
        let mut user_authenticators = Vec::new();
        for (index, authentication) in config.authentication.iter().enumerate() {
            let field = format!("clusterConfig.authentication[{index}]");
            match authentication {
                TrinoAuthentication::Oauth2(spec) => {
                    if oauth2.is_some() {
                        return Err(invalid(format!(
                            "{field} is a second OAuth2 authentication: Trino takes one \
                             provider"
                        )));
                    }
                    oauth2 = Some((
                        oauth2_settings(&field, spec)?,
                        spec.client_credentials_secret.clone(),
                        spec.ca_config_map.clone(),
                    ));
                }
                TrinoAuthentication::Ldap(spec) => {
                    if ldap.is_some() {
                        return Err(invalid(format!(
                            "{field} is a second LDAP authentication: Trino takes one \
                             directory; list several patterns in userBindPattern instead"
                        )));
                    }
                    let settings = ldap_settings(&field, spec)?;
                    user_authenticators.push(PasswordAuthenticator::Ldap(settings.clone()));
                    ldap = Some((settings, spec.ca_config_map.clone()));
                }
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
                    user_authenticators.push(PasswordAuthenticator::Users);
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
            ldap,
            user_authenticators,
            oauth2,
            behind_proxy: config.ingress.is_some() || config.http_route.is_some(),
        })
    }

    /// Whether clients must authenticate.
    pub fn authenticates(&self) -> bool {
        !self.user_authenticators.is_empty() || self.oauth2.is_some()
    }

    /// What every node's files say.
    pub fn settings(&self) -> SecuritySettings {
        let mut authenticators = Vec::new();
        if self.authenticates() {
            authenticators.push(PasswordAuthenticator::GracefulShutdown);
            authenticators.push(PasswordAuthenticator::Metrics);
        }
        authenticators.extend(self.user_authenticators.iter().cloned());
        SecuritySettings {
            tls: self.tls.is_some(),
            authenticators,
            oauth2: self
                .oauth2
                .as_ref()
                .map(|(settings, _, _)| settings.clone()),
            behind_proxy: self.behind_proxy,
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

/// `authentication[].ldap`, checked: an `ldaps://` URL (or `ldap://` allowed
/// explicitly), a bind pattern with `${USER}`, and a group search given whole.
fn ldap_settings(field: &str, spec: &LdapAuthentication) -> Result<LdapSettings, ReconcileError> {
    let insecure = spec.url.starts_with("ldap://");
    if !insecure && !spec.url.starts_with("ldaps://") {
        return Err(invalid(format!(
            "{field}.ldap.url {:?} is not an ldaps:// (or ldap://) URL",
            spec.url
        )));
    }
    if insecure && !spec.allow_insecure {
        return Err(ReconcileError::invalid_spec(
            "InsecureLdap",
            format!(
                "{field}.ldap.url is ldap://, which sends every password in clear text: use \
                 ldaps://, or set allowInsecure: true"
            ),
        ));
    }
    if !spec.user_bind_pattern.contains("${USER}") {
        return Err(invalid(format!(
            "{field}.ldap.userBindPattern has no ${{USER}}: every login would bind as the \
             same DN"
        )));
    }
    let group_search = match (&spec.user_base_dn, &spec.group_auth_pattern) {
        (None, None) => None,
        (Some(base), Some(pattern)) if !base.is_empty() && pattern.contains("${USER}") => {
            Some((base.clone(), pattern.clone()))
        }
        _ => {
            return Err(invalid(format!(
                "{field}.ldap: userBaseDn and groupAuthPattern go together, and the pattern \
                 names ${{USER}}"
            )));
        }
    };
    if spec.ca_config_map.as_deref() == Some("") {
        return Err(invalid(format!("{field}.ldap.caConfigMap is empty")));
    }
    Ok(LdapSettings {
        url: spec.url.clone(),
        user_bind_pattern: spec.user_bind_pattern.clone(),
        group_search,
        ca_mounted: spec.ca_config_map.is_some(),
        allow_insecure: spec.allow_insecure,
    })
}

/// `authentication[].oauth2`, checked: an `https://` issuer, and the names set.
fn oauth2_settings(
    field: &str,
    spec: &OAuth2Authentication,
) -> Result<OAuth2Settings, ReconcileError> {
    if !spec.issuer.starts_with("https://") {
        return Err(invalid(format!(
            "{field}.oauth2.issuer {:?} is not an https:// URL: tokens and client secrets \
             would cross the network in clear text",
            spec.issuer
        )));
    }
    if spec.client_credentials_secret.is_empty() {
        return Err(invalid(format!(
            "{field}.oauth2.clientCredentialsSecret is empty: name the Secret with clientId \
             and clientSecret"
        )));
    }
    if spec.ca_config_map.as_deref() == Some("") {
        return Err(invalid(format!("{field}.oauth2.caConfigMap is empty")));
    }
    if spec.principal_field.as_deref() == Some("") {
        return Err(invalid(format!("{field}.oauth2.principalField is empty")));
    }
    if let Some(audience) = spec
        .additional_audiences
        .iter()
        .find(|audience| audience.trim().is_empty() || audience.contains([',', '\n', '\r']))
    {
        return Err(invalid(format!(
            "{field}.oauth2.additionalAudiences: {audience:?} is not one audience: each is \
             non-empty, on one line, without a comma"
        )));
    }
    Ok(OAuth2Settings {
        issuer: spec.issuer.clone(),
        principal_field: spec.principal_field.clone(),
        scopes: spec.scopes.clone(),
        additional_audiences: spec.additional_audiences.clone(),
        ca_mounted: spec.ca_config_map.is_some(),
    })
}

fn invalid(message: String) -> ReconcileError {
    ReconcileError::invalid_spec("InvalidAuthentication", message)
}

fn invalid_authorization(message: String) -> ReconcileError {
    ReconcileError::invalid_spec("InvalidAuthorization", message)
}

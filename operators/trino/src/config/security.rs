//! What TLS and authentication add to the files every node reads, and where in the pod
//! their material is.
//!
//! - TLS: HTTPS on [`HTTPS_PORT`] with the keystore `start.sh` assembles from the
//!   mounted certificate Secret (Trino reads one PEM file with the chain and the key),
//!   internal communication over HTTPS against the CA (`internal-communication.https.
//!   required`: without it the nodes would announce plain HTTP addresses), each node
//!   known by its FQDN (`node.internal-address-source=FQDN`), which the certificates
//!   cover, and plain HTTP off.
//! - Authentication: `PASSWORD`, with the operator's own file authenticator first (the
//!   shutdown user the preStop hook drains a worker as), then the user's file and LDAP
//!   directory, in the spec's order. Every node
//!   authenticates, workers too, so that only the shutdown user can drain one.

/// The HTTPS port of every node with TLS.
pub const HTTPS_PORT: u16 = 8443;
/// Where the certificate Secret (`tls.crt`, `tls.key`, `ca.crt`) is mounted.
pub const TLS_DIR: &str = "/strata/tls";
/// The in-memory directory `start.sh` writes the keystore to.
pub const KEYSTORE_DIR: &str = "/strata/keystore";
/// The keystore: the certificate and its key in one PEM file, as Trino reads it.
pub const KEYSTORE: &str = "/strata/keystore/server.pem";
/// The CA every node and the probes check certificates against.
pub const CA_FILE: &str = "/strata/tls/ca.crt";
/// Where the shutdown user's password file is mounted.
pub const SHUTDOWN_PASSWORD_DIR: &str = "/strata/graceful-shutdown";
/// Where the metrics user's password file is mounted.
pub const METRICS_PASSWORD_DIR: &str = "/strata/metrics-user";
/// Where the users' password file is mounted.
pub const USERS_PASSWORD_DIR: &str = "/strata/users";
/// The key of a password file in its Secret, and its file name.
pub const PASSWORD_DB_KEY: &str = "password.db";
/// How often a file authenticator reads its file again: a changed users Secret reaches
/// the running servers without a restart.
pub const PASSWORD_REFRESH_PERIOD: &str = "5s";

/// TLS and authentication of one cluster, as every node's files see them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SecuritySettings {
    /// HTTPS and internal TLS.
    pub tls: bool,
    /// The password authenticators, in the order Trino tries them; empty without
    /// authentication.
    pub authenticators: Vec<PasswordAuthenticator>,
    /// OAuth 2.0 with OpenID Connect.
    pub oauth2: Option<OAuth2Settings>,
    /// Whether an Ingress controller forwards the clients' requests to the coordinator:
    /// it then takes their `X-Forwarded-*` headers (`http-server.process-forwarded`),
    /// which it refuses with 406 otherwise, and builds the `nextUri` clients follow
    /// (and OAuth 2.0's redirect) from the host and scheme the clients used.
    pub behind_proxy: bool,
}

/// Where the OpenID Connect provider's CA is mounted.
pub const OAUTH2_CA_DIR: &str = "/strata/oauth2-ca";
/// The variable with Trino's client id at the provider.
pub const OAUTH2_CLIENT_ID_ENV: &str = "STRATA_OAUTH2_CLIENT_ID";
/// The variable with its client secret.
pub const OAUTH2_CLIENT_SECRET_ENV: &str = "STRATA_OAUTH2_CLIENT_SECRET";
/// The keys of the client credentials Secret.
pub const OAUTH2_CLIENT_KEYS: [&str; 2] = ["clientId", "clientSecret"];

/// The checked settings of Trino's OAuth 2.0 authenticator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OAuth2Settings {
    /// `http-server.authentication.oauth2.issuer`.
    pub issuer: String,
    /// `principal-field`, when not Trino's default.
    pub principal_field: Option<String>,
    /// `scopes`, when not Trino's default.
    pub scopes: Vec<String>,
    /// `additional-audiences`: what a token's `aud` may name besides the client ID.
    pub additional_audiences: Vec<String>,
    /// Whether the CA of a ConfigMap is the trust store of Trino's client of the
    /// provider (`oauth2-jwk.http-client.trust-store-path`).
    pub ca_mounted: bool,
}

impl OAuth2Settings {
    /// Its `config.properties` entries: the client's credentials come from the
    /// environment, which reads them from the user's Secret. Only a coordinator serves
    /// the web UI (a worker refuses to start with a `web-ui.*` key, which it does not
    /// use).
    fn config_entries(&self, coordinator: bool) -> Vec<(&'static str, String)> {
        let mut entries = vec![
            (
                "http-server.authentication.oauth2.issuer",
                self.issuer.clone(),
            ),
            (
                "http-server.authentication.oauth2.client-id",
                format!("${{ENV:{OAUTH2_CLIENT_ID_ENV}}}"),
            ),
            (
                "http-server.authentication.oauth2.client-secret",
                format!("${{ENV:{OAUTH2_CLIENT_SECRET_ENV}}}"),
            ),
            // Trino's default sends each access token to the provider's userinfo
            // endpoint, which any of the provider's tokens passes, whichever client it
            // was issued to: checked locally, a token's audience must be Trino's.
            (
                "http-server.authentication.oauth2.oidc.use-userinfo-endpoint",
                "false".to_owned(),
            ),
        ];
        if !self.additional_audiences.is_empty() {
            entries.push((
                "http-server.authentication.oauth2.additional-audiences",
                self.additional_audiences.join(","),
            ));
        }
        if let Some(field) = &self.principal_field {
            entries.push((
                "http-server.authentication.oauth2.principal-field",
                field.clone(),
            ));
        }
        if !self.scopes.is_empty() {
            entries.push((
                "http-server.authentication.oauth2.scopes",
                self.scopes.join(","),
            ));
        }
        if self.ca_mounted {
            entries.push((
                "oauth2-jwk.http-client.trust-store-path",
                format!("{OAUTH2_CA_DIR}/{LDAP_CA_KEY}"),
            ));
        }
        // The web UI signs in through the provider, not with a password form.
        if coordinator {
            entries.push(("web-ui.authentication.type", "oauth2".to_owned()));
        }
        entries
    }
}

/// Where the LDAP server's CA is mounted.
pub const LDAP_CA_DIR: &str = "/strata/ldap-ca";
/// The key of the CA in the user's ConfigMap, and its file name.
pub const LDAP_CA_KEY: &str = "ca.crt";

/// One password authenticator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PasswordAuthenticator {
    /// The operator's file: the shutdown user alone.
    GracefulShutdown,
    /// The operator's file of the user Prometheus scrapes `/metrics` as.
    Metrics,
    /// The file of the users of `authentication[].password`.
    Users,
    /// An LDAP directory, `authentication[].ldap`.
    Ldap(LdapSettings),
}

/// The checked settings of Trino's LDAP authenticator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LdapSettings {
    /// `ldap.url`.
    pub url: String,
    /// `ldap.user-bind-pattern`.
    pub user_bind_pattern: String,
    /// `ldap.user-base-dn` and `ldap.group-auth-pattern`, together.
    pub group_search: Option<(String, String)>,
    /// Whether the CA of a ConfigMap is mounted as `ldap.ssl.truststore.path`.
    pub ca_mounted: bool,
    /// `ldap.allow-insecure`: `ldap://`.
    pub allow_insecure: bool,
}

impl PasswordAuthenticator {
    /// Its properties file under `/etc/trino`.
    pub fn file_name(&self) -> &'static str {
        match self {
            Self::GracefulShutdown => "shutdown-authenticator.properties",
            Self::Metrics => "metrics-authenticator.properties",
            Self::Users => "password-authenticator.properties",
            Self::Ldap(_) => "ldap-authenticator.properties",
        }
    }

    /// Its properties.
    pub fn properties(&self) -> Vec<(&'static str, String)> {
        let dir = match self {
            Self::GracefulShutdown => SHUTDOWN_PASSWORD_DIR,
            Self::Metrics => METRICS_PASSWORD_DIR,
            Self::Users => USERS_PASSWORD_DIR,
            Self::Ldap(ldap) => return ldap.properties(),
        };
        vec![
            ("password-authenticator.name", "file".to_owned()),
            ("file.password-file", format!("{dir}/{PASSWORD_DB_KEY}")),
            ("file.refresh-period", PASSWORD_REFRESH_PERIOD.to_owned()),
        ]
    }
}

impl LdapSettings {
    fn properties(&self) -> Vec<(&'static str, String)> {
        let mut properties = vec![
            ("password-authenticator.name", "ldap".to_owned()),
            ("ldap.url", self.url.clone()),
            ("ldap.user-bind-pattern", self.user_bind_pattern.clone()),
        ];
        if let Some((base, pattern)) = &self.group_search {
            properties.push(("ldap.user-base-dn", base.clone()));
            properties.push(("ldap.group-auth-pattern", pattern.clone()));
        }
        if self.ca_mounted {
            properties.push((
                "ldap.ssl.truststore.path",
                format!("{LDAP_CA_DIR}/{LDAP_CA_KEY}"),
            ));
        }
        if self.allow_insecure {
            properties.push(("ldap.allow-insecure", "true".to_owned()));
        }
        properties
    }
}

impl SecuritySettings {
    /// The client port: HTTPS with TLS, HTTP without.
    pub fn port(&self) -> u16 {
        if self.tls {
            HTTPS_PORT
        } else {
            super::server::HTTP_PORT
        }
    }

    /// `https` or `http`.
    pub fn scheme(&self) -> &'static str {
        if self.tls { "https" } else { "http" }
    }

    /// The `config.properties` entries of the server's ports, TLS and authentication.
    pub fn config_entries(&self, etc_dir: &str, coordinator: bool) -> Vec<(&'static str, String)> {
        let mut entries = if self.tls {
            vec![
                ("http-server.http.enabled", "false".to_owned()),
                ("http-server.https.enabled", "true".to_owned()),
                ("http-server.https.port", HTTPS_PORT.to_string()),
                ("http-server.https.keystore.path", KEYSTORE.to_owned()),
                ("internal-communication.https.required", "true".to_owned()),
                (
                    "internal-communication.https.truststore.path",
                    CA_FILE.to_owned(),
                ),
            ]
        } else {
            vec![(
                "http-server.http.port",
                super::server::HTTP_PORT.to_string(),
            )]
        };
        if coordinator && self.behind_proxy {
            entries.push(("http-server.process-forwarded", "true".to_owned()));
        }
        if !self.authenticators.is_empty() {
            let files: Vec<String> = self
                .authenticators
                .iter()
                .map(|authenticator| format!("{etc_dir}/{}", authenticator.file_name()))
                .collect();
            let types = if self.oauth2.is_some() {
                "PASSWORD,OAUTH2"
            } else {
                "PASSWORD"
            };
            entries.push(("http-server.authentication.type", types.to_owned()));
            entries.push(("password-authenticator.config-files", files.join(",")));
        }
        if let Some(oauth2) = &self.oauth2 {
            entries.extend(oauth2.config_entries(coordinator));
        }
        entries
    }

    /// The `node.properties` entries: with TLS, each node is known by its FQDN, which
    /// its certificate covers (by default a node announces its IP address).
    pub fn node_entries(&self) -> Vec<(&'static str, String)> {
        if self.tls {
            vec![("node.internal-address-source", "FQDN".to_owned())]
        } else {
            Vec::new()
        }
    }
}

//! `spec.clusterConfig.tls`, `authentication` and `authorization`: who may reach the
//! cluster, how they prove who they are, and what they may do.
//!
//! TLS is on by default, with certificates the operator issues from a CA of the
//! cluster's own (no companion operator), or with the user's Secret as cert-manager
//! writes it. Clients then speak HTTPS on 8443, the nodes talk to each other over
//! TLS, and plain HTTP is off.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// HTTPS for clients and TLS between the nodes.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TrinoTls {
    /// Whether clients connect over HTTPS (port 8443) and the nodes talk to each other
    /// over TLS, with plain HTTP off. Defaults to true; false serves plain HTTP on 8080
    /// to anyone who reaches the pods, and says so in the Warning condition.
    /// Authentication needs TLS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,

    /// The user's own certificate instead of the operator's: a Secret in the cluster's
    /// namespace with `tls.crt` (valid for every pod's FQDN and the coordinator
    /// Service's), `tls.key` (PKCS#8: cert-manager's `privateKey.encoding: PKCS8`) and
    /// `ca.crt`. Unset: the operator keeps a CA in `<cluster>-ca` and a certificate per
    /// role group in `<cluster>-<role>-<roleGroup>-tls`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_name: Option<String>,

    /// How long the operator's certificates are valid, such as `720h` (the default, 30
    /// days); each is renewed two thirds into it, and the pods roll onto the new one
    /// (the coordinator's restart ends the queries it runs). At least `5m`. Not used
    /// with `secretName`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate_lifetime: Option<String>,
}

impl TrinoTls {
    /// Whether nothing is set.
    pub fn is_default(&self) -> bool {
        self == &Self::default()
    }
}

/// One way clients authenticate. Trino tries them in the listed order.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub enum TrinoAuthentication {
    /// Users and passwords from a Secret, written as the bcrypt password file Trino
    /// reads.
    Password(PasswordAuthentication),
    /// Users of an LDAP directory: Trino binds as the user to check the password.
    Ldap(LdapAuthentication),
    /// Users of an OpenID Connect provider: clients send its access tokens
    /// (`Authorization: Bearer`), and the web UI signs in through it.
    Oauth2(OAuth2Authentication),
}

/// `authentication[].oauth2`: Trino's OAuth 2.0 authenticator with OpenID Connect
/// discovery. Every node fetches the provider's discovery document when it starts, and
/// does not start without it.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct OAuth2Authentication {
    /// The provider's issuer URL, `https://...`, exactly as its discovery document
    /// names it (a trailing `/` matters).
    pub issuer: String,
    /// A Secret in the cluster's namespace with `clientId` and `clientSecret`, Trino's
    /// client at the provider.
    pub client_credentials_secret: String,
    /// The claim that names the user. Trino's default: `sub`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal_field: Option<String>,
    /// The scopes the web UI asks for. Trino's default: `openid`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// A ConfigMap in the cluster's namespace whose `ca.crt` the provider's certificate
    /// is checked against. Unset: the JVM's default trust store.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_config_map: Option<String>,
    /// Audiences an access token may name (`aud`) besides Trino's client ID, such as
    /// the identifier of an API the provider issues tokens for. Every node checks each
    /// access token itself: its issuer, its signature against the provider's keys, its
    /// expiry, and that its `aud` names Trino's client or one of these. A token the
    /// provider issued to another client is refused. The provider's access tokens must
    /// be JWTs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64), inner(length(min = 1, max = 1024)))]
    pub additional_audiences: Vec<String>,
}

/// `authentication[].ldap`: Trino's LDAP password authenticator, binding as the user.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LdapAuthentication {
    /// The server, `ldaps://<host>:<port>`. `ldap://` sends passwords in clear text and
    /// needs `allowInsecure: true`.
    pub url: String,
    /// The DN to bind as, with `${USER}` for the login name, such as
    /// `uid=${USER},ou=people,dc=example,dc=org`; several patterns separated by `:` are
    /// tried in order.
    pub user_bind_pattern: String,
    /// With `groupAuthPattern`: where to search, as the user, for the entry the pattern
    /// finds; a user it finds nothing for is refused (group membership).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_base_dn: Option<String>,
    /// An LDAP filter with `${USER}`, such as
    /// `(&(objectClass=inetOrgPerson)(uid=${USER})(memberOf=cn=trino,ou=groups,dc=example,dc=org))`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_auth_pattern: Option<String>,
    /// A ConfigMap in the cluster's namespace whose `ca.crt` is the CA the server's
    /// certificate is checked against. Unset: the JVM's default trust store.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_config_map: Option<String>,
    /// Allow `ldap://`, which sends every password in clear text. False by default.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_insecure: bool,
}

/// `authentication[].password`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PasswordAuthentication {
    /// A Secret in the cluster's namespace with one key per user: the key is the user
    /// name, the value the password, or its bcrypt hash (`$2y$`, `$2a$` or `$2b$`, cost
    /// 8 or more) to keep the password itself out of the cluster. A change reaches the
    /// running servers within about a minute, without a restart.
    pub secret_name: String,
}

/// `clusterConfig.authorization`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TrinoAuthorization {
    /// A ConfigMap in the cluster's namespace whose key `rules.json` holds the rules of
    /// Trino's file-based access control. The operator adds one rule only, first in
    /// `system_information`, so that its shutdown user can drain a worker; for every
    /// other user the first matching rule of this file wins. A change applies within
    /// about a minute, without a restart. Unset: everything is allowed except
    /// impersonation and writing system information, as with Trino's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rules_config_map: Option<String>,
}

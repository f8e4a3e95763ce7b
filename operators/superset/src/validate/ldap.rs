//! LDAP logins, checked: the passwords never travel in clear unless the spec says so
//! (`allowInsecure`), and over TLS the server's certificate is verified against the CA
//! the spec names (review finding 23).

use strata_operator::error::ReconcileError;

use crate::config::superset_config::{AuthSetting, LdapTlsSetting, Registration};
use crate::crd::Ldap;

use super::database::{CaSource, ca_source};

/// The field that names the LDAP server's CA, for messages.
pub const LDAP_CA_FIELD: &str = "clusterConfig.authentication.ldap.caCertificate";
/// Where the LDAP server's CA is mounted.
pub const LDAP_CA_DIR: &str = "/strata/ldap-tls";
/// The reason of an LDAP TLS setting that cannot mean what it says.
const INVALID_LDAP_TLS: &str = "InvalidLdapTls";

/// `ldap`'s login setting, and the object with its CA when the spec names one.
pub(super) fn ldap(
    ldap: &Ldap,
    registration: Registration,
) -> Result<(AuthSetting, Option<CaSource>), ReconcileError> {
    let tls = tls(ldap)?;
    let ca = ldap
        .ca_certificate
        .as_ref()
        .map(|ca| ca_source(ca, LDAP_CA_FIELD, INVALID_LDAP_TLS))
        .transpose()?;
    let setting = AuthSetting::Ldap {
        server_uri: ldap.server_uri.clone(),
        bind_dn: ldap.bind_dn.clone(),
        search_base: ldap.search_base.clone(),
        user_attribute: ldap.user_attribute.clone(),
        group_attribute: ldap.group_attribute.clone(),
        tls: tls.map(|start_tls| LdapTlsSetting {
            start_tls,
            ca_file: ca.is_some(),
        }),
        registration,
    };
    Ok((setting, ca))
}

/// `Some(start_tls)` when the connection is encrypted, `None` when the spec accepts
/// clear text.
fn tls(ldap: &Ldap) -> Result<Option<bool>, ReconcileError> {
    let uri = &ldap.server_uri;
    let secure_scheme = uri.starts_with("ldaps://");
    match (secure_scheme, ldap.start_tls) {
        (true, true) => Err(ReconcileError::invalid_spec(
            INVALID_LDAP_TLS,
            format!(
                "clusterConfig.authentication.ldap sets startTls with the ldaps:// URI {uri:?}, \
                 which speaks TLS from its first byte: StartTLS would fail on every login. \
                 Drop startTls, or use ldap:// with it"
            ),
        )),
        (true, false) => Ok(Some(false)),
        (false, true) => Ok(Some(true)),
        (false, false) if !ldap.allow_insecure => Err(ReconcileError::invalid_spec(
            "LdapInClearText",
            format!(
                "clusterConfig.authentication.ldap.serverUri {uri:?} is not an ldaps:// URI: \
                 ldap:// sends the bind password and every user's password in clear text. \
                 Use ldaps://, or set startTls: true, or set allowInsecure: true to accept \
                 that"
            ),
        )),
        (false, false) if ldap.ca_certificate.is_some() => Err(ReconcileError::invalid_spec(
            INVALID_LDAP_TLS,
            format!(
                "clusterConfig.authentication.ldap names a caCertificate for the clear-text \
                 URI {uri:?}, where no certificate is checked: use ldaps:// or startTls: true, \
                 or drop caCertificate"
            ),
        )),
        (false, false) => Ok(None),
    }
}

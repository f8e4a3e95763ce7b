//! The metadata database: which one, how the pods reach it, and how the connection is
//! secured.

use strata_operator::error::ReconcileError;
use strata_operator::reference::KeySource;

use crate::config::superset_config::{DatabaseSetting, DatabaseTlsSetting};
use crate::crd::{CaCertificate, DatabaseTls, MetadataDatabase, SslMode};

/// Where the pods find the metadata database's CA certificate.
pub const DATABASE_CA_DIR: &str = "/strata/metadata-database-tls";
/// The key, and file, of the CA certificate.
pub const CA_KEY: &str = "ca.crt";

/// The metadata database, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ValidatedDatabase {
    /// PostgreSQL; credentials from a Secret.
    Postgresql {
        /// The Secret with `username` and `password`.
        credentials_secret: String,
        /// Whether the spec secures the connection (`tls`).
        tls: bool,
        /// The object with the CA the server's certificate is checked against.
        ca: Option<CaSource>,
    },
    /// A URI from a Secret.
    Generic {
        /// The Secret with `uri`.
        uri_secret: String,
    },
}

impl ValidatedDatabase {
    /// Whether the pods install the TLS hook.
    pub fn tls(&self) -> bool {
        matches!(self, Self::Postgresql { tls: true, .. })
    }

    /// The object with the database's CA certificate, if one is named.
    pub fn ca(&self) -> Option<&CaSource> {
        match self {
            Self::Postgresql { ca, .. } => ca.as_ref(),
            Self::Generic { .. } => None,
        }
    }
}

/// A Secret or ConfigMap holding `ca.crt`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaSource {
    /// Secret or ConfigMap.
    pub object: KeySource,
    /// Its name, in the cluster's namespace.
    pub name: String,
}

/// The spec's field that names the CA, for messages.
pub const CA_FIELD: &str = "clusterConfig.metadataDatabase.postgresql.tls.caCertificate";

/// Checks `database`: exactly one variant, and a TLS setting that means what it says.
pub fn database(
    database: &MetadataDatabase,
) -> Result<(ValidatedDatabase, DatabaseSetting), ReconcileError> {
    match (&database.postgresql, &database.generic) {
        (Some(postgresql), None) => {
            let host = uri_host(&postgresql.host)?;
            uri_database(&postgresql.database)?;
            let (ca, tls) = match &postgresql.tls {
                Some(tls) => {
                    let (ca, setting) = tls_setting(tls)?;
                    (ca, Some(setting))
                }
                None => (None, None),
            };
            Ok((
                ValidatedDatabase::Postgresql {
                    credentials_secret: postgresql.credentials_secret.clone(),
                    tls: tls.is_some(),
                    ca,
                },
                DatabaseSetting::Postgresql {
                    host,
                    port: postgresql.port,
                    database: postgresql.database.clone(),
                    driver: database.driver,
                    tls,
                },
            ))
        }
        (None, Some(generic)) => Ok((
            ValidatedDatabase::Generic {
                uri_secret: generic.uri_secret.clone(),
            },
            DatabaseSetting::FromEnvironment,
        )),
        (postgresql, _) => Err(ReconcileError::invalid_spec(
            "InvalidMetadataDatabase",
            format!(
                "clusterConfig.metadataDatabase must name exactly one of postgresql or \
                 generic, but names {}",
                if postgresql.is_some() {
                    "both"
                } else {
                    "neither"
                }
            ),
        )),
    }
}

/// `host` as the URI carries it, checked: a DNS name, an IPv4 address, or an IPv6
/// address in brackets (`[fd00::10]`), as a URL must write one. The spec's strings are
/// written into the URI as they are, and the TLS hook finds the metadata database's
/// connections by comparing them with what SQLAlchemy parses back. A character the URI
/// reads as syntax (`?`, `/`, `@`, `#`) would change where the pods connect, or that
/// parse, so the connection would silently go without the spec's TLS (reliability
/// review, I-3).
fn uri_host(host: &str) -> Result<String, ReconcileError> {
    let name = |text: &str| {
        !text.is_empty()
            && text
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
    };
    let ipv6 = |text: &str| {
        text.strip_prefix('[')
            .and_then(|rest| rest.strip_suffix(']'))
            .is_some_and(|inner| inner.parse::<std::net::Ipv6Addr>().is_ok())
    };
    if name(host) || ipv6(host) {
        return Ok(host.to_owned());
    }
    Err(ReconcileError::invalid_spec(
        "InvalidMetadataDatabase",
        format!(
            "clusterConfig.metadataDatabase.postgresql.host {host:?} is not a host name, an \
             IPv4 address or an IPv6 address in brackets (such as [fd00::10]): the database \
             URI would read part of it as something else"
        ),
    ))
}

/// The characters a database name must not have: the URI would end its path at them
/// (`?`, `#`), read them as another part (`/`, `@`, `[`, `]`) or decode them (`%`).
const URI_SYNTAX: [char; 7] = ['?', '#', '/', '@', '[', ']', '%'];

/// Checks that `database`, written into the URI's path as it is, reads back the same.
fn uri_database(database: &str) -> Result<(), ReconcileError> {
    let refused = database
        .chars()
        .find(|c| URI_SYNTAX.contains(c) || c.is_whitespace() || c.is_control());
    match (database.is_empty(), refused) {
        (false, None) => Ok(()),
        (true, _) => Err(ReconcileError::invalid_spec(
            "InvalidMetadataDatabase",
            "clusterConfig.metadataDatabase.postgresql.database is empty".to_owned(),
        )),
        (false, Some(character)) => Err(ReconcileError::invalid_spec(
            "InvalidMetadataDatabase",
            format!(
                "clusterConfig.metadataDatabase.postgresql.database {database:?} has \
                 {character:?}, which the database URI would read as part of its syntax \
                 (the pods would connect elsewhere, or without the spec's TLS); rename the \
                 database or use metadataDatabase.generic with a URI of your own"
            ),
        )),
    }
}

/// The CA's object and the file's setting. A CA with a mode that never checks one is
/// refused: it would look like verification where there is none.
fn tls_setting(
    tls: &DatabaseTls,
) -> Result<(Option<CaSource>, DatabaseTlsSetting), ReconcileError> {
    let ca = tls
        .ca_certificate
        .as_ref()
        .map(|ca| ca_source(ca, CA_FIELD, "InvalidDatabaseTls"))
        .transpose()?;
    let verifies = matches!(tls.ssl_mode, SslMode::VerifyCa | SslMode::VerifyFull);
    if ca.is_some() && !verifies {
        return Err(ReconcileError::invalid_spec(
            "InvalidDatabaseTls",
            format!(
                "{CA_FIELD} is set, but sslMode {} never checks the server's certificate; \
                 use verify-full (or verify-ca), or remove the CA",
                tls.ssl_mode
            ),
        ));
    }
    let setting = DatabaseTlsSetting {
        ssl_mode: tls.ssl_mode,
        ca_file: ca.as_ref().map(|_| format!("{DATABASE_CA_DIR}/{CA_KEY}")),
    };
    Ok((ca, setting))
}

/// The object `ca` names, at `field`; naming both or neither is `reason`.
pub(super) fn ca_source(
    ca: &CaCertificate,
    field: &str,
    reason: &'static str,
) -> Result<CaSource, ReconcileError> {
    match (&ca.secret_name, &ca.config_map_name) {
        (Some(name), None) => Ok(CaSource {
            object: KeySource::Secret,
            name: name.clone(),
        }),
        (None, Some(name)) => Ok(CaSource {
            object: KeySource::ConfigMap,
            name: name.clone(),
        }),
        (secret, _) => Err(ReconcileError::invalid_spec(
            reason,
            format!(
                "{field} must name exactly one of secretName or configMapName, but names {}",
                if secret.is_some() { "both" } else { "neither" }
            ),
        )),
    }
}

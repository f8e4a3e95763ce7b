//! The property names Trino 483 documents, per file and connector: the checked list
//! every key the operator generates must be in (a test renders every file and
//! connector and fails on a key missing here). Trino refuses to start on a
//! `config.properties` or catalog key that the running release does not use, so a key
//! the operator writes must be both documented and still present in the pinned
//! release.
//!
//! Built from the Trino documentation (`docs/src/main/sphinx/` in the Trino
//! repository) and checked against the release notes 470 to 483 for renames and
//! removals. The page of each group is named on it; `docs/trino.md` lists them too.
//! Only names the operator can generate are listed: this is a guard, not a mirror of
//! the documentation.

/// `config.properties`: `installation/deployment.md` (coordinator, discovery),
/// `admin/properties-http-server.md` (ports, HTTPS, shared secret),
/// `security/internal-communication.md`, `security/authentication-types.md`,
/// `security/password-file.md` (several password authenticators), `security/oauth2.md`,
/// `admin/properties-node-scheduler.md`, `admin/properties-resource-management.md`,
/// `admin/graceful-shutdown.md`, `security/built-in-system-access-control.md`,
/// `admin/openmetrics.md`.
pub const CONFIG_PROPERTIES: &[&str] = &[
    "coordinator",
    "node-scheduler.include-coordinator",
    "http-server.http.port",
    "discovery.uri",
    "internal-communication.shared-secret",
    "access-control.config-files",
    "query.max-memory",
    "query.max-memory-per-node",
    "shutdown.grace-period",
    "metrics.jmx-object-names",
    "http-server.process-forwarded",
    "http-server.http.enabled",
    "http-server.https.enabled",
    "http-server.https.port",
    "http-server.https.keystore.path",
    "internal-communication.https.required",
    "internal-communication.https.truststore.path",
    "http-server.authentication.type",
    "password-authenticator.config-files",
    "http-server.authentication.oauth2.issuer",
    "http-server.authentication.oauth2.client-id",
    "http-server.authentication.oauth2.client-secret",
    "http-server.authentication.oauth2.principal-field",
    "http-server.authentication.oauth2.scopes",
    "http-server.authentication.oauth2.oidc.use-userinfo-endpoint",
    "http-server.authentication.oauth2.additional-audiences",
    "oauth2-jwk.http-client.trust-store-path",
    "web-ui.authentication.type",
];

/// `node.properties`: `installation/deployment.md`.
pub const NODE_PROPERTIES: &[&str] = &[
    "node.environment",
    "node.id",
    "node.data-dir",
    "node.internal-address-source",
];

/// `access-control.properties`: `security/file-system-access-control.md`.
pub const ACCESS_CONTROL_PROPERTIES: &[&str] = &[
    "access-control.name",
    "security.config-file",
    "security.refresh-period",
];

/// A file password authenticator's properties: `security/password-file.md`.
pub const PASSWORD_AUTHENTICATOR_PROPERTIES: &[&str] = &[
    "password-authenticator.name",
    "file.password-file",
    "file.refresh-period",
];

/// The LDAP password authenticator's properties: `security/ldap.md`.
pub const LDAP_AUTHENTICATOR_PROPERTIES: &[&str] = &[
    "password-authenticator.name",
    "ldap.url",
    "ldap.user-bind-pattern",
    "ldap.user-base-dn",
    "ldap.group-auth-pattern",
    "ldap.ssl.truststore.path",
    "ldap.allow-insecure",
];

/// Top-level sections of the access control rules file:
/// `security/file-system-access-control.md`.
pub const ACCESS_CONTROL_RULE_SECTIONS: &[&str] = &[
    "catalogs",
    "schemas",
    "tables",
    "system_session_properties",
    "catalog_session_properties",
    "queries",
    "impersonation",
    "principals",
    "system_information",
    "functions",
    "procedures",
    "authorization",
];

/// `connector.name` values of the typed connectors: `connector/*.md`.
pub const TYPED_CONNECTORS: &[&str] = &[
    "tpch",
    "tpcds",
    "memory",
    "blackhole",
    "postgresql",
    "hive",
    "iceberg",
];

/// The catalog keys each typed connector may be written with, `connector.name`
/// included.
pub fn catalog_properties(connector: &str) -> &'static [&'static str] {
    match connector {
        // connector/tpch.md
        "tpch" => &[
            "connector.name",
            "tpch.splits-per-node",
            "tpch.column-naming",
        ],
        // connector/tpcds.md
        "tpcds" => &["connector.name", "tpcds.splits-per-node"],
        // connector/memory.md
        "memory" => &["connector.name", "memory.max-data-per-node"],
        // connector/blackhole.md
        "blackhole" => &["connector.name"],
        // connector/postgresql.md (the JDBC connection properties)
        "postgresql" => &[
            "connector.name",
            "connection-url",
            "connection-user",
            "connection-password",
        ],
        // connector/hive.md, object-storage/metastores.md (thrift metastore)
        "hive" => &["connector.name", "hive.metastore.uri"],
        // connector/iceberg.md, object-storage/metastores.md (hive_metastore, REST and
        // JDBC catalogs)
        "iceberg" => &[
            "connector.name",
            "iceberg.catalog.type",
            "hive.metastore.uri",
            "iceberg.rest-catalog.uri",
            "iceberg.rest-catalog.warehouse",
            "iceberg.jdbc-catalog.driver-class",
            "iceberg.jdbc-catalog.connection-url",
            "iceberg.jdbc-catalog.connection-user",
            "iceberg.jdbc-catalog.connection-password",
            "iceberg.jdbc-catalog.catalog-name",
            "iceberg.jdbc-catalog.default-warehouse-dir",
        ],
        _ => &[],
    }
}

/// Keys removed or made defunct between releases 470 and 483, which the operator must
/// never write: the release notes of 470, 477, 480, 481, 482 and 483.
pub const REMOVED_PROPERTIES: &[&str] = &[
    "optimizer.optimize-hash-generation",
    "task.statistics-cpu-timer-enabled",
    "enable-large-dynamic-filters",
    "hive.s3.aws-access-key",
    "hive.max-initial-splits",
    "hive.max-initial-split-size",
    "iceberg.rest-catalog.sigv4-enabled",
    "iceberg.extended-statistics.enabled",
    "s3.use-web-identity-token-credentials-provider",
    "tpch.produce-pages",
];

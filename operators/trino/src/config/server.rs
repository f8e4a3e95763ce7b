//! The files every Trino node reads from `/etc/trino`: `config.properties`,
//! `node.properties`, `jvm.config`, `log.properties`, and the file-based system access
//! control that lets the preStop hook shut a worker down.
//!
//! Trino refuses to start when `config.properties` holds a property nothing in the
//! running release uses, so every key written here is in
//! [`known_properties`](super::known_properties) for the pinned release, which a test
//! checks. The documentation page each key comes from is listed in `docs/trino.md`.

use std::collections::BTreeMap;

use strata_model::files::java_properties;
use strata_model::files::overrides::OwnedKey;

use super::security::SecuritySettings;

/// `/etc/trino`: where the launcher (`--etc-dir`) finds every file.
pub const ETC_DIR: &str = "/etc/trino";
/// `node.data-dir`: the launcher's working directory (pid file, heap dumps).
pub const DATA_DIR: &str = "/data/trino";
/// The HTTP port of every node.
pub const HTTP_PORT: u16 = 8080;
/// The variable that carries `internal-communication.shared-secret`.
pub const SHARED_SECRET_ENV: &str = "TRINO_INTERNAL_SHARED_SECRET";
/// The user the preStop hook names in `X-Trino-User` when it asks a worker to shut
/// down; the access control rules allow exactly this user to do so.
pub const SHUTDOWN_USER: &str = "graceful-shutdown";
/// The JVM's own beans `/metrics` adds to Trino's (`metrics.jmx-object-names`, `|`
/// between names): the heap and the garbage collectors, which dashboards show beside
/// Trino's memory pools. A `configOverrides` entry replaces the list.
pub const JVM_METRICS_BEANS: &str = "java.lang:type=Memory|java.lang:type=GarbageCollector,name=*";
/// The user Prometheus reads `/metrics` as: the access control rules let it read
/// system information, which the endpoint needs, and nothing else.
pub const METRICS_USER: &str = "strata-metrics";
/// The operator's own users, which the users Secret may not name.
pub const OPERATOR_USERS: [&str; 2] = [SHUTDOWN_USER, METRICS_USER];
/// File names in the role group ConfigMap.
pub const CONFIG_PROPERTIES: &str = "config.properties";
/// `node.properties`.
pub const NODE_PROPERTIES: &str = "node.properties";
/// `jvm.config`.
pub const JVM_CONFIG: &str = "jvm.config";
/// `log.properties`.
pub const LOG_PROPERTIES: &str = "log.properties";
/// The system access control's properties file.
pub const ACCESS_CONTROL_PROPERTIES: &str = "access-control.properties";
/// The rules of the file-based system access control, from the cluster's access
/// control ConfigMap.
pub const ACCESS_CONTROL_RULES: &str = "access-control-rules.json";

/// Keys of `config.properties` the operator owns; an override of one is refused.
pub const RESERVED_CONFIG_PROPERTIES: [OwnedKey; 13] = [
    OwnedKey::exact("coordinator", "it follows the role"),
    OwnedKey::with_subkeys(
        "http-server.https",
        "HTTPS follows clusterConfig.tls and the operator's certificates",
    ),
    OwnedKey::with_subkeys(
        "internal-communication.https",
        "internal TLS follows clusterConfig.tls",
    ),
    OwnedKey::exact(
        "http-server.authentication.type",
        "authentication follows clusterConfig.authentication",
    ),
    OwnedKey::exact(
        "node-scheduler.include-coordinator",
        "the coordinator schedules, the workers run splits",
    ),
    OwnedKey::with_subkeys(
        "http-server.http",
        "the Services, the probes and the preStop hook use port 8080, or HTTPS on 8443 \
         with clusterConfig.tls",
    ),
    OwnedKey::exact(
        "discovery.uri",
        "it is the coordinator role group's headless Service",
    ),
    OwnedKey::exact(
        "internal-communication.shared-secret",
        "it comes from the cluster's internal Secret",
    ),
    OwnedKey::exact(
        "access-control.config-files",
        "its rules let the preStop hook shut a worker down; set \
         clusterConfig.authorization.rulesConfigMap for your own",
    ),
    OwnedKey::exact(
        "password-authenticator.config-files",
        "authentication follows clusterConfig.authentication",
    ),
    OwnedKey::exact(
        "shutdown.grace-period",
        "set config.shutdownGracePeriod instead",
    ),
    OwnedKey::exact("query.max-memory", "set config.queryMaxMemory instead"),
    OwnedKey::exact(
        "query.max-memory-per-node",
        "set config.queryMaxMemoryPerNode instead",
    ),
];
/// Keys of `node.properties` the operator owns.
pub const RESERVED_NODE_PROPERTIES: [OwnedKey; 4] = [
    OwnedKey::exact(
        "node.internal-address-source",
        "with TLS each node is known by the FQDN its certificate covers",
    ),
    OwnedKey::exact(
        "node.environment",
        "every node of the cluster must share the cluster's name",
    ),
    OwnedKey::exact("node.id", "each pod's name is its node id"),
    OwnedKey::exact("node.data-dir", "it is the pod's data volume"),
];
/// `jvm.config` options the operator owns: the heap follows `resources.memory.limit`
/// and `heapPercent`, whatever flag would size it. (A `-D` option naming a reserved
/// property is refused too: a system property wins over `config.properties`.)
pub const RESERVED_JVM_OPTIONS: [&str; 7] = [
    "-Xmx",
    "-Xms",
    "-XX:MaxHeapSize",
    "-XX:InitialHeapSize",
    "-XX:MaxRAM",
    "-XX:MaxRAMPercentage",
    "-XX:InitialRAMPercentage",
];

/// JVM options of the pinned release's deployment guide (Java 25 era), without the
/// heap size, which follows the memory limit instead of `MaxRAMPercentage`, and with
/// `-XX:+UseG1GC` named: the JVM picks G1 by itself only with 2 or more CPUs and
/// about 1792 MiB or more, and the operator accepts less (`cpu.max: 1`, 1280Mi), where
/// it would run SerialGC, against Trino's recommendation.
pub const RECOMMENDED_JVM_OPTIONS: [&str; 13] = [
    "-server",
    "-XX:+UseG1GC",
    "-XX:G1HeapRegionSize=32M",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-XX:+ExitOnOutOfMemoryError",
    "-XX:+HeapDumpOnOutOfMemoryError",
    "-XX:-OmitStackTraceInFastThrow",
    "-XX:ReservedCodeCacheSize=512M",
    "-XX:PerMethodRecompilationCutoff=10000",
    "-XX:PerBytecodeRecompilationCutoff=10000",
    "-Djdk.attach.allowAttachSelf=true",
    "-Djdk.nio.maxCachedBufferSize=2000000",
    "--add-modules=jdk.incubator.vector",
];

/// The checked settings of one role group's nodes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeSettings {
    /// Whether the nodes are coordinators.
    pub coordinator: bool,
    /// `discovery.uri`: the coordinator role group's headless Service.
    pub discovery_uri: String,
    /// `node.environment`.
    pub environment: String,
    /// The JVM heap in MiB.
    pub heap_mib: u64,
    /// `-XX:MaxDirectMemorySize` in MiB.
    pub direct_memory_mib: u64,
    /// `query.max-memory` as a Trino size, coordinators only.
    pub query_max_memory: Option<String>,
    /// `query.max-memory-per-node` as a Trino size.
    pub query_max_memory_per_node: Option<String>,
    /// `shutdown.grace-period` in seconds, workers only.
    pub shutdown_grace_period_seconds: Option<i64>,
    /// TLS and authentication.
    pub security: SecuritySettings,
}

/// `config.properties`: the operator's keys, then the overrides.
pub fn config_properties(settings: &NodeSettings, overrides: &BTreeMap<String, String>) -> String {
    let mut entries: Vec<(&str, String)> = vec![
        ("coordinator", settings.coordinator.to_string()),
        ("discovery.uri", settings.discovery_uri.clone()),
        (
            "internal-communication.shared-secret",
            format!("${{ENV:{SHARED_SECRET_ENV}}}"),
        ),
        (
            "access-control.config-files",
            format!("{ETC_DIR}/{ACCESS_CONTROL_PROPERTIES}"),
        ),
    ];
    entries.extend(
        settings
            .security
            .config_entries(ETC_DIR, settings.coordinator),
    );
    if settings.coordinator {
        entries.push(("node-scheduler.include-coordinator", "false".to_owned()));
    }
    if let Some(size) = &settings.query_max_memory {
        entries.push(("query.max-memory", size.clone()));
    }
    if let Some(size) = &settings.query_max_memory_per_node {
        entries.push(("query.max-memory-per-node", size.clone()));
    }
    if let Some(seconds) = settings.shutdown_grace_period_seconds {
        entries.push(("shutdown.grace-period", format!("{seconds}s")));
    }
    entries.push(("metrics.jmx-object-names", JVM_METRICS_BEANS.to_owned()));
    properties(entries, overrides)
}

/// `node.properties`. `node.id` is not here: every pod of a role group shares this
/// file, so the launcher gets `-Dnode.id=<pod name>` on its command line.
pub fn node_properties(settings: &NodeSettings, overrides: &BTreeMap<String, String>) -> String {
    let mut entries = vec![
        ("node.environment", settings.environment.clone()),
        ("node.data-dir", DATA_DIR.to_owned()),
    ];
    entries.extend(settings.security.node_entries());
    properties(entries, overrides)
}

/// `jvm.config`: the recommended options with the heap, then the overrides (an option
/// with an empty value is written alone, otherwise as `option=value`).
pub fn jvm_config(settings: &NodeSettings, overrides: &BTreeMap<String, String>) -> String {
    let mut lines: Vec<String> = RECOMMENDED_JVM_OPTIONS
        .iter()
        .map(|option| (*option).to_owned())
        .collect();
    lines.insert(1, format!("-Xmx{}m", settings.heap_mib));
    lines.insert(
        2,
        format!("-XX:MaxDirectMemorySize={}m", settings.direct_memory_mib),
    );
    for (option, value) in overrides {
        lines.push(if value.is_empty() {
            option.clone()
        } else {
            format!("{option}={value}")
        });
    }
    let mut file = lines.join("\n");
    file.push('\n');
    file
}

/// `log.properties`: `io.trino` at INFO, then the overrides (logger to level).
pub fn log_properties(overrides: &BTreeMap<String, String>) -> String {
    properties(vec![("io.trino", "INFO".to_owned())], overrides)
}

/// `access-control.properties`: the file-based system access control, whose rules
/// ([`super::access_control`]) come from the cluster's access control ConfigMap and are
/// read again every [`RULES_REFRESH_PERIOD`], so that a change needs no restart.
pub fn access_control_properties() -> String {
    properties(
        vec![
            ("access-control.name", "file".to_owned()),
            (
                "security.config-file",
                format!("{ETC_DIR}/{ACCESS_CONTROL_RULES}"),
            ),
            ("security.refresh-period", RULES_REFRESH_PERIOD.to_owned()),
        ],
        &BTreeMap::new(),
    )
}

/// The password authenticators' properties files, by file name.
pub fn authenticator_files(settings: &SecuritySettings) -> Vec<(String, String)> {
    settings
        .authenticators
        .iter()
        .map(|authenticator| {
            (
                authenticator.file_name().to_owned(),
                properties(authenticator.properties(), &BTreeMap::new()),
            )
        })
        .collect()
}

/// How often the access control reads its rules again.
pub const RULES_REFRESH_PERIOD: &str = "10s";

fn properties(entries: Vec<(&str, String)>, overrides: &BTreeMap<String, String>) -> String {
    let mut merged: Vec<(String, String)> = entries
        .into_iter()
        .map(|(key, value)| (key.to_owned(), value))
        .collect();
    for (key, value) in overrides {
        match merged.iter_mut().find(|(k, _)| k == key) {
            Some(entry) => entry.1.clone_from(value),
            None => merged.push((key.clone(), value.clone())),
        }
    }
    java_properties::write(
        "",
        merged
            .iter()
            .map(|(key, value)| (key.as_str(), value.as_str())),
    )
    // Keys are never empty: the operator's are constants, overrides are checked.
    .unwrap_or_default()
}

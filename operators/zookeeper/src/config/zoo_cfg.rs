//! Rendering of ZooKeeper's `zoo.cfg`.
//!
//! Decisions recorded here:
//! - **One volume for snapshots and transaction logs.** `dataDir` is `/data` (the pod's PVC)
//!   and no `dataLogDir` is set, so ZooKeeper keeps its transaction log next to the snapshots.
//!   A separate log directory only pays off on a separate disk; a second PVC per pod would
//!   double the storage objects users must size for no gain on shared network storage. Users
//!   who mount a dedicated volume can still set `dataLogDir` through config overrides.
//! - **Admin server off by default.** ZooKeeper's Jetty admin server binds port 8080 on all
//!   interfaces and answers unauthenticated commands. Probes use four-letter words on the
//!   client port instead, so the admin server is opt-in. With TLS on there is no plaintext
//!   client port, and the admin server serves the probes on loopback ([`super::tls`]).
//! - **Four-letter words** `conf`, `isro`, `mntr`, `ruok` and `srvr` are whitelisted: probes
//!   need `ruok` and `srvr`, operators debugging an ensemble need the rest, and none of them
//!   changes server state. An ensemble exposed outside the cluster (a node port or a load
//!   balancer) keeps only `isro`, `ruok` and `srvr`: ZooKeeper answers four-letter words
//!   on every client connection, TLS or not and before any authentication, and `conf` and
//!   `mntr` tell whoever asks the servers' layout, directories and load (security
//!   review, finding 5). `configOverrides` can still name them.
//! - **Autopurge on**, keeping 3 snapshots and purging every 24 hours, so a long-lived PVC does
//!   not fill up with old snapshots and logs (ZooKeeper's own default keeps everything).
//! - **Overrides win over everything**, generated `server.N` lines included: they are the
//!   user's escape hatch for settings the CRD does not model.
//!
//! Output is deterministic: plain keys in alphabetical order, then `server.N` lines in
//! ascending numeric id order (so `server.10` follows `server.9`).

use std::collections::BTreeMap;

use strata_model::files::java_properties::{self, PropertiesError};
use strata_model::files::overrides::{self, OverrideError, OwnedKey};

use super::retention::Retention;
use super::server_ids::{
    Ensemble, MAX_SERVER_ID, MAX_SERVER_ID_WITH_EXTENDED_TYPES, RoleGroupServers, ServerIdError,
};
use super::tls::TlsSettings;
use crate::crd::config::{DEFAULT_INIT_LIMIT, DEFAULT_SYNC_LIMIT, DEFAULT_TICK_TIME_MS};

/// Port clients connect to.
pub const CLIENT_PORT: u16 = 2181;
/// Port followers use to connect to the leader.
pub const QUORUM_PORT: u16 = 2888;
/// Port used for leader election.
pub const LEADER_ELECTION_PORT: u16 = 3888;
/// Port of the Prometheus metrics provider when it is enabled.
pub const METRICS_PORT: u16 = 7000;
/// Port of the admin server when it is enabled.
pub const ADMIN_SERVER_PORT: u16 = 8080;
/// Where the pod's PVC is mounted and ZooKeeper keeps snapshots, transaction logs and `myid`.
pub const DATA_DIR: &str = "/data";
/// Four-letter words the client port answers, sorted.
pub const FOUR_LETTER_WORDS: [&str; 5] = ["conf", "isro", "mntr", "ruok", "srvr"];
/// The four-letter words of an ensemble exposed outside the cluster: the probes' and
/// `isro`, none of which tells more than whether a server serves, and how.
pub const EXPOSED_FOUR_LETTER_WORDS: [&str; 3] = ["isro", "ruok", "srvr"];
/// Class name of the Prometheus metrics provider shipped in the official image's `lib/`.
pub const PROMETHEUS_METRICS_PROVIDER: &str =
    "org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider";

/// Everything `zoo.cfg` is rendered from; plain data so the controller, `render` and tests
/// build it the same way.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZooCfgInput {
    /// Basic time unit in milliseconds (`tickTime`).
    pub tick_time_ms: u32,
    /// Ticks a follower may take to connect and sync to the leader (`initLimit`).
    pub init_limit_ticks: u32,
    /// Ticks a follower may lag behind the leader (`syncLimit`).
    pub sync_limit_ticks: u32,
    /// Port of the admin server, or `None` to disable it.
    pub admin_server_port: Option<u16>,
    /// Port of the Prometheus metrics endpoint, or `None` to leave the provider out (needed
    /// where the provider jar is missing, such as Debian's package).
    pub prometheus_metrics_port: Option<u16>,
    /// Purging and sizing of snapshots and transaction logs.
    pub retention: Retention,
    /// Every role group of the ensemble.
    pub role_groups: Vec<RoleGroupServers>,
    /// Whether this file is for observers (`peerType=observer`).
    pub observer: bool,
    /// User overrides, applied last.
    pub overrides: BTreeMap<String, String>,
    /// TLS for clients and the quorum, or `None` for plaintext.
    pub tls: Option<TlsSettings>,
    /// Whether the client Service is reachable from outside the cluster.
    pub exposed: bool,
}

impl ZooCfgInput {
    /// The product defaults of [`crate::crd::config`] for timing (defined there once),
    /// metrics on port 7000, admin server off, and [`Retention::DEFAULT`].
    pub fn new(role_groups: Vec<RoleGroupServers>) -> Self {
        Self {
            tick_time_ms: DEFAULT_TICK_TIME_MS,
            init_limit_ticks: DEFAULT_INIT_LIMIT,
            sync_limit_ticks: DEFAULT_SYNC_LIMIT,
            admin_server_port: None,
            prometheus_metrics_port: Some(METRICS_PORT),
            retention: Retention::DEFAULT,
            observer: false,
            role_groups,
            overrides: BTreeMap::new(),
            tls: None,
            exposed: false,
        }
    }
}

/// Why `zoo.cfg` could not be rendered; every variant needs the user to change the spec.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ZooCfgError {
    /// The role groups' server ids collide or are out of range.
    #[error(transparent)]
    ServerIds(#[from] ServerIdError),
    /// An override key would not survive Java's properties parser intact.
    #[error(
        "config override key {key:?} is invalid: keys may only contain ASCII letters, digits, \
         '.', '_' and '-'"
    )]
    InvalidOverrideKey {
        /// The rejected key.
        key: String,
    },
    /// The properties writer refused an entry.
    #[error(transparent)]
    Properties(#[from] PropertiesError),
    /// An override of a key the operator owns, or of more than one line.
    #[error(transparent)]
    Overrides(#[from] OverrideError),
}

/// A rendered `zoo.cfg`, kept as key/value pairs so callers can read back effective settings
/// (such as `dataDir` for the myid script) instead of guessing what the overrides changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZooCfg {
    entries: BTreeMap<String, String>,
    ensemble: Ensemble,
    text: String,
}

impl ZooCfg {
    /// Validates server ids and overrides, then computes the effective settings.
    pub fn render(input: &ZooCfgInput) -> Result<Self, ZooCfgError> {
        validate_overrides(&input.overrides, input.tls.is_some())?;
        let ensemble = Ensemble::new(&input.role_groups, server_id_limit(&input.overrides))?;
        let mut entries = base_entries(input);
        // With TLS on, there is no plaintext port for a server line to name; the
        // secure one is not named there either: ZooKeeper publishes a server line's
        // client address in `/zookeeper/config`, and clients that follow the ensemble
        // (Curator's) would take it for the plaintext one.
        let client_address = match input.tls {
            Some(_) => String::new(),
            None => format!(";{CLIENT_PORT}"),
        };
        for server in ensemble.servers() {
            entries.insert(
                format!("server.{}", server.id),
                format!(
                    "{}:{QUORUM_PORT}:{LEADER_ELECTION_PORT}{}{client_address}",
                    server.fqdn,
                    if server.observer { ":observer" } else { "" }
                ),
            );
        }
        if let Some(tls) = input.tls {
            entries.extend(tls.entries());
        }
        entries.extend(input.overrides.clone());
        let text = properties_text(&entries)?;
        Ok(Self {
            entries,
            ensemble,
            text,
        })
    }

    /// The effective value of a key.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries.get(key).map(String::as_str)
    }

    /// The effective data directory, where `myid` must be written.
    pub fn data_dir(&self) -> &str {
        self.get("dataDir").unwrap_or(DATA_DIR)
    }

    /// The validated servers the `server.N` lines were generated from.
    pub fn ensemble(&self) -> &Ensemble {
        &self.ensemble
    }

    /// The file content in Java properties syntax: plain keys alphabetically, then the
    /// `server.N` lines by numeric id, through the shared properties writer.
    pub fn to_properties(&self) -> &str {
        &self.text
    }
}

fn properties_text(entries: &BTreeMap<String, String>) -> Result<String, PropertiesError> {
    let mut keys: Vec<&String> = entries.keys().collect();
    keys.sort_by_key(|key| KeyOrder::of(key));
    java_properties::write(
        "Rendered by the Strata ZooKeeper operator; edit the ZookeeperCluster instead.",
        keys.into_iter().map(|key| {
            (
                key.as_str(),
                entries.get(key).map(String::as_str).unwrap_or_default(),
            )
        }),
    )
}

fn base_entries(input: &ZooCfgInput) -> BTreeMap<String, String> {
    let mut entries: BTreeMap<String, String> = [
        ("tickTime", input.tick_time_ms.to_string()),
        ("initLimit", input.init_limit_ticks.to_string()),
        ("syncLimit", input.sync_limit_ticks.to_string()),
        ("dataDir", DATA_DIR.to_owned()),
        (
            "4lw.commands.whitelist",
            if input.exposed {
                EXPOSED_FOUR_LETTER_WORDS.join(",")
            } else {
                FOUR_LETTER_WORDS.join(",")
            },
        ),
        (
            "admin.enableServer",
            input.admin_server_port.is_some().to_string(),
        ),
    ]
    .into_iter()
    .chain(input.retention.entries())
    .map(|(key, value)| (key.to_owned(), value))
    .collect();
    if input.tls.is_none() {
        entries.insert("clientPort".to_owned(), CLIENT_PORT.to_string());
    }
    if let Some(port) = input.admin_server_port {
        entries.insert("admin.serverPort".to_owned(), port.to_string());
    }
    if input.observer {
        entries.insert("peerType".to_owned(), "observer".to_owned());
    }
    if let Some(port) = input.prometheus_metrics_port {
        entries.insert(
            "metricsProvider.className".to_owned(),
            PROMETHEUS_METRICS_PROVIDER.to_owned(),
        );
        entries.insert("metricsProvider.httpPort".to_owned(), port.to_string());
    }
    entries
}

/// ZooKeeper refuses id 255 once TTL nodes (extended types) are enabled.
fn server_id_limit(overrides: &BTreeMap<String, String>) -> u32 {
    let extended = overrides
        .get("extendedTypesEnabled")
        .is_some_and(|value| value.trim().eq_ignore_ascii_case("true"));
    if extended {
        MAX_SERVER_ID_WITH_EXTENDED_TYPES
    } else {
        MAX_SERVER_ID
    }
}

/// Keys the operator sets in `zoo.cfg` and builds other objects or steps around, and
/// keys whose values would take the membership or the leader lookup out of its hands
/// (reliability review, I-7).
const OWNED_KEYS: [OwnedKey; 8] = [
    OwnedKey::exact(
        "clientPort",
        "the client Service, the container port, the probes and every discovery \
         ConfigMap use port 2181",
    ),
    OwnedKey::exact(
        "metricsProvider.httpPort",
        "the metrics Service, its Prometheus scrape annotation and the container port use \
         port 7000",
    ),
    OwnedKey::with_subkeys(
        "server",
        "the operator writes one server line per pod and changes the membership one \
         server at a time; set replicas and role groups instead",
    ),
    OwnedKey::exact(
        "metricsProvider.className",
        "the operator finds the leader on the Prometheus metrics provider's endpoint \
         (leader_uptime) to restart it last; another provider would make every roll \
         restart the servers by id, and a growth could stall",
    ),
    OwnedKey::exact(
        "peerType",
        "set peerType in the role group's config: the operator plans the quorum from it, \
         and a server that votes while the others count it as an observer (or the \
         reverse) breaks the majority it plans with",
    ),
    OwnedKey::exact(
        "dynamicConfigFile",
        "the operator writes the membership into zoo.cfg and changes it one server at a \
         time; a dynamic configuration file would take it out of its hands",
    ),
    OwnedKey::exact(
        "reconfigEnabled",
        "the operator changes the membership by rolling the servers, and reconfig would \
         change it behind its back",
    ),
    OwnedKey::exact(
        "standaloneEnabled",
        "the operator runs one server in standalone mode and grows it by restarts, which \
         this key changes",
    ),
];

/// Keys `clusterConfig.tls` sets while it is on. While it is off, users who run TLS
/// their own way may set them.
const TLS_OWNED_KEYS: [OwnedKey; 6] = [
    OwnedKey::exact(
        "secureClientPort",
        "clusterConfig.tls sets it: the Services, the container port and the discovery \
         ConfigMaps use port 2282",
    ),
    OwnedKey::with_subkeys(
        "ssl",
        "clusterConfig.tls sets the key and trust stores from its Secret and the client \
         authentication",
    ),
    OwnedKey::exact("sslQuorum", "clusterConfig.tls turns quorum TLS on"),
    OwnedKey::exact(
        "serverCnxnFactory",
        "clusterConfig.tls needs Netty's, the only one that serves TLS",
    ),
    OwnedKey::exact(
        "clientPortAddress",
        "clusterConfig.tls turns the plaintext client port off",
    ),
    OwnedKey::with_subkeys(
        "admin",
        "clusterConfig.tls binds the admin server to 127.0.0.1 for the probes, with its \
         snapshot and restore commands off: a port-forward reaches the pod's loopback",
    ),
];

fn validate_overrides(overrides: &BTreeMap<String, String>, tls: bool) -> Result<(), ZooCfgError> {
    overrides::check("zoo.cfg", overrides, &OWNED_KEYS)?;
    if tls {
        overrides::check("zoo.cfg", overrides, &TLS_OWNED_KEYS)?;
    }
    let key_ok = |key: &String| {
        key.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    };
    match overrides.keys().find(|key| !key_ok(key)) {
        Some(key) => Err(ZooCfgError::InvalidOverrideKey { key: key.clone() }),
        None => Ok(()),
    }
}

/// Sort order of keys: plain keys alphabetically, then `server.N` by numeric id.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum KeyOrder<'a> {
    Plain(&'a str),
    Server(u64, &'a str),
}

impl<'a> KeyOrder<'a> {
    fn of(key: &'a str) -> Self {
        key.strip_prefix("server.")
            .and_then(|id| id.parse::<u64>().ok())
            .map_or(Self::Plain(key), |id| Self::Server(id, key))
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use rstest::rstest;

    use super::*;
    use crate::config::server_ids::tests::group;

    fn overrides(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn three_servers_render_the_full_file() -> Result<(), ZooCfgError> {
        let cfg = ZooCfg::render(&ZooCfgInput::new(vec![group("default", 3, 1)]))?;
        let expected = "\
# Rendered by the Strata ZooKeeper operator; edit the ZookeeperCluster instead.
4lw.commands.whitelist=conf,isro,mntr,ruok,srvr
admin.enableServer=false
autopurge.purgeInterval=1
autopurge.snapRetainCount=3
clientPort=2181
dataDir=/data
initLimit=10
metricsProvider.className=org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider
metricsProvider.httpPort=7000
preAllocSize=16384
snapCount=100000
snapSizeLimitInKb=65536
syncLimit=5
tickTime=2000
server.1=zk-server-default-0.zk-server-default.ns.svc.cluster.local:2888:3888;2181
server.2=zk-server-default-1.zk-server-default.ns.svc.cluster.local:2888:3888;2181
server.3=zk-server-default-2.zk-server-default.ns.svc.cluster.local:2888:3888;2181
";
        assert_eq!(cfg.to_properties(), expected);
        Ok(())
    }

    #[test]
    fn server_lines_are_sorted_numerically_across_groups() -> Result<(), ZooCfgError> {
        let input = ZooCfgInput::new(vec![group("b", 2, 9), group("a", 2, 1)]);
        let cfg = ZooCfg::render(&input)?;
        let text = cfg.to_properties();
        let ids: Vec<&str> = text
            .lines()
            .filter_map(|line| line.strip_prefix("server."))
            .filter_map(|rest| rest.split('=').next())
            .collect();
        assert_eq!(ids, vec!["1", "2", "9", "10"]);
        Ok(())
    }

    #[rstest]
    #[case::admin_server_enabled(
        |input: &mut ZooCfgInput| input.admin_server_port = Some(ADMIN_SERVER_PORT),
        &[("admin.enableServer", Some("true")), ("admin.serverPort", Some("8080"))]
    )]
    #[case::metrics_disabled(
        |input: &mut ZooCfgInput| input.prometheus_metrics_port = None,
        &[("metricsProvider.className", None), ("metricsProvider.httpPort", None)]
    )]
    #[case::metrics_on_custom_port(
        |input: &mut ZooCfgInput| input.prometheus_metrics_port = Some(9404),
        &[("metricsProvider.httpPort", Some("9404"))]
    )]
    #[case::override_beats_generated_setting(
        |input: &mut ZooCfgInput| input.overrides = overrides(&[("tickTime", "3000")]),
        &[("tickTime", Some("3000"))]
    )]
    #[case::override_adds_new_key(
        |input: &mut ZooCfgInput| input.overrides = overrides(&[("dataLogDir", "/datalog")]),
        &[("dataLogDir", Some("/datalog"))]
    )]
    #[case::autopurge_disabled(
        |input: &mut ZooCfgInput| input.retention.purge_interval_hours = 0,
        &[("autopurge.purgeInterval", Some("0"))]
    )]
    fn settings_follow_the_input(
        #[case] change: fn(&mut ZooCfgInput),
        #[case] expected: &[(&str, Option<&str>)],
    ) -> Result<(), ZooCfgError> {
        let mut input = ZooCfgInput::new(vec![group("default", 3, 1)]);
        change(&mut input);
        let cfg = ZooCfg::render(&input)?;
        for (key, value) in expected {
            assert_eq!((*key, cfg.get(key)), (*key, *value));
        }
        Ok(())
    }

    #[rstest]
    #[case::default_data_dir(&[], "/data")]
    #[case::overridden_data_dir(&[("dataDir", "/var/zk")], "/var/zk")]
    fn data_dir_is_the_effective_one(#[case] pairs: &[(&str, &str)], #[case] expected: &str) {
        let mut input = ZooCfgInput::new(vec![group("default", 1, 1)]);
        input.overrides = overrides(pairs);
        let data_dir = ZooCfg::render(&input).map(|cfg| cfg.data_dir().to_owned());
        assert_eq!(data_dir, Ok(expected.to_owned()));
    }

    #[rstest]
    #[case::key_with_equals(&[("a=b", "c")], "config override key \"a=b\" is invalid: keys may only contain ASCII letters, digits, '.', '_' and '-'")]
    #[case::key_with_colon(&[("a:b", "c")], "config override key \"a:b\" is invalid: keys may only contain ASCII letters, digits, '.', '_' and '-'")]
    #[case::key_with_space(&[("a b", "c")], "config override key \"a b\" is invalid: keys may only contain ASCII letters, digits, '.', '_' and '-'")]
    #[case::empty_key(&[("", "c")], "configOverrides.zoo.cfg: \"\": a key must be non-empty and on one line")]
    #[case::value_injecting_a_line(&[("tickTime", "1\nserver.9=evil:1:2")], "configOverrides.zoo.cfg: \"tickTime\": a value in this file must be on one line")]
    #[case::client_port_other_objects_are_built_for(
        &[("clientPort", "2182")],
        "configOverrides.zoo.cfg: clientPort is set by the operator (the client Service, the container port, the probes and every discovery ConfigMap use port 2181); remove it from configOverrides"
    )]
    #[case::metrics_port_other_objects_are_built_for(
        &[("metricsProvider.httpPort", "9404")],
        "configOverrides.zoo.cfg: metricsProvider.httpPort is set by the operator (the metrics Service, its Prometheus scrape annotation and the container port use port 7000); remove it from configOverrides"
    )]
    #[case::server_lines_belong_to_the_membership(
        &[("server.1", "elsewhere:2888:3888;2181")],
        "configOverrides.zoo.cfg: server.1 is set by the operator (the operator writes one server line per pod and changes the membership one server at a time; set replicas and role groups instead); remove it from configOverrides"
    )]
    #[case::extended_types_lower_the_id_limit(
        &[("extendedTypesEnabled", "true")],
        "role group \"default\" would use server ids up to 255 (myidOffset 253 plus 3 replicas), above ZooKeeper's limit of 254"
    )]
    fn invalid_input_is_rejected(#[case] pairs: &[(&str, &str)], #[case] message: &str) {
        let mut input = ZooCfgInput::new(vec![group("default", 3, 253)]);
        input.overrides = overrides(pairs);
        let result = ZooCfg::render(&input).map_err(|e| e.to_string());
        assert_eq!(result.map(|_| ()), Err(message.to_owned()));
    }

    #[rstest]
    #[case::plain("abc", "abc")]
    #[case::backslash(r"C:\zk", r"C:\\zk")]
    #[case::leading_space(" x y", r"\ x y")]
    #[case::empty("", "")]
    fn values_are_escaped_for_java_properties(#[case] value: &str, #[case] expected: &str) {
        let mut input = ZooCfgInput::new(vec![group("default", 1, 1)]);
        input.overrides = overrides(&[("custom.value", value)]);
        let cfg = ZooCfg::render(&input).map_err(|error| error.to_string());
        let line = format!("custom.value={expected}");
        assert!(
            cfg.as_ref()
                .is_ok_and(|cfg| cfg.to_properties().lines().any(|l| l == line)),
            "{cfg:?}"
        );
    }

    #[test]
    fn rendering_twice_gives_the_same_bytes() -> Result<(), ZooCfgError> {
        let mut input = ZooCfgInput::new(vec![group("b", 2, 5), group("a", 3, 1)]);
        input.overrides = overrides(&[("zz", "1"), ("aa", "2")]);
        let first = ZooCfg::render(&input)?.to_properties().to_owned();
        let second = ZooCfg::render(&input)?.to_properties().to_owned();
        assert_eq!(first, second);
        let last = first.lines().last().unwrap_or_default();
        assert!(last.starts_with("server.6="), "{first}");
        Ok(())
    }
}

//! The containers of a ZooKeeper Pod: the init container that writes `myid` and the
//! ZooKeeper server itself, with probes that ask ZooKeeper rather than the process table.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Container;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use strata_model::build::{
    container_port, env_vars, exec_probe, resource_requirements, restricted_security_context,
    volume_mount,
};
use strata_model::resources::ValidatedResources;

use super::service::{CLIENT, LEADER_ELECTION, METRICS, QUORUM, SECURE_CLIENT};
use crate::config::myid_script;
use crate::config::tls::{
    ADMIN_ADDRESS, KEYSTORE_DIR, KEYSTORE_FILE, SECURE_CLIENT_PORT, TLS_DIR, TRUSTSTORE_FILE,
    keystore_script,
};
use crate::config::zoo_cfg::{ADMIN_SERVER_PORT, CLIENT_PORT, DATA_DIR};
use crate::validate::{ValidatedCluster, ValidatedRoleGroup};

/// Name of the ZooKeeper container, the target of `envOverrides`.
pub const ZOOKEEPER_CONTAINER: &str = "zookeeper";
/// Name of the init container that writes `myid`.
pub const MYID_CONTAINER: &str = "write-myid";
/// Where the role group ConfigMap is mounted (`ZOOCFGDIR`).
pub const CONFIG_DIR: &str = "/conf";
/// Scratch space of the JVM (`hsperfdata`, temporary files).
pub const TMP_DIR: &str = "/tmp";
/// Seconds the JVM caches a resolved host name. Pod IPs change when pods
/// restart, and the JVM's default keeps an old address for 30 s.
pub const DNS_CACHE_SECONDS: u32 = 10;
/// `ZOO_LOG_DIR`; logs go to the console, but the scripts expect the directory.
pub const LOG_DIR: &str = "/logs";
/// Name of the volume holding the role group ConfigMap.
pub const CONFIG_VOLUME: &str = "config";
/// The PersistentVolumeClaim template's name.
pub const DATA_VOLUME: &str = "data";
/// Name of the `/tmp` scratch volume.
pub const TMP_VOLUME: &str = "tmp";
/// Name of the `/logs` scratch volume.
pub const LOG_VOLUME: &str = "logs";
/// Name of the volume of the user's TLS Secret.
pub const TLS_VOLUME: &str = "tls";
/// Name of the in-memory volume holding the keystore.
pub const KEYSTORE_VOLUME: &str = "keystore";
/// Name of the init container that builds the keystore.
pub const KEYSTORE_CONTAINER: &str = "tls-keystore";

/// Where the probes ask ZooKeeper.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeEndpoint {
    /// Four-letter words on the plaintext client port, with TLS off.
    ClientPort,
    /// The admin server on loopback, with TLS on: the client port then speaks TLS alone,
    /// which bash cannot, and there is no plaintext one (`crate::config::tls`).
    AdminServer,
}

impl ProbeEndpoint {
    /// The endpoint for a cluster with TLS on or off.
    pub fn for_tls(tls: bool) -> Self {
        if tls {
            Self::AdminServer
        } else {
            Self::ClientPort
        }
    }
}

/// Readiness: the server answers `srvr` with a mode that means it serves requests as part
/// of a quorum (leader, follower, or observer) or alone. A server that runs but has no
/// quorum answers "This ZooKeeper instance is not currently serving requests" (the admin
/// server with no `server_state`) and stays unready.
pub fn readiness_script(endpoint: ProbeEndpoint) -> String {
    match endpoint {
        ProbeEndpoint::ClientPort => format!(
            "exec 3<>/dev/tcp/127.0.0.1/{CLIENT_PORT} && printf srvr >&3 && \
             grep -qE '^Mode: (leader|follower|observer|standalone)$' <&3"
        ),
        ProbeEndpoint::AdminServer => format!(
            "{} && grep -qE '\"server_state\" *: *\"(leader|follower|observer|standalone)\"' <&3",
            admin_request("srvr")
        ),
    }
}

/// Liveness: the server process answers `ruok` with `imok` (the admin server with a
/// 200); it does not require a quorum, so Pods waiting for their peers are not restarted.
pub fn liveness_script(endpoint: ProbeEndpoint) -> String {
    match endpoint {
        ProbeEndpoint::ClientPort => format!(
            "exec 3<>/dev/tcp/127.0.0.1/{CLIENT_PORT} && printf ruok >&3 && \
             [[ \"$(cat <&3)\" == imok ]]"
        ),
        ProbeEndpoint::AdminServer => format!(
            "{} && grep -qE '^HTTP/1\\.[01] 200 ' <&3",
            admin_request("ruok")
        ),
    }
}

/// Bash running ZooKeeper's own Java client (`zkCli.sh`'s class) in a server container,
/// for one `command` (such as `create /path`) against the pod's own server: with
/// `tls_server_name`, over TLS on the secure port with the container's own certificate
/// and the servers' CA, the name checked; without, on the plaintext port. With TLS on
/// there is no plaintext port to reach from inside the pod, and a client outside
/// cannot check the servers' names against cluster addresses it cannot resolve: this
/// is how the local runner (`cargo xtask run`) and the tests write a ZNode's path.
pub fn java_client_script(
    zookeeper_home: &str,
    tls_server_name: Option<&str>,
    command: &str,
) -> String {
    let (properties, server) = match tls_server_name {
        Some(name) => (
            format!(
                "-Dzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty \
                 -Dzookeeper.client.secure=true \
                 -Dzookeeper.ssl.keyStore.location={KEYSTORE_FILE} \
                 -Dzookeeper.ssl.keyStore.type=PEM \
                 -Dzookeeper.ssl.trustStore.location={TRUSTSTORE_FILE} \
                 -Dzookeeper.ssl.trustStore.type=PEM "
            ),
            format!("{name}:{SECURE_CLIENT_PORT}"),
        ),
        None => (String::new(), format!("127.0.0.1:{CLIENT_PORT}")),
    };
    format!(
        "java -cp '{zookeeper_home}/lib/*:{CONFIG_DIR}' {properties}\
         org.apache.zookeeper.ZooKeeperMain -server {server} {command} 2>&1"
    )
}

/// Bash asking the loopback admin server for one command, its answer on descriptor 3.
/// HTTP/1.0, so the server closes the connection after the answer.
fn admin_request(command: &str) -> String {
    format!(
        "exec 3<>/dev/tcp/{ADMIN_ADDRESS}/{ADMIN_SERVER_PORT} && \
         printf 'GET /commands/{command} HTTP/1.0\\r\\n\\r\\n' >&3"
    )
}

/// Runs the `myid` script of the config module in the ZooKeeper image (bash is there),
/// writing into the effective `dataDir` on the data volume.
pub fn myid_container(cluster: &ValidatedCluster, group: &ValidatedRoleGroup) -> Container {
    bash_init_container(
        cluster,
        MYID_CONTAINER,
        myid_script(group.product.myid_offset, group.product.zoo_cfg.data_dir()),
        vec![volume_mount(DATA_VOLUME, DATA_DIR, false)],
    )
}

/// Joins the TLS Secret's key and certificate into the keystore ZooKeeper reads
/// ([`crate::config::tls`]), with the ZooKeeper image's bash.
pub fn keystore_container(cluster: &ValidatedCluster) -> Container {
    bash_init_container(
        cluster,
        KEYSTORE_CONTAINER,
        keystore_script(),
        vec![
            volume_mount(TLS_VOLUME, TLS_DIR, true),
            volume_mount(KEYSTORE_VOLUME, KEYSTORE_DIR, false),
        ],
    )
}

/// A short init step: `script` in the ZooKeeper image's bash, with the small fixed
/// resources and the restricted security context every init container here gets.
fn bash_init_container(
    cluster: &ValidatedCluster,
    name: &str,
    script: String,
    volume_mounts: Vec<k8s_openapi::api::core::v1::VolumeMount>,
) -> Container {
    Container {
        name: name.to_owned(),
        image: Some(cluster.identity.image.image.clone()),
        image_pull_policy: Some(cluster.identity.image.pull_policy.to_string()),
        command: Some(vec!["bash".to_owned(), "-c".to_owned(), script]),
        resources: Some(resource_requirements(&ValidatedResources {
            cpu_min: Quantity("50m".to_owned()),
            cpu_max: Quantity("200m".to_owned()),
            memory_limit: Quantity("64Mi".to_owned()),
            heap_mib: 0,
        })),
        security_context: Some(restricted_security_context()),
        volume_mounts: Some(volume_mounts),
        ..Container::default()
    }
}

/// Extra JVM flags, after the ones `zkServer.sh` sets, so they win there:
/// heap dumps (the script turns them on for OutOfMemoryError) go to the
/// writable scratch volume instead of the read-only working directory, and
/// host names are cached briefly, positive and negative, so a restarted peer's
/// new address is used within seconds.
pub fn jvm_flags() -> String {
    format!(
        "-XX:HeapDumpPath={TMP_DIR} -Dsun.net.inetaddr.ttl={DNS_CACHE_SECONDS} \
         -Dsun.net.inetaddr.negative.ttl=1"
    )
}

/// The ZooKeeper server in the foreground (`zkServer.sh start-foreground` ends in
/// `exec java`, so SIGTERM reaches the JVM), configured from `/conf`, with
/// `ZK_SERVER_HEAP` (MiB, which `zkEnv.sh` turns into `-Xmx`) derived from the memory
/// limit. `envOverrides` win over the operator's variables.
pub fn zookeeper_container(cluster: &ValidatedCluster, group: &ValidatedRoleGroup) -> Container {
    let env = BTreeMap::from([
        ("ZOOCFGDIR".to_owned(), CONFIG_DIR.to_owned()),
        ("ZOO_LOG_DIR".to_owned(), LOG_DIR.to_owned()),
        (
            "ZK_SERVER_HEAP".to_owned(),
            group.resources.heap_mib.to_string(),
        ),
        ("SERVER_JVMFLAGS".to_owned(), jvm_flags()),
    ]);
    let probes = ProbeEndpoint::for_tls(cluster.tls.is_some());
    Container {
        name: ZOOKEEPER_CONTAINER.to_owned(),
        image: Some(cluster.identity.image.image.clone()),
        image_pull_policy: Some(cluster.identity.image.pull_policy.to_string()),
        command: Some(vec![
            "zkServer.sh".to_owned(),
            "start-foreground".to_owned(),
        ]),
        env: Some(env_vars(env, &group.env_overrides)),
        ports: Some(
            client_ports(cluster)
                .into_iter()
                .chain([QUORUM, LEADER_ELECTION, METRICS])
                .map(container_port)
                .collect(),
        ),
        resources: Some(resource_requirements(&group.resources)),
        startup_probe: Some(exec_probe(&liveness_script(probes), 5, 60)),
        liveness_probe: Some(exec_probe(&liveness_script(probes), 10, 3)),
        readiness_probe: Some(exec_probe(&readiness_script(probes), 5, 3)),
        security_context: Some(restricted_security_context()),
        volume_mounts: Some(
            [
                volume_mount(CONFIG_VOLUME, CONFIG_DIR, true),
                volume_mount(DATA_VOLUME, DATA_DIR, false),
                volume_mount(TMP_VOLUME, TMP_DIR, false),
                volume_mount(LOG_VOLUME, LOG_DIR, false),
            ]
            .into_iter()
            .chain(cluster.tls.iter().flat_map(|_| {
                [
                    volume_mount(TLS_VOLUME, TLS_DIR, true),
                    volume_mount(KEYSTORE_VOLUME, KEYSTORE_DIR, true),
                ]
            }))
            .collect(),
        ),
        ..Container::default()
    }
}

/// The ports clients reach: the secure one alone with TLS on, the plaintext one
/// otherwise.
pub fn client_ports(cluster: &ValidatedCluster) -> Vec<strata_model::build::ContainerPort> {
    match cluster.tls {
        Some(_) => vec![SECURE_CLIENT],
        None => vec![CLIENT],
    }
}

//! The containers of each role: the daemon itself (`hdfs <daemon>` in the foreground,
//! never the image's entrypoint, which uses `sudo` and formats with `-force`), the
//! namenode's format init container and its ZKFC sidecar, with probes that ask HDFS
//! rather than the process table.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Container, EnvVar, EnvVarSource, ExecAction, Lifecycle, LifecycleHandler, ObjectFieldSelector,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use strata_model::build::{
    container_port, env_vars, exec_probe, resource_requirements, restricted_security_context,
    tcp_probe, volume_mount,
};
use strata_model::resources::ValidatedResources;

use super::config_map::{
    CLUSTER_ID_KEY, FORMAT_SCRIPT, HAND_OVER_SCRIPT, REFRESH_NODES_SCRIPT, ROLL_EDITS_KEY,
    ZKFC_SCRIPT,
};
use super::service::{DATANODE_HTTP, JOURNALNODE_HTTP, NAMENODE_RPC, ZKFC, ports};
use super::statefulset::{ZOOKEEPER_CA_VOLUME, ZOOKEEPER_CLIENT_VOLUME};
use crate::config::site::{DATA_MOUNT, EXCLUDE_FILE, NAME_DIR, POD_NAME_VARIABLE};
use crate::config::topology::{DATANODE_HTTP_PORT, JOURNALNODE_HTTP_PORT, NAMENODE_HTTP_PORT};
use crate::config::zookeeper_tls;
use crate::crd::HdfsRole;
use crate::validate::{ValidatedCluster, ValidatedRoleGroup};

/// The `hdfs` launcher in the upstream image.
pub const HDFS_BIN: &str = "/opt/hadoop/bin/hdfs";
/// Where the role group ConfigMap is mounted: `HADOOP_CONF_DIR`.
pub const CONFIG_DIR: &str = "/strata/config";
/// Where the namenode state ConfigMap is mounted.
pub const STATE_DIR: &str = "/strata/state";
/// `HADOOP_LOG_DIR`: the launcher refuses to start unless it is writable, although
/// every log goes to the console.
pub const LOG_DIR: &str = "/strata/log";
/// Parent of each container's own `HADOOP_PID_DIR`: `hdfs namenode -format` and
/// `hdfs namenode` write the same pid file name, and a leftover could stop the daemon.
pub const RUN_DIR: &str = "/strata/run";
/// Scratch space of the JVM.
pub const TMP_DIR: &str = "/tmp";
/// Volume names.
pub const CONFIG_VOLUME: &str = "config";
/// The namenode state volume.
pub const STATE_VOLUME: &str = "state";
/// The PersistentVolumeClaim template's name.
pub const DATA_VOLUME: &str = "data";
/// The log directory volume.
pub const LOG_VOLUME: &str = "log";
/// The pid directories' volume.
pub const RUN_VOLUME: &str = "run";
/// The `/tmp` volume.
pub const TMP_VOLUME: &str = "tmp";
/// Name of the namenode's init container.
pub const FORMAT_CONTAINER: &str = "format-namenode";
/// Name of the ZKFC sidecar.
pub const ZKFC_CONTAINER: &str = "zkfc";
/// Name of the sidecar that has the namenode re-read its exclude list.
pub const REFRESH_NODES_CONTAINER: &str = "refresh-nodes";
/// Heap of the `hdfs dfsadmin` client the refresh-nodes sidecar starts.
pub const REFRESH_NODES_HEAP_MIB: u64 = 96;
/// Seconds the JVM caches a resolved host name: pod IPs change when pods restart.
pub const DNS_CACHE_SECONDS: u32 = 10;
/// Heap of the ZKFC, which holds one ZooKeeper session and two RPC clients. Through
/// the real-daemon roll its whole process peaked at 104 MiB resident (`VmHWM`) with a
/// 192 MiB maximum heap; a full heap of that size plus about 80 MiB outside it would
/// pass the container's 256 MiB limit, 128 MiB does not.
pub const ZKFC_HEAP_MIB: u64 = 128;

/// The daemon's container name: the target of `envOverrides`.
pub fn daemon_container(role: HdfsRole) -> &'static str {
    role.daemon()
}

/// `HDFS_<DAEMON>_OPTS`: the JVM flags of one daemon. `HADOOP_HEAPSIZE_MAX` would apply
/// to every `hdfs` command in the container, so the heap is set per daemon.
pub fn opts_variable(daemon: &str) -> String {
    format!("HDFS_{}_OPTS", daemon.to_uppercase())
}

/// The heap, an exit on OutOfMemoryError (the kubelet restarts the pod; a JVM that
/// stays up after one may be broken), heap dumps and temporary files on the scratch
/// volume, and short DNS caching.
pub fn jvm_opts(heap_mib: u64) -> String {
    format!(
        "-Xmx{heap_mib}m -XX:+ExitOnOutOfMemoryError -XX:+HeapDumpOnOutOfMemoryError \
         -XX:HeapDumpPath={TMP_DIR} \
         -Djava.io.tmpdir={TMP_DIR} -Dsun.net.inetaddr.ttl={DNS_CACHE_SECONDS} \
         -Dsun.net.inetaddr.negative.ttl=1"
    )
}

/// The variables every Hadoop process in the pod needs; `pid_dir` is the container's own.
/// The image's user, by name.
pub const HADOOP_USER: &str = "hadoop";

fn hadoop_env(container: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("HADOOP_CONF_DIR".to_owned(), CONFIG_DIR.to_owned()),
        // The HDFS user (and so the superuser) is `hadoop` whatever uid the pods run
        // as: a cluster created on 3.4 keeps uid 1000 on 3.5, whose image names it
        // `ubuntu` (simple authentication reads this variable; Kerberos ignores it).
        ("HADOOP_USER_NAME".to_owned(), HADOOP_USER.to_owned()),
        ("HADOOP_LOG_DIR".to_owned(), LOG_DIR.to_owned()),
        (
            "HADOOP_PID_DIR".to_owned(),
            format!("{RUN_DIR}/{container}"),
        ),
    ])
}

fn common_mounts() -> Vec<k8s_openapi::api::core::v1::VolumeMount> {
    vec![
        volume_mount(CONFIG_VOLUME, CONFIG_DIR, true),
        volume_mount(LOG_VOLUME, LOG_DIR, false),
        volume_mount(RUN_VOLUME, RUN_DIR, false),
        volume_mount(TMP_VOLUME, TMP_DIR, false),
    ]
}

/// Readiness of a namenode: it serves as active (`/isActive` answers 200) or standby
/// (405). A namenode still loading its image or waiting for the journalnodes answers
/// neither.
pub fn namenode_readiness_script() -> String {
    format!(
        "exec 3<>/dev/tcp/127.0.0.1/{NAMENODE_HTTP_PORT} && \
         printf 'GET /isActive HTTP/1.0\\r\\nHost: localhost\\r\\n\\r\\n' >&3 && \
         head -n 1 <&3 | grep -qE '^HTTP/1\\.[01] (200|405) '"
    )
}

/// Readiness of a datanode: it is registered with a namenode (a block pool actor in
/// state `RUNNING`). Until then it keeps retrying the namenodes and logs each attempt.
pub fn datanode_readiness_script() -> String {
    format!(
        "exec 3<>/dev/tcp/127.0.0.1/{DATANODE_HTTP_PORT} && \
         printf 'GET /jmx?qry=Hadoop:service=DataNode,name=DataNodeInfo HTTP/1.0\\r\\nHost: localhost\\r\\n\\r\\n' >&3 && \
         grep -q 'ActorState.*RUNNING' <&3"
    )
}

/// Readiness of a journalnode: it has taken edits since it started. A restarted
/// journalnode has no open segment and refuses the active namenode's edits until the
/// next segment starts, so an open RPC port does not mean the edit log can count on it
/// (see `crate::journal_sync`). The roll waits for this before it restarts the next
/// journalnode, and the PodDisruptionBudget counts such a journalnode as unavailable.
pub fn journalnode_readiness_script() -> String {
    format!(
        "exec 3<>/dev/tcp/127.0.0.1/{JOURNALNODE_HTTP_PORT} && \
         printf 'GET /jmx?qry=Hadoop:service=JournalNode,name=Journal-* HTTP/1.0\\r\\nHost: localhost\\r\\n\\r\\n' >&3 && \
         grep -qE '\"BatchesWritten\" *: *[1-9]' <&3"
    )
}

/// The daemon of `role`: `hdfs <daemon>` in the foreground, so SIGTERM reaches the JVM.
pub fn daemon(cluster: &ValidatedCluster, role: HdfsRole, group: &ValidatedRoleGroup) -> Container {
    let name = daemon_container(role);
    let mut env = hadoop_env(name);
    env.insert(
        opts_variable(role.daemon()),
        jvm_opts(group.resources.heap_mib),
    );
    // Every readiness probe asks every 5 s: a roll waits for each pod to be Ready before
    // it restarts the next, so a 10 s period cost a roll of many pods minutes, and each
    // question is one local HTTP request.
    let (readiness, liveness) = match role {
        HdfsRole::NameNode => (
            exec_probe(&namenode_readiness_script(), 5, 6),
            tcp_probe(NAMENODE_RPC, 10, 6),
        ),
        HdfsRole::JournalNode => (
            exec_probe(&journalnode_readiness_script(), 5, 3),
            tcp_probe(JOURNALNODE_HTTP, 10, 6),
        ),
        HdfsRole::DataNode => (
            exec_probe(&datanode_readiness_script(), 5, 6),
            tcp_probe(DATANODE_HTTP, 10, 6),
        ),
    };
    let mut mounts = common_mounts();
    mounts.push(volume_mount(DATA_VOLUME, DATA_MOUNT, false));
    let mut variables = env_vars(env, &group.env_overrides);
    let mut lifecycle = None;
    if role == HdfsRole::NameNode {
        // dfs.hosts.exclude lives here.
        mounts.push(volume_mount(STATE_VOLUME, STATE_DIR, true));
        variables.push(pod_name_variable());
        let mut command = vec![
            "bash".to_owned(),
            format!("{CONFIG_DIR}/{HAND_OVER_SCRIPT}"),
        ];
        command.extend(
            cluster
                .topology
                .namenodes
                .iter()
                .map(|namenode| namenode.id.clone()),
        );
        lifecycle = Some(Lifecycle {
            pre_stop: Some(LifecycleHandler {
                exec: Some(ExecAction {
                    command: Some(command),
                }),
                ..LifecycleHandler::default()
            }),
            ..Lifecycle::default()
        });
    }
    Container {
        name: name.to_owned(),
        image: Some(cluster.identity.image.image.clone()),
        image_pull_policy: Some(cluster.identity.image.pull_policy.to_string()),
        command: Some(vec![HDFS_BIN.to_owned(), role.daemon().to_owned()]),
        env: Some(variables),
        lifecycle,
        ports: Some(ports(role).iter().copied().map(container_port).collect()),
        resources: Some(resource_requirements(&group.resources)),
        // Loading a large fsimage or replaying edits can take minutes: the liveness
        // probe starts only once the RPC port answers, for up to 30 minutes. It asks
        // every 5 s, since readiness is not probed before it answers.
        startup_probe: Some(tcp_probe(ports(role)[0], 5, 360)),
        liveness_probe: Some(liveness),
        readiness_probe: Some(readiness),
        security_context: Some(restricted_security_context()),
        volume_mounts: Some(mounts),
        ..Container::default()
    }
}

/// The namenode's init container: formats once or bootstraps, see
/// `src/scripts/format-namenode.sh`. A state it cannot handle safely stops the pod
/// with a reason in its termination message, which the status reports.
pub fn format_container(cluster: &ValidatedCluster, group: &ValidatedRoleGroup) -> Container {
    let mut env = hadoop_env(FORMAT_CONTAINER);
    env.insert(
        opts_variable(HdfsRole::NameNode.daemon()),
        jvm_opts(group.resources.heap_mib),
    );
    env.insert("NAME_DIR".to_owned(), NAME_DIR.to_owned());
    env.insert("FORMATTER_POD".to_owned(), cluster.formatter_pod.clone());
    env.insert("NEW_CLUSTER_ID".to_owned(), cluster.new_cluster_id.clone());
    env.insert(
        "JOURNAL_NODES".to_owned(),
        cluster.topology.journalnodes.join(" "),
    );
    env.insert(
        "CLUSTER_ID_FILE".to_owned(),
        format!("{STATE_DIR}/{CLUSTER_ID_KEY}"),
    );
    let mut variables = env_vars(env, &BTreeMap::new());
    variables.push(pod_name_variable());
    let mut mounts = common_mounts();
    mounts.push(volume_mount(DATA_VOLUME, DATA_MOUNT, false));
    mounts.push(volume_mount(STATE_VOLUME, STATE_DIR, true));
    Container {
        name: FORMAT_CONTAINER.to_owned(),
        image: Some(cluster.identity.image.image.clone()),
        image_pull_policy: Some(cluster.identity.image.pull_policy.to_string()),
        command: Some(vec![
            "bash".to_owned(),
            format!("{CONFIG_DIR}/{FORMAT_SCRIPT}"),
        ]),
        env: Some(variables),
        resources: Some(resource_requirements(&group.resources)),
        security_context: Some(restricted_security_context()),
        termination_message_policy: Some("FallbackToLogsOnError".to_owned()),
        volume_mounts: Some(mounts),
        ..Container::default()
    }
}

/// The ZKFC sidecar: creates the failover znode if it is missing, then runs `hdfs zkfc`,
/// which makes its namenode active or standby through ZooKeeper.
///
/// Readiness is its RPC port: the ZKFC opens it only once it has reached ZooKeeper and
/// found the failover znode (`ZKFailoverController.doRun`). So a namenode whose ZKFC
/// waits for ZooKeeper is not Ready: the roll does not restart the active namenode
/// while the other one could not take over, and the status names the pod.
pub fn zkfc_container(cluster: &ValidatedCluster) -> Container {
    let mut env = hadoop_env(ZKFC_CONTAINER);
    env.insert(opts_variable("zkfc"), jvm_opts(ZKFC_HEAP_MIB));
    let mut mounts = common_mounts();
    if cluster.zookeeper.tls {
        mounts.push(volume_mount(
            ZOOKEEPER_CA_VOLUME,
            zookeeper_tls::CA_DIR,
            true,
        ));
        mounts.push(volume_mount(
            ZOOKEEPER_CLIENT_VOLUME,
            zookeeper_tls::KEYSTORE_DIR,
            true,
        ));
    }
    Container {
        name: ZKFC_CONTAINER.to_owned(),
        image: Some(cluster.identity.image.image.clone()),
        image_pull_policy: Some(cluster.identity.image.pull_policy.to_string()),
        command: Some(vec![
            "bash".to_owned(),
            format!("{CONFIG_DIR}/{ZKFC_SCRIPT}"),
        ]),
        env: Some(with_pod_name(env_vars(env, &BTreeMap::new()))),
        ports: Some(vec![container_port(ZKFC)]),
        readiness_probe: Some(tcp_probe(ZKFC, 10, 3)),
        resources: Some(resource_requirements(&ValidatedResources {
            cpu_min: Quantity("100m".to_owned()),
            cpu_max: Quantity("500m".to_owned()),
            memory_limit: Quantity("256Mi".to_owned()),
            heap_mib: ZKFC_HEAP_MIB,
        })),
        security_context: Some(restricted_security_context()),
        termination_message_policy: Some("FallbackToLogsOnError".to_owned()),
        volume_mounts: Some(mounts),
        ..Container::default()
    }
}

/// The sidecar that runs `hdfs dfsadmin -refreshNodes` against its own namenode
/// whenever the exclude list changes (`src/scripts/refresh-nodes.sh`).
pub fn refresh_nodes_container(cluster: &ValidatedCluster) -> Container {
    let mut env = hadoop_env(REFRESH_NODES_CONTAINER);
    env.insert(
        "HADOOP_CLIENT_OPTS".to_owned(),
        jvm_opts(REFRESH_NODES_HEAP_MIB),
    );
    env.insert("EXCLUDE_FILE".to_owned(), EXCLUDE_FILE.to_owned());
    env.insert(
        "ROLL_EDITS_FILE".to_owned(),
        format!("{STATE_DIR}/{ROLL_EDITS_KEY}"),
    );
    let mut mounts = common_mounts();
    mounts.push(volume_mount(STATE_VOLUME, STATE_DIR, true));
    Container {
        name: REFRESH_NODES_CONTAINER.to_owned(),
        image: Some(cluster.identity.image.image.clone()),
        image_pull_policy: Some(cluster.identity.image.pull_policy.to_string()),
        command: Some(vec![
            "bash".to_owned(),
            format!("{CONFIG_DIR}/{REFRESH_NODES_SCRIPT}"),
        ]),
        env: Some(with_pod_name(env_vars(env, &BTreeMap::new()))),
        resources: Some(resource_requirements(&ValidatedResources {
            cpu_min: Quantity("50m".to_owned()),
            cpu_max: Quantity("500m".to_owned()),
            memory_limit: Quantity("192Mi".to_owned()),
            heap_mib: REFRESH_NODES_HEAP_MIB,
        })),
        security_context: Some(restricted_security_context()),
        volume_mounts: Some(mounts),
        ..Container::default()
    }
}

/// `variables` and [`pod_name_variable`].
fn with_pod_name(mut variables: Vec<EnvVar>) -> Vec<EnvVar> {
    variables.push(pod_name_variable());
    variables
}

/// `POD_NAME` from the downward API: every namenode pod's container finds its
/// namenode id by it (`dfs.ha.namenode.id`), and the init script compares it with the
/// formatter.
fn pod_name_variable() -> EnvVar {
    EnvVar {
        name: POD_NAME_VARIABLE.to_owned(),
        value: None,
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                field_path: "metadata.name".to_owned(),
                api_version: None,
            }),
            ..EnvVarSource::default()
        }),
    }
}

//! The containers of a ZooKeeper Pod: the init container that writes `myid` and the
//! ZooKeeper server itself, with probes that ask ZooKeeper rather than the process table.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Capabilities, Container, ContainerPort, EnvVar, ExecAction, Probe, ResourceRequirements,
    SecurityContext, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use super::service::{
    CLIENT_PORT_NAME, LEADER_ELECTION_PORT_NAME, METRICS_PORT_NAME, QUORUM_PORT_NAME,
};
use crate::config::myid_script;
use crate::config::zoo_cfg::{
    CLIENT_PORT, DATA_DIR, LEADER_ELECTION_PORT, METRICS_PORT, QUORUM_PORT,
};
use crate::validate::{ValidatedCluster, ValidatedRoleGroup};

/// Name of the ZooKeeper container, the target of `envOverrides`.
pub const ZOOKEEPER_CONTAINER: &str = "zookeeper";
/// Name of the init container that writes `myid`.
pub const MYID_CONTAINER: &str = "write-myid";
/// Where the role group ConfigMap is mounted (`ZOOCFGDIR`).
pub const CONFIG_DIR: &str = "/conf";
/// Scratch space of the JVM (`hsperfdata`, temporary files).
pub const TMP_DIR: &str = "/tmp";
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

/// Readiness: the server answers `srvr` with a mode that means it serves requests as part
/// of a quorum (or alone). A server that runs but has no quorum answers
/// "This ZooKeeper instance is not currently serving requests" and stays unready.
pub fn readiness_script() -> String {
    format!(
        "exec 3<>/dev/tcp/127.0.0.1/{CLIENT_PORT} && printf srvr >&3 && \
         grep -qE '^Mode: (leader|follower|standalone)$' <&3"
    )
}

/// Liveness: the server process answers `ruok` with `imok`; it does not require a quorum,
/// so Pods waiting for their peers are not restarted.
pub fn liveness_script() -> String {
    format!(
        "exec 3<>/dev/tcp/127.0.0.1/{CLIENT_PORT} && printf ruok >&3 && \
         [[ \"$(cat <&3)\" == imok ]]"
    )
}

fn mount(name: &str, path: &str, read_only: bool) -> VolumeMount {
    VolumeMount {
        name: name.to_owned(),
        mount_path: path.to_owned(),
        read_only: read_only.then_some(true),
        ..VolumeMount::default()
    }
}

fn exec_probe(script: &str, period: i32, failures: i32) -> Probe {
    Probe {
        exec: Some(ExecAction {
            command: Some(["bash", "-c", script].map(str::to_owned).to_vec()),
        }),
        period_seconds: Some(period),
        timeout_seconds: Some(5),
        failure_threshold: Some(failures),
        ..Probe::default()
    }
}

fn container_port(name: &str, port: u16) -> ContainerPort {
    ContainerPort {
        name: Some(name.to_owned()),
        container_port: i32::from(port),
        protocol: Some("TCP".to_owned()),
        ..ContainerPort::default()
    }
}

fn resources(cpu_min: &str, cpu_max: &str, memory: &str) -> ResourceRequirements {
    let quantity = |value: &str| Quantity(value.to_owned());
    ResourceRequirements {
        requests: Some(BTreeMap::from([
            ("cpu".to_owned(), quantity(cpu_min)),
            ("memory".to_owned(), quantity(memory)),
        ])),
        limits: Some(BTreeMap::from([
            ("cpu".to_owned(), quantity(cpu_max)),
            ("memory".to_owned(), quantity(memory)),
        ])),
        ..ResourceRequirements::default()
    }
}

/// Least privilege for both containers: no privilege escalation, no capabilities, a
/// read-only root filesystem (every writable path is a volume).
pub fn container_security_context() -> SecurityContext {
    SecurityContext {
        allow_privilege_escalation: Some(false),
        capabilities: Some(Capabilities {
            drop: Some(vec!["ALL".to_owned()]),
            add: None,
        }),
        read_only_root_filesystem: Some(true),
        run_as_non_root: Some(true),
        ..SecurityContext::default()
    }
}

/// Runs the `myid` script of the config module in the ZooKeeper image (bash is there),
/// writing into the effective `dataDir` on the data volume.
pub fn myid_container(cluster: &ValidatedCluster, group: &ValidatedRoleGroup) -> Container {
    Container {
        name: MYID_CONTAINER.to_owned(),
        image: Some(cluster.image.image.clone()),
        image_pull_policy: Some(cluster.image.pull_policy.to_string()),
        command: Some(vec![
            "bash".to_owned(),
            "-c".to_owned(),
            myid_script(group.myid_offset, group.zoo_cfg.data_dir()),
        ]),
        resources: Some(resources("50m", "200m", "64Mi")),
        security_context: Some(container_security_context()),
        volume_mounts: Some(vec![mount(DATA_VOLUME, DATA_DIR, false)]),
        ..Container::default()
    }
}

/// The ZooKeeper server in the foreground (`zkServer.sh start-foreground` ends in
/// `exec java`, so SIGTERM reaches the JVM), configured from `/conf`, with
/// `ZK_SERVER_HEAP` (MiB, which `zkEnv.sh` turns into `-Xmx`) derived from the memory
/// limit. `envOverrides` win over the operator's variables.
pub fn zookeeper_container(cluster: &ValidatedCluster, group: &ValidatedRoleGroup) -> Container {
    let mut env = BTreeMap::from([
        ("ZOOCFGDIR".to_owned(), CONFIG_DIR.to_owned()),
        ("ZOO_LOG_DIR".to_owned(), LOG_DIR.to_owned()),
        (
            "ZK_SERVER_HEAP".to_owned(),
            group.resources.heap_mib.to_string(),
        ),
    ]);
    env.extend(group.env_overrides.clone());
    let server = &group.resources;
    Container {
        name: ZOOKEEPER_CONTAINER.to_owned(),
        image: Some(cluster.image.image.clone()),
        image_pull_policy: Some(cluster.image.pull_policy.to_string()),
        command: Some(vec![
            "zkServer.sh".to_owned(),
            "start-foreground".to_owned(),
        ]),
        env: Some(
            env.into_iter()
                .map(|(name, value)| EnvVar {
                    name,
                    value: Some(value),
                    value_from: None,
                })
                .collect(),
        ),
        ports: Some(vec![
            container_port(CLIENT_PORT_NAME, CLIENT_PORT),
            container_port(QUORUM_PORT_NAME, QUORUM_PORT),
            container_port(LEADER_ELECTION_PORT_NAME, LEADER_ELECTION_PORT),
            container_port(METRICS_PORT_NAME, METRICS_PORT),
        ]),
        resources: Some(resources(
            &server.cpu_min.0,
            &server.cpu_max.0,
            &server.memory_limit.0,
        )),
        startup_probe: Some(exec_probe(&liveness_script(), 5, 60)),
        liveness_probe: Some(exec_probe(&liveness_script(), 10, 3)),
        readiness_probe: Some(exec_probe(&readiness_script(), 5, 3)),
        security_context: Some(container_security_context()),
        volume_mounts: Some(vec![
            mount(CONFIG_VOLUME, CONFIG_DIR, true),
            mount(DATA_VOLUME, DATA_DIR, false),
            mount(TMP_VOLUME, TMP_DIR, false),
            mount(LOG_VOLUME, LOG_DIR, false),
        ]),
        ..Container::default()
    }
}

//! HDFS on real Hadoop 3.4.2 through the pod runner: a real ZooKeeper 3.9.5 rendered by
//! the ZooKeeper operator, requiring client certificates, the ZNode's path created by
//! the operator's own ZooKeeper client and its client certificate issued as the ZNode
//! controller issues it, and the HDFS objects the HDFS operator builds for the example, with the
//! ZNode's real discovery ConfigMap, each pod run as rendered.

#![allow(dead_code)]

pub mod operated;

use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

use std::time::SystemTime;

use hdfs_operator::build::{NameNodeState, build_cluster};
use hdfs_operator::config::zookeeper_tls::{
    ZookeeperConnection, connection_of, fill_client_keystore,
};
use hdfs_operator::crd::HdfsCluster;
use hdfs_operator::validate::{DEFAULT_CLUSTER_DOMAIN, ValidatedCluster};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use serde_json::{Value, json};
use strata_certificates::authority::CertificateAuthority;
use strata_operator::certificates::{StoredSecrets, plan_certificates};
use strata_operator::pod_security::PodSecurity;
use strata_pod_runner::image::Images;
use strata_pod_runner::manifest::apply_all;
use strata_pod_runner::openshift::RestrictedV2;
use strata_pod_runner::pod::Backoff;
use strata_pod_runner::runner::{PodRunner, RunnerOptions};
use strata_pod_runner::statefulset;
use strata_pod_runner::status::PodStatus;
use strata_testing::tools::{self, HADOOP_IMAGE, ZOOKEEPER_IMAGE};
use zookeeper_operator::build::certificates::certificate_request;
use zookeeper_operator::build::znode_client::{ClientSigning, client_secret};
use zookeeper_operator::crd::ZookeeperCluster;
use zookeeper_operator::validate::DEFAULT_CERTIFICATE_LIFETIME;

/// Every object lives here.
pub const NAMESPACE: &str = "default";
/// The ZooKeeper server pod.
pub const ZOOKEEPER_POD: &str = "simple-zk-server-default-0";
/// The uid the test gives the ZNode, as the API server would.
const ZNODE_UID: &str = "0b7c5e52-real-hdfs";
/// The client pod the test talks from.
pub const CLIENT_POD: &str = "hdfs-client";
/// Its service account.
const CLIENT_SERVICE_ACCOUNT: &str = "hdfs-client";

/// A runner with the Hadoop and ZooKeeper image directories. A missing tool fails the
/// test with the variable to set, never skips it.
pub fn runner() -> PodRunner {
    runner_on(None)
}

/// [`runner`] admitting pods as OpenShift's `restricted-v2` does, when given a
/// namespace's uid range; the client pod's service account is granted `anyuid`.
pub fn runner_on(openshift: Option<RestrictedV2>) -> PodRunner {
    let mut images = Images::default();
    for variable in [HADOOP_IMAGE, ZOOKEEPER_IMAGE] {
        let dir = tools::required_path(variable).unwrap_or_else(|error| panic!("{error}"));
        images.add(&dir).unwrap_or_else(|error| panic!("{error}"));
    }
    let mut options = RunnerOptions::new(images);
    // Shorter than the kubelet's 10 s, so that a test does not wait out a back-off.
    options.backoff = Backoff {
        initial: Duration::from_secs(2),
        max: Duration::from_secs(10),
    };
    options.openshift = openshift.map(|range| range.with_anyuid(CLIENT_SERVICE_ACCOUNT));
    PodRunner::new(options).unwrap_or_else(|error| panic!("the pod runner cannot start: {error}"))
}

/// Runs `work` on a thread inside `pod`'s network, on a runtime of its own, so that the
/// operator's own async clients reach the pods.
pub fn in_pod<T, F>(runner: &PodRunner, pod: &str, work: impl FnOnce() -> F + Send + 'static) -> T
where
    T: Send + 'static,
    F: Future<Output = T>,
{
    runner
        .in_pod(NAMESPACE, pod, move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime in the pod's network");
            runtime.block_on(work())
        })
        .unwrap_or_else(|error| panic!("{error}"))
}

/// The objects the ZooKeeper operator makes for one server and the ZNode HDFS uses, as a
/// running operator has them: rendered, with TLS on by default, the certificate Secrets
/// its certificate step writes (with their values) in place of `render`'s shells, and
/// the ZNode's discovery ConfigMap with the CA its controller publishes (the ZNode has a
/// uid, as the API server would give it, so its path is known).
pub fn zookeeper_objects() -> Vec<Value> {
    let cluster = json!({
        "apiVersion": "zookeeper.strata.dev/v1alpha1",
        "kind": "ZookeeperCluster",
        "metadata": {"name": "simple-zk", "namespace": NAMESPACE, "uid": "6c1f3f0e-real-zk"},
        "spec": {
            "clusterConfig": {"tls": {"clientAuthentication": "Required"}},
            "servers": {"roleGroups": {"default": {"replicas": 1}}}
        }
    });
    let documents = vec![
        cluster.clone(),
        json!({
            "apiVersion": "zookeeper.strata.dev/v1alpha1",
            "kind": "ZookeeperZnode",
            "metadata": {"name": "hdfs-znode", "namespace": NAMESPACE, "uid": ZNODE_UID},
            "spec": {"clusterRef": {"name": "simple-zk"}}
        }),
    ];
    let typed: ZookeeperCluster =
        serde_json::from_value(cluster).unwrap_or_else(|error| panic!("{error}"));
    let validated = zookeeper_operator::validate::ValidatedCluster::new(&typed, "cluster.local")
        .unwrap_or_else(|error| panic!("{error}"));
    let request = certificate_request(&validated, DEFAULT_CERTIFICATE_LIFETIME);
    let certificates = plan_certificates(&request, &StoredSecrets::default(), SystemTime::now())
        .unwrap_or_else(|error| panic!("{error}"));
    let mut objects: Vec<Value> = zookeeper_operator::render::render(&documents)
        .unwrap_or_else(|error| panic!("{error}"))
        .objects
        .into_iter()
        .filter(|object| object["kind"] != "Secret")
        .collect();
    // What the ZNode controller adds with the operator's certificates: the ZNode's
    // client certificate, which this ensemble requires, named in its discovery, signed
    // by the cluster's client CA.
    let sealed = certificates.sealed_secrets();
    let client_ca_secret = sealed
        .iter()
        .find(|secret| secret.metadata.name.as_deref() == Some("simple-zk-client-ca"))
        .and_then(|secret| secret.data.clone())
        .expect("the client CA Secret");
    let ca_text = |key: &str| String::from_utf8_lossy(&client_ca_secret[key].0).into_owned();
    let authority = CertificateAuthority::from_pem(&ca_text("ca.crt"), &ca_text("ca.key"))
        .unwrap_or_else(|error| panic!("{error}"));
    let client = client_secret(
        "hdfs-znode",
        NAMESPACE,
        BTreeMap::new(),
        ClientSigning {
            ca: &authority,
            trusted_pem: &certificates.ca_pem,
            lifetime: DEFAULT_CERTIFICATE_LIFETIME,
        },
        None,
        SystemTime::now(),
    )
    .unwrap_or_else(|error| panic!("{error}"));
    for object in &mut objects {
        if object["kind"] == "ConfigMap" && object["metadata"]["name"] == "hdfs-znode" {
            object["data"]["ca.crt"] = json!(certificates.ca_pem);
            object["data"]["ZOOKEEPER_CLIENT_SECRET"] = json!("hdfs-znode-client-tls");
        }
    }
    objects.extend(sealed.iter().map(to_value));
    let mut client = to_value(&client.sealed);
    client["apiVersion"] = json!("v1");
    client["kind"] = json!("Secret");
    objects.push(client);
    objects
}

/// Where the image directory keeps ZooKeeper (`ZOO_HOME` of the official image).
const ZOOKEEPER_HOME: &str = "/apache-zookeeper-3.9.5-bin";

/// Creates the ZNode's path from inside the ZooKeeper pod with ZooKeeper's own Java
/// client, over TLS with the pod's certificate (there is no plaintext port), as the
/// ZooKeeper operator's client does when it reconciles the ZNode.
pub async fn create_znode_path(runner: &PodRunner) {
    let fqdn = runner
        .names(NAMESPACE, ZOOKEEPER_POD)
        .and_then(|names| names.into_iter().next())
        .expect("the ZooKeeper pod's FQDN");
    let script = zookeeper_operator::build::container::java_client_script(
        ZOOKEEPER_HOME,
        Some(&fqdn),
        &format!("create /znode-{ZNODE_UID}"),
    );
    let (code, output) = runner
        .exec(
            NAMESPACE,
            ZOOKEEPER_POD,
            "zookeeper",
            &["bash", "-c", &script],
            Duration::from_secs(60),
        )
        .await
        .unwrap_or_else(|error| panic!("{error}"))
        .expect("the Java client ends");
    assert!(
        code == 0 && output.contains(&format!("Created /znode-{ZNODE_UID}")),
        "the ZNode's path could not be created: {output}"
    );
}

/// Starts ZooKeeper as the operator runs it (one server, TLS on), creates the ZNode's
/// path, and returns the connection the ZNode's discovery ConfigMap describes.
pub async fn start_zookeeper(runner: &mut PodRunner, policy: PodSecurity) -> ZookeeperConnection {
    let mut objects = zookeeper_objects();
    for object in &mut objects {
        policy.apply_to_value(object);
    }
    apply_all(runner, &objects).unwrap_or_else(|error| panic!("{error}"));
    wait_ready(runner, &[ZOOKEEPER_POD], Duration::from_secs(180)).await;
    create_znode_path(runner).await;
    let discovery = objects
        .iter()
        .find(|object| object["kind"] == "ConfigMap" && object["metadata"]["name"] == "hdfs-znode")
        .expect("the ZNode's discovery ConfigMap");
    let discovery: ConfigMap =
        serde_json::from_value(discovery.clone()).unwrap_or_else(|error| panic!("{error}"));
    let connection =
        connection_of("hdfs-znode", &discovery).unwrap_or_else(|error| panic!("{error}"));
    assert!(
        connection.tls,
        "the ZNode's ConfigMap says TLS, as it does by default"
    );
    connection
}

/// Prints how long each phase of a long test took, so a log shows where its minutes went.
pub struct Phases(std::time::Instant);

impl Phases {
    pub fn start() -> Self {
        Self(std::time::Instant::now())
    }

    /// Ends the phase `what`, and starts the next.
    pub fn done(&mut self, what: &str) {
        eprintln!("phase {what}: {:.1}s", self.0.elapsed().as_secs_f64());
        self.0 = std::time::Instant::now();
    }
}

/// The example HdfsCluster, with a uid as the API server would give it.
pub fn example_cluster() -> HdfsCluster {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/hdfs/simple-hdfs.yaml");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    let mut cluster: HdfsCluster =
        serde_yaml_ng::from_str(&text).unwrap_or_else(|error| panic!("{error}"));
    cluster.metadata.uid = Some("2f0d4c8a-real-hdfs".to_owned());
    cluster
}

/// The objects the operator builds for `cluster` on its first reconcile, with the
/// ZooKeeper connection its ZNode ConfigMap gives: the ZKFCs' keystore Secret with the
/// store it is created with.
pub fn hdfs_objects(cluster: &HdfsCluster, zookeeper: &ZookeeperConnection) -> Vec<Value> {
    let model = ValidatedCluster::new(cluster, DEFAULT_CLUSTER_DOMAIN, zookeeper)
        .unwrap_or_else(|error| panic!("{error}"));
    let state = NameNodeState {
        journal_nodes: model.topology.journalnodes.clone(),
        ..NameNodeState::default()
    };
    let objects = build_cluster(&model, &state);
    let mut values = vec![
        to_value(&objects.namenode_state),
        to_value(&objects.discovery_config_map),
    ];
    if let Some(mut secret) = objects.zookeeper_client.clone() {
        fill_client_keystore(&mut secret).unwrap_or_else(|error| panic!("{error}"));
        values.push(to_value(&secret));
    }
    values.extend(objects.pod_services.iter().map(to_value));
    for group in &objects.role_groups {
        values.extend([
            to_value(&group.config_map),
            to_value(&group.headless_service),
            to_value(&group.metrics_service),
            to_value(&group.stateful_set),
        ]);
    }
    values
}

/// The pod `name` of one of the `objects`' StatefulSets, as the StatefulSet controller
/// would create it again.
pub fn stateful_set_pod(objects: &[Value], name: &str) -> Pod {
    let (set_name, ordinal) = name.rsplit_once('-').expect("<set>-<ordinal>");
    let set: StatefulSet = objects
        .iter()
        .find(|object| object["kind"] == "StatefulSet" && object["metadata"]["name"] == set_name)
        .map(|object| serde_json::from_value(object.clone()).expect("the StatefulSet"))
        .unwrap_or_else(|| panic!("no StatefulSet {set_name}"));
    statefulset::pod(&set, ordinal.parse().expect("an ordinal"))
}

fn to_value<T: serde::Serialize>(object: &T) -> Value {
    serde_json::to_value(object).expect("a rendered object serializes")
}

/// A pod with the Hadoop image and the cluster's discovery ConfigMap as its
/// configuration: the HDFS client a user would run.
pub fn client_pod() -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": CLIENT_POD, "namespace": NAMESPACE},
        "spec": {
            "securityContext": {"runAsUser": 1000, "runAsGroup": 100},
            // A user's client on OpenShift would run under an SCC of its own.
            "serviceAccountName": CLIENT_SERVICE_ACCOUNT,
            // `sleep` as PID 1 ignores SIGTERM, as it would in Kubernetes.
            "terminationGracePeriodSeconds": 1,
            "containers": [{
                "name": "client",
                "image": "docker.io/apache/hadoop:3.4.2",
                "command": ["sleep", "infinity"],
                "env": [
                    // The image names uid 1000 `hadoop`; the host the runner takes its
                    // users from may not.
                    {"name": "HADOOP_USER_NAME", "value": "hadoop"},
                    {"name": "HADOOP_CONF_DIR", "value": "/strata/client"},
                    {"name": "HADOOP_CLIENT_OPTS", "value": "-Xmx192m"},
                    {"name": "HADOOP_LOG_DIR", "value": "/tmp"}
                ],
                "volumeMounts": [{"name": "config", "mountPath": "/strata/client", "readOnly": true}]
            }],
            "volumes": [{"name": "config", "configMap": {"name": "simple-hdfs"}}]
        }
    })
}

/// Runs a shell command in the client pod; its exit code and output.
pub async fn client(runner: &PodRunner, script: &str) -> (i32, String) {
    runner
        .exec(
            NAMESPACE,
            CLIENT_POD,
            "client",
            &["bash", "-c", script],
            Duration::from_secs(120),
        )
        .await
        .unwrap_or_else(|error| panic!("{error}"))
        .unwrap_or_else(|| panic!("`{script}` overran two minutes"))
}

/// Waits until every pod is Ready; fails with each pod's status and log tails.
pub async fn wait_ready(runner: &PodRunner, pods: &[&str], timeout: Duration) {
    runner
        .wait_ready(NAMESPACE, pods, timeout)
        .await
        .unwrap_or_else(|report| panic!("{report}"));
}

/// Waits until `test` holds; fails with every pod's status and log tails.
pub async fn wait_for(
    runner: &PodRunner,
    timeout: Duration,
    what: &str,
    test: impl Fn(&PodRunner) -> bool,
) {
    runner
        .wait_until(timeout, what, test)
        .await
        .unwrap_or_else(|report| panic!("{report}"));
}

/// The whole log of a container's first run.
pub fn log(runner: &PodRunner, pod: &str, container: &str) -> String {
    runner
        .log(NAMESPACE, pod, container, 0)
        .and_then(|path| std::fs::read_to_string(path).ok())
        .unwrap_or_default()
}

/// A pod's status, which must exist.
pub fn status(runner: &PodRunner, pod: &str) -> PodStatus {
    runner
        .status(NAMESPACE, pod)
        .unwrap_or_else(|| panic!("no pod {pod}"))
}

/// The namenode pods of the example.
pub const NAMENODES: [&str; 2] = [
    "simple-hdfs-namenode-default-0",
    "simple-hdfs-namenode-default-1",
];

/// A JMX bean of a namenode, asked from the client pod with the operator's own HTTP
/// client; `None` while it does not answer.
pub fn jmx(runner: &PodRunner, namenode: &str, query: &str) -> Option<Value> {
    let address = format!("{}:9870", runner.address(NAMESPACE, namenode)?);
    let path = format!("/jmx?qry={query}");
    let (status, body) = in_pod(runner, CLIENT_POD, move || async move {
        hdfs_operator::controller::namenode_http::get(&address, &path, Duration::from_secs(5)).await
    })?;
    let beans: Value = serde_json::from_str(&body).ok().filter(|_| status == 200)?;
    beans["beans"].get(0).cloned()
}

/// A namenode's HA state (`active`, `standby`), from its `NameNodeStatus` bean.
pub fn ha_state(runner: &PodRunner, namenode: &str) -> Option<String> {
    jmx(
        runner,
        namenode,
        "Hadoop:service=NameNode,name=NameNodeStatus",
    )?["State"]
        .as_str()
        .map(str::to_owned)
}

/// Runs a shell command in the client pod of a runner shared with a node agent; the
/// lock is held only to prepare the command, not while it runs.
pub async fn client_shared(
    runner: &std::sync::Arc<tokio::sync::Mutex<PodRunner>>,
    script: &str,
) -> (i32, String) {
    let plan = runner
        .lock()
        .await
        .exec_plan(NAMESPACE, CLIENT_POD, "client", &["bash", "-c", script])
        .unwrap_or_else(|error| panic!("{error}"));
    plan.run(Duration::from_secs(120))
        .await
        .unwrap_or_else(|error| panic!("{error}"))
        .unwrap_or_else(|| panic!("`{script}` overran two minutes"))
}

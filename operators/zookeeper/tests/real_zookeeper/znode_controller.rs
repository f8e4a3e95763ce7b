//! The ZNode controller against a real ZooKeeper 3.9.5 server: Kubernetes objects live in
//! the in-memory API (`strata_test_apiserver`), znodes in a standalone server that the pod
//! runner runs from the render of the same `ZookeeperCluster` manifest the test creates.
//!
//! The operator reaches the server through a forward of its pod's client port, given as
//! its [`EnsembleAddress`](zookeeper_operator::controller::znode::EnsembleAddress) (the
//! client Service of a real cluster has no address on this host); the address follows
//! the pod when it is run again. Pods do not exist either; where a test needs
//! the cluster to notice an outage, it reports the StatefulSet's availability as the
//! StatefulSet controller would, which is how a real cluster learns it.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, PostParams};
use pretty_assertions::assert_eq;
use strata_operator::error::BackoffPolicy;
use strata_status::{ConditionStatus, ConditionType};
use strata_test_apiserver::TestApiServer;
use strata_testing::Harness;
use strata_testing::wait::wait_for_event;
use zookeeper_operator::OPERATOR_NAME;
use zookeeper_operator::build::discovery::{
    ZOOKEEPER_CHROOT_KEY, ZOOKEEPER_CLIENT_PORT_KEY, ZOOKEEPER_HOSTS_KEY, ZOOKEEPER_KEY,
};
use zookeeper_operator::controller::RunOptions;
use zookeeper_operator::controller::leader::PodDnsName;
use zookeeper_operator::controller::znode::{FINALIZER, KEEP_PATH_ANNOTATION};
use zookeeper_operator::crd::{ClusterRef, ZookeeperCluster, ZookeeperZnode, ZookeeperZnodeSpec};
use zookeeper_operator::validate::DEFAULT_CLUSTER_DOMAIN;
use zookeeper_operator::znode_client::ZnodeClient;

use crate::support::pods::{SharedHosts, Standalone};
use crate::support::standalone_manifest;

type TestResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

const NAMESPACE: &str = "default";
/// Bound on every ZooKeeper call of the operator, connect included.
const ZOOKEEPER_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a test waits for the operator to reach a state; covers a connect timeout and
/// a few retries.
const WAIT: Duration = Duration::from_secs(20);

/// Starts both controllers against a fresh in-memory API with both CRDs registered.
/// `backoff` replaces the harness's short retry delays when a test must rule out retries.
/// Every cluster is reachable at the one test server, `hosts`.
fn start_operator(hosts: Arc<SharedHosts>, backoff: Option<BackoffPolicy>) -> Harness {
    start_operator_watching(hosts, backoff, false)
}

/// [`start_operator`], watching every namespace when `every_namespace` is set (as the
/// chart installs it by default), not only the harness's.
fn start_operator_watching(
    hosts: Arc<SharedHosts>,
    backoff: Option<BackoffPolicy>,
    every_namespace: bool,
) -> Harness {
    let server = TestApiServer::new();
    server.register::<ZookeeperCluster>();
    server.register::<ZookeeperZnode>();
    Harness::start(server, OPERATOR_NAME, move |mut runtime| {
        if let Some(backoff) = backoff {
            runtime.backoff = backoff;
        }
        if every_namespace {
            runtime.namespace = None;
        }
        zookeeper_operator::controller::run(
            runtime,
            RunOptions {
                cluster_domain: DEFAULT_CLUSTER_DOMAIN.into(),
                ensemble_address: hosts,
                zookeeper_timeout: ZOOKEEPER_TIMEOUT,
                znode_check_period: Duration::from_secs(1),
                server_address: Arc::new(PodDnsName),
            },
        )
    })
}

async fn create_cluster(harness: &Harness, name: &str) -> TestResult {
    let cluster: ZookeeperCluster = serde_yaml_ng::from_str(&standalone_manifest(name))?;
    Api::<ZookeeperCluster>::namespaced(harness.server.client(), NAMESPACE)
        .create(&PostParams::default(), &cluster)
        .await?;
    Ok(())
}

/// Creates a ZNode whose `clusterRef` names no namespace: the cluster is looked up, and
/// watched, in the ZNode's own namespace.
async fn create_znode(harness: &Harness, name: &str, cluster: &str) -> TestResult {
    let mut znode = ZookeeperZnode::new(
        name,
        ZookeeperZnodeSpec {
            cluster_ref: ClusterRef {
                name: cluster.to_owned(),
                namespace: None,
            },
        },
    );
    znode.metadata.namespace = Some(NAMESPACE.to_owned());
    Api::<ZookeeperZnode>::namespaced(harness.server.client(), NAMESPACE)
        .create(&PostParams::default(), &znode)
        .await?;
    Ok(())
}

fn condition(znode: &ZookeeperZnode, type_: ConditionType) -> Option<(ConditionStatus, &str)> {
    znode
        .status
        .as_ref()?
        .resource
        .conditions
        .iter()
        .find(|condition| condition.type_ == type_)
        .map(|condition| (condition.status, condition.reason.as_str()))
}

/// Waits until the ZNode's Available condition has `status` and `reason`; the error shows
/// the status it had instead.
async fn wait_for_available(
    harness: &Harness,
    name: &str,
    status: ConditionStatus,
    reason: &str,
) -> Result<ZookeeperZnode, Box<dyn std::error::Error + Send + Sync>> {
    let wanted = Some((status, reason));
    let reached = harness
        .server
        .wait_for::<ZookeeperZnode>(
            NAMESPACE,
            name,
            |znode| condition(znode, ConditionType::Available) == wanted,
            WAIT,
        )
        .await;
    reached.map_err(|error| {
        let current = harness
            .server
            .get_typed::<ZookeeperZnode>(NAMESPACE, name)
            .map(|znode| format!("{:#?}", znode.status));
        format!(
            "ZNode {name} never became Available={status} ({reason}): {error}; status: {current:?}"
        )
        .into()
    })
}

fn recorded_path(znode: &ZookeeperZnode) -> Result<String, String> {
    znode
        .status
        .as_ref()
        .and_then(|status| status.znode_path.clone())
        .ok_or_else(|| format!("ZNode {} has no status.znodePath", znode.name_any()))
}

fn discovery_data(harness: &Harness, name: &str) -> Option<BTreeMap<String, String>> {
    harness
        .server
        .get_typed::<ConfigMap>(NAMESPACE, name)
        .and_then(|config_map| config_map.data)
}

/// Reports the cluster's StatefulSet as the StatefulSet controller would, with
/// `available` of its one replica ready, and waits for the cluster's Available condition
/// to follow.
async fn report_server_available(harness: &Harness, cluster: &str, available: bool) -> TestResult {
    let statefulset = format!("{cluster}-server-default");
    let stored = harness
        .server
        .wait_for::<StatefulSet>(NAMESPACE, &statefulset, |_| true, WAIT)
        .await?;
    let ready = i32::from(available);
    harness.server.patch_status_direct::<StatefulSet>(
        NAMESPACE,
        &statefulset,
        serde_json::json!({
            "observedGeneration": stored.metadata.generation,
            "replicas": 1,
            "readyReplicas": ready,
            "availableReplicas": ready,
            "updatedReplicas": 1,
            "currentRevision": "r1",
            "updateRevision": "r1",
        }),
    )?;
    let expected = if available {
        ConditionStatus::True
    } else {
        ConditionStatus::False
    };
    harness
        .server
        .wait_for::<ZookeeperCluster>(
            NAMESPACE,
            cluster,
            |zk| {
                zk.status
                    .as_ref()
                    .and_then(|status| status.condition(ConditionType::Available))
                    .is_some_and(|condition| condition.status == expected)
            },
            WAIT,
        )
        .await?;
    Ok(())
}

async fn path_exists(
    zk: &Standalone,
    path: &str,
) -> Result<bool, Box<dyn std::error::Error + Send + Sync>> {
    let client = ZnodeClient::connect(&zk.connection_string(), ZOOKEEPER_TIMEOUT).await?;
    Ok(client.exists(path).await?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root and the ZooKeeper image directory (STRATA_ZOOKEEPER_IMAGE); run by cargo xtask test"]
async fn znode_path_is_created_published_and_removed_with_its_object() -> TestResult {
    let started = Instant::now();
    let zk = Standalone::start("lifecycle-zk").await?;
    let hosts = zk.connection_string();
    let harness = start_operator(zk.ensemble_address(), None);
    create_cluster(&harness, "lifecycle-zk").await?;
    create_znode(&harness, "app-znode", "lifecycle-zk").await?;
    create_znode(&harness, "other-znode", "lifecycle-zk").await?;

    let znode =
        wait_for_available(&harness, "app-znode", ConditionStatus::True, "AsExpected").await?;
    let available_after = started.elapsed();
    let path = recorded_path(&znode)?;
    assert_eq!(path, format!("/znode-{}", znode.uid().unwrap_or_default()));
    assert!(
        path_exists(&zk, &path).await?,
        "{path} missing in ZooKeeper"
    );
    assert!(
        znode.finalizers().iter().any(|f| f == FINALIZER),
        "{znode:?}"
    );
    assert_eq!(
        condition(&znode, ConditionType::Degraded),
        Some((ConditionStatus::False, "AsExpected"))
    );

    let expected = BTreeMap::from(
        [
            (ZOOKEEPER_KEY, format!("{hosts}{path}")),
            (ZOOKEEPER_HOSTS_KEY, hosts.clone()),
            (ZOOKEEPER_CHROOT_KEY, path.clone()),
            (ZOOKEEPER_CLIENT_PORT_KEY, "2181".to_owned()),
        ]
        .map(|(key, value)| (key.to_owned(), value)),
    );
    assert_eq!(discovery_data(&harness, "app-znode"), Some(expected));
    let config_map = harness
        .server
        .get_typed::<ConfigMap>(NAMESPACE, "app-znode")
        .ok_or("discovery ConfigMap missing")?;
    assert!(
        config_map
            .owner_references()
            .iter()
            .any(|owner| Some(&owner.uid) == znode.uid().as_ref() && owner.controller == Some(true)),
        "{config_map:?}"
    );

    let other =
        wait_for_available(&harness, "other-znode", ConditionStatus::True, "AsExpected").await?;
    let other_path = recorded_path(&other)?;
    assert_ne!(other_path, path);

    Api::<ZookeeperZnode>::namespaced(harness.server.client(), NAMESPACE)
        .delete("app-znode", &DeleteParams::default())
        .await?;
    harness
        .server
        .wait_for_deletion::<ZookeeperZnode>(NAMESPACE, "app-znode", WAIT)
        .await?;
    assert!(!path_exists(&zk, &path).await?, "{path} survived its ZNode");
    assert!(
        path_exists(&zk, &other_path).await?,
        "{other_path} of another ZNode was removed too"
    );
    harness
        .server
        .wait_for_deletion::<ConfigMap>(NAMESPACE, "app-znode", WAIT)
        .await?;
    assert!(discovery_data(&harness, "other-znode").is_some());

    eprintln!(
        "znode lifecycle: Available after {available_after:?}, test body took {:?}",
        started.elapsed()
    );
    zk.shutdown().await;
    Ok(())
}

/// A ZNode of a cluster exposed through a load balancer publishes the address a client
/// outside the cluster uses, once the load balancer has one (issue 26, item 3), and
/// nothing before: the cluster's discovery ConfigMap is where it comes from.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root and the ZooKeeper image directory (STRATA_ZOOKEEPER_IMAGE); run by cargo xtask test"]
async fn a_znode_publishes_the_address_its_cluster_has_outside() -> TestResult {
    let zk = Standalone::start("exposed-zk").await?;
    let harness = start_operator(zk.ensemble_address(), None);
    let mut cluster: ZookeeperCluster =
        serde_yaml_ng::from_str(&standalone_manifest("exposed-zk"))?;
    cluster.spec.cluster_config.service =
        serde_json::from_value(serde_json::json!({"type": "LoadBalancer"}))?;
    Api::<ZookeeperCluster>::namespaced(harness.server.client(), NAMESPACE)
        .create(&PostParams::default(), &cluster)
        .await?;
    create_znode(&harness, "exposed-znode", "exposed-zk").await?;
    wait_for_available(
        &harness,
        "exposed-znode",
        ConditionStatus::True,
        "AsExpected",
    )
    .await?;
    let before = discovery_data(&harness, "exposed-znode").unwrap_or_default();
    assert!(
        !before.contains_key("ZOOKEEPER_EXTERNAL_HOST"),
        "no address before the load balancer has one: {before:?}"
    );

    harness.server.patch_status_direct::<Service>(
        NAMESPACE,
        "exposed-zk",
        serde_json::json!({"loadBalancer": {"ingress": [{"hostname": "zk.example.com"}]}}),
    )?;
    let published = harness
        .server
        .wait_for::<ConfigMap>(
            NAMESPACE,
            "exposed-znode",
            |config_map| {
                config_map.data.as_ref().is_some_and(|data| {
                    data.get("ZOOKEEPER_EXTERNAL_HOST").map(String::as_str)
                        == Some("zk.example.com")
                })
            },
            WAIT,
        )
        .await?
        .data
        .unwrap_or_default();
    assert_eq!(published["ZOOKEEPER_EXTERNAL_PORT"], "2181");
    assert_eq!(
        published[ZOOKEEPER_CHROOT_KEY],
        before[ZOOKEEPER_CHROOT_KEY]
    );
    zk.shutdown().await;
    Ok(())
}

/// The periodic check alone notices an outage: nothing about the cluster changes in
/// Kubernetes (its pods still look ready), as in a network partition between the
/// operator and the ensemble. The operator here checks every second.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root and the ZooKeeper image directory (STRATA_ZOOKEEPER_IMAGE); run by cargo xtask test"]
async fn the_periodic_check_notices_an_outage_the_cluster_status_does_not_show() -> TestResult {
    let mut zk = Standalone::start("silent-zk").await?;
    let harness = start_operator(zk.ensemble_address(), None);
    create_cluster(&harness, "silent-zk").await?;
    create_znode(&harness, "silent-znode", "silent-zk").await?;
    wait_for_available(
        &harness,
        "silent-znode",
        ConditionStatus::True,
        "AsExpected",
    )
    .await?;
    report_server_available(&harness, "silent-zk", true).await?;
    harness.settle().await;

    zk.stop().await?;
    let stopped = Instant::now();
    wait_for_available(
        &harness,
        "silent-znode",
        ConditionStatus::False,
        "EnsembleUnreachable",
    )
    .await?;
    eprintln!(
        "periodic check: outage noticed after {:?} with a 1 s check period",
        stopped.elapsed()
    );

    zk.restart().await?;
    wait_for_available(
        &harness,
        "silent-znode",
        ConditionStatus::True,
        "AsExpected",
    )
    .await?;
    zk.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root and the ZooKeeper image directory (STRATA_ZOOKEEPER_IMAGE); run by cargo xtask test"]
async fn ensemble_outage_degrades_the_znode_and_keeps_its_path() -> TestResult {
    let mut zk = Standalone::start("outage-zk").await?;
    let harness = start_operator(zk.ensemble_address(), None);
    create_cluster(&harness, "outage-zk").await?;
    create_znode(&harness, "outage-znode", "outage-zk").await?;
    let before = wait_for_available(
        &harness,
        "outage-znode",
        ConditionStatus::True,
        "AsExpected",
    )
    .await?;
    let path = recorded_path(&before)?;
    let published = discovery_data(&harness, "outage-znode");
    report_server_available(&harness, "outage-zk", true).await?;

    // The server dies; its pod turns unready, so the cluster's status changes, which
    // requeues the cluster's ZNodes.
    zk.stop().await?;
    let stopped = Instant::now();
    report_server_available(&harness, "outage-zk", false).await?;
    let during = wait_for_available(
        &harness,
        "outage-znode",
        ConditionStatus::False,
        "EnsembleUnreachable",
    )
    .await?;
    let noticed_after = stopped.elapsed();
    assert_eq!(
        condition(&during, ConditionType::Degraded),
        Some((ConditionStatus::True, "EnsembleUnreachable"))
    );
    assert_eq!(recorded_path(&during)?, path);
    assert!(during.finalizers().iter().any(|f| f == FINALIZER));
    assert!(during.metadata.deletion_timestamp.is_none());
    assert_eq!(discovery_data(&harness, "outage-znode"), published);

    // The same pod on the same claim: the path must still be there.
    zk.restart().await?;
    let restarted = Instant::now();
    report_server_available(&harness, "outage-zk", true).await?;
    let after = wait_for_available(
        &harness,
        "outage-znode",
        ConditionStatus::True,
        "AsExpected",
    )
    .await?;
    let recovered_after = restarted.elapsed();
    assert_eq!(recorded_path(&after)?, path);
    assert!(
        path_exists(&zk, &path).await?,
        "{path} was lost in the outage"
    );
    assert_eq!(discovery_data(&harness, "outage-znode"), published);

    eprintln!(
        "znode outage: EnsembleUnreachable {noticed_after:?} after the stop, \
         Available {recovered_after:?} after the restart"
    );
    zk.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root and the ZooKeeper image directory (STRATA_ZOOKEEPER_IMAGE); run by cargo xtask test"]
async fn znode_waits_for_its_cluster_and_follows_its_creation() -> TestResult {
    let zk = Standalone::start("late-zk").await?;
    // Retries wait two minutes, far beyond this test's waits: the ZNode can only become
    // Available in time because the cluster watch requeues it.
    let patient = BackoffPolicy {
        initial: Duration::from_secs(120),
        max: Duration::from_secs(120),
        invalid_spec: Duration::from_secs(120),
    };
    let harness = start_operator(zk.ensemble_address(), Some(patient));
    create_znode(&harness, "early-znode", "late-zk").await?;

    let waiting = wait_for_available(
        &harness,
        "early-znode",
        ConditionStatus::False,
        "ClusterNotFound",
    )
    .await?;
    assert!(
        waiting
            .status
            .as_ref()
            .is_some_and(|status| status.znode_path.is_none()),
        "no path is reserved before the cluster exists: {:?}",
        waiting.status
    );
    let path = format!("/znode-{}", waiting.uid().unwrap_or_default());
    assert!(!path_exists(&zk, &path).await?);
    assert!(discovery_data(&harness, "early-znode").is_none());

    let created = Instant::now();
    create_cluster(&harness, "late-zk").await?;
    let ready =
        wait_for_available(&harness, "early-znode", ConditionStatus::True, "AsExpected").await?;
    let followed_after = created.elapsed();
    assert_eq!(recorded_path(&ready)?, path);
    assert!(
        path_exists(&zk, &path).await?,
        "{path} missing in ZooKeeper"
    );
    assert!(discovery_data(&harness, "early-znode").is_some());

    eprintln!("znode waiting for its cluster: Available {followed_after:?} after the cluster");
    zk.shutdown().await;
    Ok(())
}

/// Security review, finding 2: a ZNode in another namespace gets a path (and, with TLS,
/// a client certificate) only once the cluster's owner lists that namespace. Until
/// then it is refused, with a reason that says how to allow it, and the real ensemble
/// has no path for it; the cluster watch follows the owner's consent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root and the ZooKeeper image directory (STRATA_ZOOKEEPER_IMAGE); run by cargo xtask test"]
async fn a_znode_from_another_namespace_waits_for_the_clusters_consent() -> TestResult {
    const TENANT: &str = "tenant";
    let zk = Standalone::start("shared-zk").await?;
    let harness = start_operator_watching(zk.ensemble_address(), None, true);
    create_cluster(&harness, "shared-zk").await?;
    let mut znode = ZookeeperZnode::new(
        "foreign-znode",
        ZookeeperZnodeSpec {
            cluster_ref: ClusterRef {
                name: "shared-zk".to_owned(),
                namespace: Some(NAMESPACE.to_owned()),
            },
        },
    );
    znode.metadata.namespace = Some(TENANT.to_owned());
    // A client certificate issued before the namespace was refused (by an earlier
    // release, which allowed every namespace): withdrawn.
    let issued_before: Secret = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "foreign-znode-client-tls", "namespace": TENANT},
        "stringData": {"tls.crt": "issued before"},
    }))?;
    let secrets = Api::<Secret>::namespaced(harness.server.client(), TENANT);
    secrets
        .create(&PostParams::default(), &issued_before)
        .await?;
    Api::<ZookeeperZnode>::namespaced(harness.server.client(), TENANT)
        .create(&PostParams::default(), &znode)
        .await?;
    let available = |znode: &ZookeeperZnode| {
        condition(znode, ConditionType::Available)
            .map(|(status, reason)| (status, reason.to_owned()))
    };

    let refused = harness
        .server
        .wait_for::<ZookeeperZnode>(
            TENANT,
            "foreign-znode",
            |znode| {
                available(znode)
                    == Some((
                        ConditionStatus::False,
                        "ZnodeNamespaceNotAllowed".to_owned(),
                    ))
            },
            WAIT,
        )
        .await
        .map_err(|error| {
            let current = harness
                .server
                .get_typed::<ZookeeperZnode>(TENANT, "foreign-znode")
                .map(|znode| format!("{:#?}", znode.status));
            format!("{error}; status: {current:?}")
        })?;
    let message = refused
        .status
        .as_ref()
        .and_then(|status| status.resource.condition(ConditionType::Degraded))
        .map(|condition| condition.message.clone())
        .unwrap_or_default();
    assert!(
        message.contains("spec.clusterConfig.znodeNamespaces"),
        "{message}"
    );
    assert!(
        refused
            .status
            .as_ref()
            .is_some_and(|status| status.znode_path.is_none()),
        "no path is reserved for a refused ZNode: {:?}",
        refused.status
    );
    let path = format!("/znode-{}", refused.uid().unwrap_or_default());
    assert!(
        !path_exists(&zk, &path).await?,
        "{path} exists in ZooKeeper"
    );
    assert!(
        harness
            .server
            .get_typed::<ConfigMap>(TENANT, "foreign-znode")
            .is_none(),
        "a refused ZNode publishes no discovery"
    );
    wait_for_event(
        &harness,
        "foreign-znode",
        "Warning",
        "ZnodeNamespaceNotAllowed",
    )
    .await;
    assert!(
        secrets.get_opt("foreign-znode-client-tls").await?.is_none(),
        "the client certificate of a refused ZNode is withdrawn"
    );

    harness
        .server
        .modify::<ZookeeperCluster>(NAMESPACE, "shared-zk", |cluster| {
            cluster.spec.cluster_config.znode_namespaces = vec![TENANT.to_owned()];
        })?;
    let allowed = harness
        .server
        .wait_for::<ZookeeperZnode>(
            TENANT,
            "foreign-znode",
            |znode| available(znode) == Some((ConditionStatus::True, "AsExpected".to_owned())),
            WAIT,
        )
        .await?;
    assert_eq!(recorded_path(&allowed)?, path);
    assert!(
        path_exists(&zk, &path).await?,
        "{path} missing in ZooKeeper"
    );
    zk.shutdown().await;
    Ok(())
}

/// An application that protects its nodes with ACLs (as Kafka, HBase and HDFS do) blocks
/// the path's removal: the ZNode says so in Degraded with a Warning Event, keeps its
/// finalizer, and the keep-path annotation releases it with the path in place.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root and the ZooKeeper image directory (STRATA_ZOOKEEPER_IMAGE); run by cargo xtask test"]
async fn acls_that_block_the_removal_are_reported_and_the_annotation_keeps_the_path() -> TestResult
{
    use zookeeper_client::{Acl, Acls, AuthId, CreateMode, Permission};

    let zk = Standalone::start("acl-zk").await?;
    let harness = start_operator(zk.ensemble_address(), None);
    create_cluster(&harness, "acl-zk").await?;
    create_znode(&harness, "acl-znode", "acl-zk").await?;
    let znode =
        wait_for_available(&harness, "acl-znode", ConditionStatus::True, "AsExpected").await?;
    let path = recorded_path(&znode)?;

    // The application's node may be read and extended by anyone, but not deleted from.
    let application = zookeeper_client::Client::connect(&zk.connection_string()).await?;
    let protected = format!("{path}/app");
    let no_delete = [Acl::new(
        Permission::READ | Permission::CREATE,
        AuthId::anyone(),
    )];
    application
        .create(
            &protected,
            b"",
            &CreateMode::Persistent.with_acls(Acls::new(&no_delete)),
        )
        .await?;
    application
        .create(
            &format!("{protected}/leaf"),
            b"",
            &CreateMode::Persistent.with_acls(Acls::anyone_all()),
        )
        .await?;

    Api::<ZookeeperZnode>::namespaced(harness.server.client(), NAMESPACE)
        .delete("acl-znode", &DeleteParams::default())
        .await?;
    let blocked = wait_for_available(
        &harness,
        "acl-znode",
        ConditionStatus::False,
        "PathProtectedByAcl",
    )
    .await?;
    assert!(
        blocked.metadata.deletion_timestamp.is_some()
            && blocked.finalizers().iter().any(|f| f == FINALIZER),
        "the finalizer holds the ZNode: {blocked:?}"
    );
    wait_for_event(&harness, "acl-znode", "Warning", "PathProtectedByAcl").await;

    harness
        .server
        .modify::<ZookeeperZnode>(NAMESPACE, "acl-znode", |znode| {
            znode
                .metadata
                .annotations
                .get_or_insert_default()
                .insert(KEEP_PATH_ANNOTATION.to_owned(), "true".to_owned());
        })?;
    harness
        .server
        .wait_for_deletion::<ZookeeperZnode>(NAMESPACE, "acl-znode", WAIT)
        .await?;
    assert!(
        path_exists(&zk, &format!("{protected}/leaf")).await?,
        "the kept path lost data"
    );
    zk.shutdown().await;
    Ok(())
}

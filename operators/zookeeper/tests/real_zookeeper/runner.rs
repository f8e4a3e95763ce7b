//! The examples' ensembles through the pod runner, exactly as rendered (three servers;
//! and three participants with two observers): ZooKeeper 3.9.5 of the image directory,
//! each in its own network namespace, with the rendered `zoo.cfg` unchanged (TLS on by
//! default with the certificates the operator's certificate step makes, metrics provider
//! and client ports included), the rendered probes, each server's identity from the
//! rendered init container, and a path written through one server and read through
//! another. With TLS on there is no plaintext port, so the servers are asked over TLS
//! on the secure port, checked against the operator's CA, and the path is written by
//! ZooKeeper's own Java client in the pods, over TLS too. Needs root and the ZooKeeper
//! image directory (`STRATA_ZOOKEEPER_IMAGE`).

#![allow(clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::time::Duration;

use rstest::rstest;
use serde_json::{Value, json};
use strata_operator::pod_security::PodSecurity;
use strata_pod_runner::manifest::apply_all;
use strata_pod_runner::openshift::RestrictedV2;
use strata_pod_runner::runner::PodRunner;

use crate::support::issued_secrets;
use crate::support::pods::{NAMESPACE, SECURE_PORT, java_client, pod_address, pod_runner_on};
use crate::tls::{client_config, srvr_over_tls, word_over_tls};

/// An example's documents, as `zookeeper-operator render -f` reads them, with `edit`
/// applied to its ZookeeperCluster.
fn example(file: &str, edit: impl FnOnce(&mut Value)) -> Vec<Value> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/zookeeper")
        .join(file);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    let mut documents =
        strata_testing::yaml::documents(&text).unwrap_or_else(|error| panic!("{error}"));
    if let Some(cluster) = documents
        .iter_mut()
        .find(|document| document["kind"] == "ZookeeperCluster")
    {
        edit(cluster);
    }
    documents
}

/// Runs `work` inside `pod`'s network, on a runtime of its own.
fn in_pod<T: Send + 'static, F: Future<Output = T>>(
    runner: &PodRunner,
    pod: &str,
    work: impl FnOnce() -> F + Send + 'static,
) -> T {
    runner
        .in_pod(NAMESPACE, pod, move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime in the pod's network")
                .block_on(work())
        })
        .unwrap_or_else(|error| panic!("{error}"))
}

#[rstest]
#[case::the_simple_example(
    None,
    example("simple-cluster.yaml", |_| {}),
    &["simple-zk-server-default-0", "simple-zk-server-default-1", "simple-zk-server-default-2"],
    &["follower", "follower", "leader"],
)]
#[case::two_role_groups_the_second_of_observers_on_openshift_with_an_arbitrary_uid(
    Some(RestrictedV2::random()),
    example("two-role-groups.yaml", |cluster| {
        cluster["spec"]["servers"]["roleGroups"]["secondary"]["config"]["peerType"] = json!("observer");
    }),
    &[
        "split-zk-server-primary-0",
        "split-zk-server-primary-1",
        "split-zk-server-primary-2",
        "split-zk-server-secondary-0",
        "split-zk-server-secondary-1",
    ],
    &["follower", "follower", "leader", "observer", "observer"],
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root and the ZooKeeper image directory (STRATA_ZOOKEEPER_IMAGE); run by cargo xtask test"]
async fn the_rendered_ensemble_elects_replicates_and_serves_metrics_on_3_9_5(
    #[case] openshift: Option<RestrictedV2>,
    #[case] documents: Vec<Value>,
    #[case] servers: &[&str],
    #[case] expected_modes: &[&str],
) {
    let mut runner = pod_runner_on(openshift).unwrap_or_else(|error| panic!("{error}"));
    let mut cluster = documents
        .iter()
        .find(|document| document["kind"] == "ZookeeperCluster")
        .cloned()
        .expect("the example's cluster");
    cluster["metadata"]["namespace"] = json!(NAMESPACE);
    let (secrets, ca_pem) = issued_secrets(&cluster);
    for secret in secrets {
        runner
            .apply_secret(secret)
            .unwrap_or_else(|error| panic!("{error}"));
    }
    let policy = match openshift {
        Some(_) => PodSecurity::Openshift,
        None => PodSecurity::Standard,
    };
    let objects: Vec<Value> = zookeeper_operator::render::render(&documents)
        .unwrap_or_else(|error| panic!("{error}"))
        .objects
        .into_iter()
        .filter(|object| object["kind"] != "Secret")
        .map(|mut object| {
            policy.apply_to_value(&mut object);
            object
        })
        .collect();
    apply_all(&mut runner, &objects).unwrap_or_else(|error| panic!("{error}"));
    runner
        .wait_ready(NAMESPACE, servers, Duration::from_secs(180))
        .await
        .unwrap_or_else(|report| panic!("{report}"));

    // Each server's mode, each on 3.9.5, each with the identity the rendered init
    // container gave its pod: the `server.<serverId>` line names the pod.
    let mut modes = Vec::new();
    for pod in servers.iter().copied() {
        let secure = pod_address(&runner, pod, SECURE_PORT).expect("the pod's address");
        let fqdn = runner
            .names(NAMESPACE, pod)
            .and_then(|names| names.into_iter().next())
            .expect("the pod's FQDN");
        let config = client_config(&ca_pem, None);
        let (srvr, conf) = crate::tls::in_pod(&runner, pod, move || {
            srvr_over_tls(config.clone(), &fqdn, secure)
                .and_then(|srvr| Ok((srvr, word_over_tls(config, &fqdn, secure, "conf")?)))
        })
        .unwrap_or_else(|error| panic!("srvr and conf on {pod}: {error}"));
        let server_id = conf
            .lines()
            .find_map(|line| line.strip_prefix("serverId="))
            .unwrap_or_else(|| panic!("{pod}: {conf}"));
        let own_line = format!("server.{server_id}={pod}.");
        assert!(
            conf.lines().any(|line| line.starts_with(&own_line)),
            "{pod} took another server's identity: {conf}"
        );
        assert!(srvr.contains("Zookeeper version: 3.9.5"), "{pod}: {srvr}");
        let mode = srvr
            .lines()
            .find_map(|line| line.strip_prefix("Mode: "))
            .unwrap_or_else(|| panic!("{pod}: {srvr}"))
            .to_owned();
        modes.push(mode);
    }
    modes.sort();
    assert_eq!(modes, expected_modes);

    // A path written through one server is read through another.
    let (first_pod, last_pod) = (servers[0], servers[servers.len() - 1]);
    let created = java_client(&runner, first_pod, "create /znode-through-the-runner")
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    assert!(
        created.contains("Created /znode-through-the-runner"),
        "{created}"
    );
    let read = java_client(&runner, last_pod, "stat /znode-through-the-runner")
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    assert!(
        read.contains("cZxid") && !read.contains("does not exist"),
        "the path is not replicated: {read}"
    );

    // The rendered metrics port serves Prometheus text.
    let metrics = pod_address(&runner, last_pod, 7000)
        .expect("the pod\'s address")
        .to_string();
    let answer = in_pod(&runner, last_pod, move || async move {
        strata_testing::http::request(&metrics, "GET", "/metrics", &[], None)
    })
    .unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert!(
        answer.body.contains("# TYPE znode_count gauge"),
        "{}",
        answer.body
    );
    // Every metric the alerts read is served by some server (the leader-only gauges by
    // the leader alone).
    let mut served = String::new();
    for pod in servers {
        let metrics = pod_address(&runner, pod, 7000)
            .expect("the pod's address")
            .to_string();
        let answer = in_pod(&runner, pod, move || async move {
            strata_testing::http::request(&metrics, "GET", "/metrics", &[], None)
        })
        .unwrap_or_else(|error| panic!("{error}"));
        served.push_str(&answer.body);
    }
    for group in zookeeper_operator::build::alerts::rule_groups("namespace=\"default\"", false) {
        for name in group.metric_names() {
            assert!(
                served.contains(&format!("# TYPE {name} ")),
                "no server serves {name}, which an alert reads:\n{served}"
            );
        }
    }

    // On OpenShift, the servers wrote their data as the namespace's arbitrary uid.
    if let Some(range) = openshift {
        let owners = data_owners(runner.claims());
        assert!(
            !owners.is_empty() && owners.iter().all(|uid| *uid == range.first_uid),
            "the data belongs to {owners:?}, not to {}",
            range.first_uid
        );
    }
    runner.shutdown().await;
}

/// The owners of the servers' `version-2` data directories on their claims.
fn data_owners(claims: &std::path::Path) -> Vec<u32> {
    use std::os::unix::fs::MetadataExt;
    let claims = std::fs::read_dir(claims.join(NAMESPACE)).expect("the claims");
    claims
        .filter_map(Result::ok)
        .filter_map(|claim| std::fs::metadata(claim.path().join("version-2")).ok())
        .map(|metadata| metadata.uid())
        .collect()
}

//! A new cluster gets every object, each owned by the cluster and labelled.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, Container, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use pretty_assertions::assert_eq;
use zookeeper_operator::build::config_map::LOGBACK_XML;
use zookeeper_operator::build::container::{MYID_CONTAINER, ZOOKEEPER_CONTAINER};
use zookeeper_operator::crd::ZookeeperCluster;

use crate::support::inspect::{
    assert_controlled_by, config_map_hash, expected_server_lines, labels_of, recommended_labels,
    server_lines, template_config_hash, zoo_cfg,
};
use crate::support::{
    ExpectedObjects, Harness, cluster, create, start, stored, two_group_spec, wait_for_objects,
};

/// What one role group's StatefulSet must look like.
struct GroupExpectation<'a> {
    cluster: &'a str,
    group: &'a str,
    replicas: i32,
    myid_offset: u32,
}

impl GroupExpectation<'_> {
    fn name(&self) -> String {
        format!("{}-server-{}", self.cluster, self.group)
    }
}

fn container<'a>(containers: &'a [Container], name: &str) -> &'a Container {
    containers
        .iter()
        .find(|container| container.name == name)
        .unwrap_or_else(|| panic!("container {name} exists in {containers:#?}"))
}

fn assert_least_privilege(container: &Container) {
    let context = container
        .security_context
        .as_ref()
        .unwrap_or_else(|| panic!("container {} has a security context", container.name));
    assert_eq!(
        context.allow_privilege_escalation,
        Some(false),
        "{}",
        container.name
    );
    assert_eq!(
        context
            .capabilities
            .as_ref()
            .and_then(|caps| caps.drop.clone()),
        Some(vec!["ALL".to_owned()]),
        "{}",
        container.name
    );
}

fn assert_stateful_set(harness: &Harness, expected: &GroupExpectation<'_>) {
    let name = expected.name();
    let sts = stored::<StatefulSet>(harness, &name);
    let spec = sts.spec;
    assert_eq!(spec.replicas, Some(expected.replicas), "{name} replicas");
    assert_eq!(spec.pod_management_policy.as_deref(), Some("Parallel"));
    assert_eq!(spec.service_name.as_deref(), Some(name.as_str()));
    assert_eq!(
        spec.selector.match_labels,
        Some(
            recommended_labels(expected.cluster, Some("server"), Some(expected.group))
                .into_iter()
                .filter(|(key, _)| !key.ends_with("managed-by") && !key.ends_with("version"))
                .collect()
        ),
        "{name} selects its own group's Pods only"
    );

    let claims = spec.volume_claim_templates.expect("claim templates");
    assert_eq!(claims.len(), 1, "{name} has one claim template");
    assert_eq!(claims[0].metadata.name.as_deref(), Some("data"));
    let requests = claims[0]
        .spec
        .as_ref()
        .and_then(|claim| claim.resources.as_ref())
        .and_then(|resources| resources.requests.clone())
        .expect("the claim requests storage");
    assert_eq!(requests["storage"].0, "1Gi");

    let template = spec.template;
    let template_meta = template.metadata.expect("template metadata");
    assert_eq!(
        template_meta.labels,
        Some(recommended_labels(
            expected.cluster,
            Some("server"),
            Some(expected.group)
        )),
        "{name} Pods carry the recommended labels"
    );
    assert_eq!(
        template_config_hash(harness, &name),
        config_map_hash(harness, &name),
        "{name}: the Pod template carries the hash of its ConfigMap"
    );

    let pod = template.spec.expect("pod spec");
    assert_eq!(
        pod.termination_grace_period_seconds,
        Some(120),
        "the default gracefulShutdownTimeout of 2m"
    );
    let pod_context = pod.security_context.expect("pod security context");
    assert_eq!(pod_context.run_as_non_root, Some(true));
    assert_eq!(
        pod_context.seccomp_profile.map(|profile| profile.type_),
        Some("RuntimeDefault".to_owned())
    );

    let init_containers = pod.init_containers.expect("init containers");
    let myid = container(&init_containers, MYID_CONTAINER);
    let script = myid.command.as_ref().expect("command").join(" ");
    assert!(
        script.contains(&format!("myid_offset={}", expected.myid_offset)),
        "{name}: the init container writes myid from offset {}: {script}",
        expected.myid_offset
    );
    assert!(script.contains("/myid"), "{script}");
    assert_least_privilege(myid);

    let server = container(&pod.containers, ZOOKEEPER_CONTAINER);
    let readiness = server
        .readiness_probe
        .as_ref()
        .and_then(|probe| probe.exec.as_ref())
        .and_then(|exec| exec.command.as_ref())
        .expect("a readiness probe")
        .join(" ");
    assert!(
        readiness.contains("srvr"),
        "readiness asks ZooKeeper: {readiness}"
    );
    assert_least_privilege(server);
    let mounts: Vec<_> = server
        .volume_mounts
        .iter()
        .flatten()
        .map(|mount| (mount.name.as_str(), mount.mount_path.as_str()))
        .collect();
    assert!(mounts.contains(&("data", "/data")), "{mounts:?}");
    assert!(mounts.contains(&("config", "/conf")), "{mounts:?}");
}

fn assert_group_services(harness: &Harness, cluster: &str, group: &str) {
    let name = format!("{cluster}-server-{group}");
    let headless = stored::<Service>(harness, &name).spec.expect("spec");
    assert_eq!(headless.cluster_ip.as_deref(), Some("None"));
    assert_eq!(headless.publish_not_ready_addresses, Some(true));
    let ports: BTreeMap<_, _> = headless
        .ports
        .iter()
        .flatten()
        .map(|port| (port.name.clone().unwrap_or_default(), port.port))
        .collect();
    assert_eq!(
        ports,
        BTreeMap::from([
            ("client-tls".to_owned(), 2282),
            ("leader-election".to_owned(), 3888),
            ("quorum".to_owned(), 2888),
        ])
    );

    let metrics_name = format!("{name}-metrics");
    let metrics = stored::<Service>(harness, &metrics_name);
    let metrics_spec = metrics.spec.expect("spec");
    assert_eq!(
        metrics_spec
            .ports
            .iter()
            .flatten()
            .map(|port| (port.name.clone().unwrap_or_default(), port.port))
            .collect::<Vec<_>>(),
        vec![("metrics".to_owned(), 7000)]
    );
    assert_eq!(metrics_spec.selector, headless.selector);
    assert_eq!(
        metrics
            .metadata
            .annotations
            .unwrap_or_default()
            .get("prometheus.io/scrape")
            .map(String::as_str),
        Some("true")
    );
}

fn assert_config_map(harness: &Harness, name: &str, servers: &BTreeMap<u32, String>) {
    let config = zoo_cfg(harness, name);
    assert_eq!(
        &server_lines(&config),
        servers,
        "{name}: one server.N line per replica of every role group"
    );
    let logback = stored::<ConfigMap>(harness, name)
        .data
        .and_then(|mut data| data.remove(LOGBACK_XML))
        .expect("logback.xml");
    assert!(logback.contains("<configuration"), "{logback}");
}

fn assert_cluster_objects(harness: &Harness, cluster: &str) {
    let client = stored::<Service>(harness, cluster).spec.expect("spec");
    let ports: Vec<_> = client
        .ports
        .iter()
        .flatten()
        .map(|port| (port.port, port.target_port.clone()))
        .collect();
    assert_eq!(
        ports,
        vec![(2282, Some(IntOrString::String("client-tls".to_owned())))],
        "TLS is on by default"
    );
    let role_selector: BTreeMap<_, _> = recommended_labels(cluster, Some("server"), None)
        .into_iter()
        .filter(|(key, _)| !key.ends_with("managed-by") && !key.ends_with("version"))
        .collect();
    assert_eq!(
        client.selector,
        Some(role_selector.clone()),
        "the client Service spans every role group"
    );

    let discovery = stored::<ConfigMap>(harness, cluster)
        .data
        .expect("discovery data");
    let hosts = format!("{cluster}.default.svc.cluster.local:2282");
    assert_eq!(discovery["ZOOKEEPER"], hosts);
    assert_eq!(discovery["ZOOKEEPER_HOSTS"], hosts);
    assert_eq!(discovery["ZOOKEEPER_CHROOT"], "/");
    assert_eq!(discovery["ZOOKEEPER_CLIENT_PORT"], "2282");
    assert_eq!(discovery["ZOOKEEPER_TLS"], "true");
    assert!(discovery["ca.crt"].contains("BEGIN CERTIFICATE"));

    let pdb = stored::<PodDisruptionBudget>(harness, &format!("{cluster}-server"))
        .spec
        .expect("spec");
    assert_eq!(pdb.max_unavailable, Some(IntOrString::Int(1)));
    assert_eq!(pdb.min_available, None);
    assert_eq!(
        pdb.selector.and_then(|selector| selector.match_labels),
        Some(role_selector),
        "the PDB spans every server Pod"
    );
}

/// Every child is controlled by the cluster and carries the labels of its scope.
fn assert_owned_and_labelled(harness: &Harness, created: &ZookeeperCluster, groups: &[&str]) {
    let cluster = created.metadata.name.as_deref().expect("name");
    for (resource, object) in assert_controlled_by(harness, created) {
        let name = object["metadata"]["name"]
            .as_str()
            .expect("name")
            .to_owned();
        let group = groups.iter().copied().find(|group| {
            let prefix = format!("{cluster}-server-{group}");
            name == prefix || name == format!("{prefix}-metrics")
        });
        let mut expected = match (group, name == format!("{cluster}-server")) {
            (Some(group), _) => recommended_labels(cluster, Some("server"), Some(group)),
            (None, true) => recommended_labels(cluster, Some("server"), None),
            (None, false) => recommended_labels(cluster, None, None),
        };
        if name.ends_with("-metrics") {
            // The mark a ServiceMonitor selects metrics Services by.
            expected.insert(
                strata_model::monitoring::SCRAPE_LABEL.to_owned(),
                "true".to_owned(),
            );
        }
        assert_eq!(labels_of(&object), expected, "labels of {resource} {name}");
    }
}

#[tokio::test]
async fn a_three_server_cluster_gets_every_object() {
    let harness = start();
    let created = create(
        &harness,
        &cluster("simple-zk", crate::support::single_group_spec(3)),
    )
    .await;
    let expected = ExpectedObjects::new("simple-zk", &["default"]);
    wait_for_objects(&harness, &expected).await;
    harness.settle().await;

    assert_stateful_set(
        &harness,
        &GroupExpectation {
            cluster: "simple-zk",
            group: "default",
            replicas: 3,
            myid_offset: 1,
        },
    );
    assert_group_services(&harness, "simple-zk", "default");
    assert_config_map(
        &harness,
        "simple-zk-server-default",
        &expected_server_lines("simple-zk", &[("default", 3, 1)]),
    );
    assert_cluster_objects(&harness, "simple-zk");
    assert_owned_and_labelled(&harness, &created, &["default"]);
    assert_eq!(
        crate::support::stored_objects(&harness),
        expected.all(),
        "nothing else is created"
    );
}

#[tokio::test]
async fn two_role_groups_form_one_ensemble() {
    let harness = start();
    let created = create(&harness, &cluster("zk", two_group_spec())).await;
    let expected = ExpectedObjects::new("zk", &["primary", "secondary"]);
    wait_for_objects(&harness, &expected).await;
    harness.settle().await;

    for (group, replicas, myid_offset) in [("primary", 3, 1), ("secondary", 2, 10)] {
        assert_stateful_set(
            &harness,
            &GroupExpectation {
                cluster: "zk",
                group,
                replicas,
                myid_offset,
            },
        );
        assert_group_services(&harness, "zk", group);
    }
    let servers = expected_server_lines("zk", &[("primary", 3, 1), ("secondary", 2, 10)]);
    assert_eq!(
        servers.keys().copied().collect::<Vec<_>>(),
        vec![1, 2, 3, 10, 11],
        "unique ids from both groups"
    );
    for config_map in ["zk-server-primary", "zk-server-secondary"] {
        assert_config_map(&harness, config_map, &servers);
    }
    assert_cluster_objects(&harness, "zk");
    assert_owned_and_labelled(&harness, &created, &["primary", "secondary"]);
}

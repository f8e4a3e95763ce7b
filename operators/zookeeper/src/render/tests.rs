//! `render` of the shipped examples and of files mixing clusters and ZNodes.

use pretty_assertions::assert_eq;
use rstest::rstest;
use strata_operator::render::parse_documents;

use super::*;

type TestResult = Result<(), Box<dyn std::error::Error>>;

const SIMPLE: &str = include_str!("../../../../examples/zookeeper/simple-cluster.yaml");
const TWO_GROUPS: &str = include_str!("../../../../examples/zookeeper/two-role-groups.yaml");
const ZNODE: &str = include_str!("../../../../examples/zookeeper/znode.yaml");

fn rendered(yaml: &str) -> Result<Vec<Value>, Box<dyn std::error::Error>> {
    Ok(render(&parse_documents(yaml)?)?.objects)
}

fn names(objects: &[Value]) -> Vec<String> {
    strata_testing::manifests::object_names(objects)
        .into_iter()
        .collect()
}

#[rstest]
#[case::simple_cluster(SIMPLE, 10, "Secret/simple-zk-server-default-tls")]
#[case::two_role_groups(TWO_GROUPS, 15, "Secret/split-zk-server-secondary-tls")]
#[case::cluster_and_a_new_znode(ZNODE, 10, "StatefulSet/simple-zk-server-default")]
fn examples_render(#[case] yaml: &str, #[case] count: usize, #[case] expected: &str) -> TestResult {
    let objects = rendered(yaml)?;
    let names = names(&objects);
    assert_eq!(names.len(), count, "{names:?}");
    assert!(names.iter().any(|name| name == expected), "{names:?}");
    for object in &objects {
        assert!(
            object["apiVersion"].is_string() && object["kind"].is_string(),
            "{object}"
        );
        assert_eq!(object["metadata"]["namespace"], "default", "{object}");
    }
    Ok(())
}

#[test]
fn a_new_znode_is_skipped_rather_than_rendered_with_a_path_that_will_never_exist() -> TestResult {
    let output = render(&parse_documents(ZNODE)?)?;
    assert!(
        !names(&output.objects).contains(&"ConfigMap/hdfs-znode".to_owned()),
        "{:?}",
        names(&output.objects)
    );
    let skipped: Vec<String> = output.skipped.iter().map(ToString::to_string).collect();
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert!(
        skipped[0].starts_with("ZookeeperZnode default/hdfs-znode: its path in ZooKeeper")
            && skipped[0].contains("uid the API server assigns"),
        "{skipped:?}"
    );
    Ok(())
}

#[rstest]
#[case::read_back_with_its_uid(
    "  uid: 3f1c\n",
    "",
    "simple-zk.default.svc.cluster.local:2282/znode-3f1c"
)]
#[case::read_back_with_its_recorded_path(
    "  uid: 3f1c\n",
    "status:\n  znodePath: /znode-recorded\n",
    "simple-zk.default.svc.cluster.local:2282/znode-recorded"
)]
fn a_stored_znode_renders_its_config_map_with_the_path_the_controller_uses(
    #[case] metadata: &str,
    #[case] status: &str,
    #[case] expected: &str,
) -> TestResult {
    let yaml = format!(
        "{SIMPLE}---\napiVersion: zookeeper.strata.dev/v1alpha1\nkind: ZookeeperZnode\nmetadata:\n  name: hdfs-znode\n{metadata}spec:\n  clusterRef:\n    name: simple-zk\n{status}"
    );
    let objects = rendered(&yaml)?;
    let config_map = objects
        .iter()
        .find(|object| object["kind"] == "ConfigMap" && object["metadata"]["name"] == "hdfs-znode")
        .ok_or("no znode ConfigMap")?;
    assert_eq!(config_map["data"]["ZOOKEEPER"], expected);
    assert_eq!(config_map["data"]["ZOOKEEPER_CLIENT_PORT"], "2282");
    assert_eq!(config_map["data"]["ZOOKEEPER_TLS"], "true");
    assert_eq!(
        config_map["data"]["ZOOKEEPER_CLIENT_AUTHENTICATION"],
        "None"
    );
    assert!(
        config_map["data"].get("ca.crt").is_none(),
        "the CA exists only in the cluster"
    );
    Ok(())
}

#[rstest]
#[case::cluster_in_another_namespace(
    "spec:\n  clusterRef:\n    name: simple-zk\n    namespace: other\n",
    "ZookeeperZnode default/orphan: its cluster other/simple-zk is not in the file, so the hosts of its discovery ConfigMap are unknown"
)]
#[case::unknown_cluster(
    "spec:\n  clusterRef:\n    name: missing-zk\n",
    "ZookeeperZnode default/orphan: its cluster default/missing-zk is not in the file, so the hosts of its discovery ConfigMap are unknown"
)]
fn znodes_without_their_cluster_in_the_file_are_skipped(
    #[case] znode_spec: &str,
    #[case] expected_skip: &str,
) -> TestResult {
    let yaml = format!(
        "{SIMPLE}---\napiVersion: zookeeper.strata.dev/v1alpha1\nkind: ZookeeperZnode\nmetadata:\n  name: orphan\n{znode_spec}"
    );
    let output = render(&parse_documents(&yaml)?)?;
    let names = names(&output.objects);
    assert_eq!(names.len(), 10, "{names:?}");
    assert!(
        !names.iter().any(|name| name.ends_with("/orphan")),
        "{names:?}"
    );
    assert_eq!(
        output
            .skipped
            .iter()
            .map(|skipped| skipped.to_string())
            .collect::<Vec<_>>(),
        [expected_skip]
    );
    Ok(())
}

#[test]
fn rendering_is_deterministic() -> TestResult {
    assert_eq!(rendered(TWO_GROUPS)?, rendered(TWO_GROUPS)?);
    Ok(())
}

#[test]
fn stop_annotation_renders_zero_replicas() -> TestResult {
    let yaml = SIMPLE.replace(
        "  namespace: default\n",
        "  namespace: default\n  annotations:\n    operator-command: Stopped\n",
    );
    let objects = rendered(&yaml)?;
    let stateful_set = objects
        .iter()
        .find(|object| object["kind"] == "StatefulSet")
        .ok_or("no StatefulSet")?;
    assert_eq!(stateful_set["spec"]["replicas"], 0);
    Ok(())
}

#[test]
fn invalid_cluster_names_the_cluster_and_the_reason() -> TestResult {
    let yaml = SIMPLE.replace(
        "replicas: 3",
        "replicas: 3\n        config:\n          myidOffset: 0",
    );
    let error = render(&parse_documents(&yaml)?)
        .err()
        .map(|error| error.to_string());
    assert_eq!(
        error.as_deref(),
        Some(
            "ZookeeperCluster simple-zk: InvalidMyidOffset: spec.servers: role group \"default\" has myidOffset 0, but ZooKeeper server ids start at 1"
        )
    );
    Ok(())
}

#[test]
fn missing_namespace_defaults_to_default() -> TestResult {
    let objects = rendered(&SIMPLE.replace("  namespace: default\n", ""))?;
    assert!(
        objects
            .iter()
            .all(|object| object["metadata"]["namespace"] == "default")
    );
    Ok(())
}

#[rstest]
#[case::not_allowed("", Some("does not allow ZNodes from namespace tenant"))]
#[case::allowed("    znodeNamespaces: [tenant]\n", None)]
fn a_znode_from_another_namespace_renders_only_with_the_clusters_consent(
    #[case] allowance: &str,
    #[case] skipped: Option<&str>,
) -> TestResult {
    let yaml = format!(
        "apiVersion: zookeeper.strata.dev/v1alpha1\nkind: ZookeeperCluster\nmetadata:\n  name: zk\n  namespace: data\nspec:\n  clusterConfig:\n{allowance}    tls:\n      enabled: false\n  servers:\n    roleGroups:\n      default: {{}}\n---\napiVersion: zookeeper.strata.dev/v1alpha1\nkind: ZookeeperZnode\nmetadata:\n  name: app\n  namespace: tenant\n  uid: 3f1c\nspec:\n  clusterRef:\n    name: zk\n    namespace: data\n"
    );
    let output = render(&parse_documents(&yaml)?)?;
    let rendered = names(&output.objects).contains(&"ConfigMap/app".to_owned());
    let reasons: Vec<String> = output.skipped.iter().map(ToString::to_string).collect();
    match skipped {
        Some(reason) => {
            assert!(!rendered, "{reasons:?}");
            assert!(
                reasons.iter().any(|skip| skip.contains(reason)),
                "{reasons:?}"
            );
        }
        None => assert!(rendered && reasons.is_empty(), "{reasons:?}"),
    }
    Ok(())
}

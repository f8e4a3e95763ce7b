//! What `zookeeper-operator render -f` refuses, skips and renders, through the public
//! render function (`strata_operator::render::render_manifest`) and the real binary.
//!
//! Each rule of `strata_operator::render` has a table here with the ZooKeeper kinds:
//! unknown fields, type errors in manifest terms, documents that are not the operator's
//! kinds, `kind: List`, and files that render nothing.

use std::io::Write;
use std::process::{Command, Stdio};

use pretty_assertions::assert_eq;
use rstest::rstest;
use strata_operator::render::{RenderError, render_manifest};
use zookeeper_operator::ZookeeperOperator;

/// The binary under test, built by cargo for this integration test.
const OPERATOR: &str = env!("CARGO_BIN_EXE_zookeeper-operator");

const HEADER: &str = "apiVersion: zookeeper.strata.dev/v1alpha1\nkind: ZookeeperCluster\n";

/// A cluster called `zk` with the given `spec` body (indented by two spaces).
fn cluster(spec: &str) -> String {
    format!("{HEADER}metadata:\n  name: zk\nspec:\n{spec}")
}

const ONE_SERVER: &str = "  servers:\n    roleGroups:\n      default:\n        replicas: 1\n";

/// The problems of a rejected file, one line each.
fn rejection(yaml: &str) -> Vec<String> {
    match render_manifest::<ZookeeperOperator>(yaml) {
        Err(RenderError::Rejected { problems }) => {
            problems.iter().map(ToString::to_string).collect()
        }
        Err(other) => vec![format!("another error: {other}")],
        Ok(manifest) => vec![format!("rendered:\n{}", manifest.yaml)],
    }
}

/// The error message of a file that does not render.
fn error(yaml: &str) -> String {
    match render_manifest::<ZookeeperOperator>(yaml) {
        Err(error) => error.to_string(),
        Ok(manifest) => format!("rendered:\n{}", manifest.yaml),
    }
}

#[rstest]
#[case::misspelt_replicas(
    "  servers:\n    roleGroups:\n      default:\n        replica: 5\n",
    "spec.servers.roleGroups.default.replica: unknown field (did you mean replicas?)"
)]
#[case::misspelt_cluster_operation(
    "  clusterOperations:\n    stopped: true\n".to_owned() + ONE_SERVER,
    "spec.clusterOperations: unknown field (did you mean clusterOperation?)"
)]
#[case::unknown_field_in_a_known_object(
    "  clusterOperation:\n    stop: true\n".to_owned() + ONE_SERVER,
    "spec.clusterOperation.stop: unknown field"
)]
#[case::unknown_field_in_role_config(
    ONE_SERVER.to_owned() + "    roleConfig:\n      podDisruptionBudget:\n        maxUnavailable: 1\n        minAvailable: 1\n",
    "spec.servers.roleConfig.podDisruptionBudget.minAvailable: unknown field"
)]
#[case::unknown_field_in_an_image_pull_secret(
    "  image:\n    pullSecrets:\n    - name: a\n    - nmae: b\n".to_owned() + ONE_SERVER,
    "spec.image.pullSecrets[1].nmae: unknown field (did you mean name?)"
)]
#[case::unknown_top_level_field(
    ONE_SERVER.to_owned() + "sepc: {}\n",
    "sepc: unknown field (did you mean spec?)"
)]
fn unknown_fields_are_refused(#[case] spec: String, #[case] expected: &str) {
    let problems = rejection(&cluster(&spec));
    let expected = format!("document 1 (ZookeeperCluster zk): {expected}");
    assert_eq!(problems, [expected]);
}

#[rstest]
#[case::pod_overrides_preserve_unknown_fields(
    "    podOverrides:\n      spec:\n        anything:\n          goes: 1\n"
)]
#[case::config_overrides_take_any_key(
    "    configOverrides:\n      zoo.cfg:\n        anyKey: \"1\"\n        other.key: y\n"
)]
#[case::env_overrides_take_any_name("    envOverrides:\n      ANY_NAME: value\n")]
#[case::metadata_labels_and_annotations("")]
fn open_fields_are_accepted(#[case] extra: &str) {
    let yaml = format!(
        "{HEADER}metadata:\n  name: zk\n  labels:\n    a: b\n  annotations:\n    c: d\nspec:\n{ONE_SERVER}{extra}"
    );
    let result = render_manifest::<ZookeeperOperator>(&yaml);
    assert!(
        result.is_ok(),
        "{:?}",
        result.err().map(|error| error.to_string())
    );
}

#[rstest]
#[case::negative_replicas(
    "replicas: -1",
    "spec.servers.roleGroups.default.replicas: expected an integer between 0 and 65535, got -1"
)]
#[case::too_many_replicas(
    "replicas: 65536",
    "spec.servers.roleGroups.default.replicas: expected an integer between 0 and 65535, got 65536"
)]
#[case::replicas_as_words(
    "replicas: three",
    "spec.servers.roleGroups.default.replicas: expected an integer between 0 and 65535, got \"three\""
)]
#[case::myid_offset_as_a_list(
    "replicas: 1\n        config:\n          myidOffset: [1]",
    "spec.servers.roleGroups.default.config.myidOffset: expected an integer between 0 and 4294967295, got a list of 1"
)]
#[case::env_override_as_a_number(
    "replicas: 1\n        envOverrides:\n          HEAP: 512",
    "spec.servers.roleGroups.default.envOverrides.HEAP: expected a string, got 512"
)]
#[case::stopped_as_a_string(
    "replicas: 1\n  clusterOperation:\n    stopped: \"yes\"",
    "spec.clusterOperation.stopped: expected true or false, got \"yes\""
)]
#[case::unknown_pull_policy(
    "replicas: 1\n  image:\n    pullPolicy: Sometimes",
    "spec.image.pullPolicy: expected one of \"IfNotPresent\", \"Always\", \"Never\", got \"Sometimes\""
)]
#[case::role_group_as_a_string(
    "replicas: 1\n      other: small",
    "spec.servers.roleGroups.other: expected an object, got \"small\""
)]
fn type_errors_name_the_field_in_manifest_terms(#[case] role_group: &str, #[case] expected: &str) {
    let yaml = cluster(&format!(
        "  servers:\n    roleGroups:\n      default:\n        {role_group}\n"
    ));
    assert_eq!(error(&yaml), format!("ZookeeperCluster zk: {expected}"));
}

#[test]
fn a_missing_required_field_is_named() {
    assert_eq!(
        error(&cluster("  image: {}\n")),
        "ZookeeperCluster zk: spec.servers: required field is missing"
    );
}

#[rstest]
#[case::wrong_api_version(
    "apiVersion: zookeeper.strata.dev/v1\nkind: ZookeeperCluster\nmetadata:\n  name: zk\n",
    "document 1 (ZookeeperCluster zk): apiVersion zookeeper.strata.dev/v1 is not served for ZookeeperCluster; use zookeeper.strata.dev/v1alpha1"
)]
#[case::misspelt_kind(
    "apiVersion: zookeeper.strata.dev/v1alpha1\nkind: ZookeeperClustr\nmetadata:\n  name: zk\n",
    "document 1 (ZookeeperClustr zk): zookeeper.strata.dev/v1alpha1 ZookeeperClustr is not one of zookeeper-operator's kinds (ZookeeperCluster, ZookeeperZnode); did you mean ZookeeperCluster?"
)]
#[case::kind_in_lower_case(
    "apiVersion: zookeeper.strata.dev/v1alpha1\nkind: zookeeperznode\nmetadata:\n  name: z\n",
    "document 1 (zookeeperznode z): zookeeper.strata.dev/v1alpha1 zookeeperznode is not one of zookeeper-operator's kinds (ZookeeperCluster, ZookeeperZnode); did you mean ZookeeperZnode?"
)]
#[case::another_operators_kind(
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: apps\n",
    "document 1 (ConfigMap apps/settings): v1 ConfigMap is not one of zookeeper-operator's kinds (ZookeeperCluster, ZookeeperZnode)"
)]
#[case::no_kind(
    "apiVersion: zookeeper.strata.dev/v1alpha1\nmetadata:\n  name: zk\n",
    "document 1: kind: required field is missing"
)]
#[case::no_api_version_or_kind(
    "metadata:\n  name: zk\n",
    "document 1: apiVersion: required field is missing"
)]
#[case::kind_as_a_number(
    "apiVersion: v1\nkind: 1\n",
    "document 1: kind: expected a string, got a number"
)]
#[case::no_name(
    "apiVersion: zookeeper.strata.dev/v1alpha1\nkind: ZookeeperZnode\nmetadata: {}\nspec:\n  clusterRef:\n    name: zk\n",
    "document 1 (ZookeeperZnode <unnamed>): metadata.name: required field is missing"
)]
#[case::misspelt_metadata_field(
    "apiVersion: zookeeper.strata.dev/v1alpha1\nkind: ZookeeperZnode\nmetadata:\n  name: z\n  namepsace: apps\nspec:\n  clusterRef:\n    name: zk\n",
    "document 1 (ZookeeperZnode z): metadata.namepsace: unknown field (did you mean namespace?)"
)]
#[case::not_a_mapping(
    "- a\n- b\n",
    "document 1: not a Kubernetes object: expected a mapping with apiVersion and kind, got a list"
)]
#[case::list_with_a_foreign_item(
    "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Secret\n  metadata:\n    name: s\n",
    "document 1, item 1 (Secret s): v1 Secret is not one of zookeeper-operator's kinds (ZookeeperCluster, ZookeeperZnode)"
)]
fn documents_that_are_not_the_operators_kinds_are_refused(
    #[case] yaml: &str,
    #[case] expected: &str,
) {
    let problems = rejection(yaml);
    assert_eq!(
        problems.first().map(String::as_str),
        Some(expected),
        "{problems:?}"
    );
}

#[test]
fn problems_of_every_document_are_reported_together() {
    let yaml = format!(
        "{}---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n---\n{}",
        cluster(ONE_SERVER),
        cluster("  servers:\n    roleGroups:\n      default:\n        replica: 1\n")
    );
    assert_eq!(
        rejection(&yaml),
        [
            "document 2 (ConfigMap c): v1 ConfigMap is not one of zookeeper-operator's kinds (ZookeeperCluster, ZookeeperZnode)",
            "document 3 (ZookeeperCluster zk): spec.servers.roleGroups.default.replica: unknown field (did you mean replicas?)",
        ]
    );
}

#[rstest]
#[case::empty_file("")]
#[case::only_comments("# nothing here\n")]
#[case::only_separators("---\n---\n")]
#[case::empty_list("apiVersion: v1\nkind: List\nitems: []\n")]
fn files_without_objects_render_nothing(#[case] yaml: &str) {
    assert_eq!(error(yaml), "nothing to render: the file holds no objects");
}

const ORPHAN: &str = "apiVersion: zookeeper.strata.dev/v1alpha1\nkind: ZookeeperZnode\nmetadata:\n  name: orphan\n  namespace: apps\nspec:\n  clusterRef:\n    name: elsewhere\n";
const ORPHAN_SKIP: &str = "ZookeeperZnode apps/orphan: its cluster apps/elsewhere is not in the file, so the hosts of its discovery ConfigMap are unknown";

#[test]
fn a_znode_alone_renders_nothing_and_says_why() {
    assert_eq!(
        error(ORPHAN),
        format!("nothing to render: every resource was skipped:\n  {ORPHAN_SKIP}")
    );
}

#[test]
fn a_znode_without_its_cluster_is_skipped_beside_a_cluster() {
    let yaml = format!("{}---\n{ORPHAN}", cluster(ONE_SERVER));
    let manifest =
        render_manifest::<ZookeeperOperator>(&yaml).unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(
        manifest
            .skipped
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        [ORPHAN_SKIP]
    );
    assert!(
        manifest
            .objects
            .iter()
            .any(|object| object["kind"] == "StatefulSet")
    );
}

#[test]
fn the_items_of_a_list_render_like_documents() {
    let items = format!(
        "apiVersion: v1\nkind: List\nitems:\n- {}",
        cluster(ONE_SERVER).replace('\n', "\n  ").trim_end()
    );
    let listed = render_manifest::<ZookeeperOperator>(&format!("{items}\n"))
        .unwrap_or_else(|error| panic!("{error}:\n{items}"));
    let plain = render_manifest::<ZookeeperOperator>(&cluster(ONE_SERVER))
        .unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(listed.yaml, plain.yaml);
}

/// What a run of the binary printed.
#[derive(Debug)]
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

type RunResult = Result<Run, Box<dyn std::error::Error>>;

/// Runs `zookeeper-operator render -f FILE` on a file `manifest.yaml` holding `yaml`;
/// `{file}` in the returned stderr stands for the file's path.
fn render_file(yaml: &str) -> RunResult {
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("manifest.yaml");
    std::fs::write(&file, yaml)?;
    let output = Command::new(OPERATOR)
        .args(["render".as_ref(), "-f".as_ref(), file.as_os_str()])
        .output()?;
    Ok(Run {
        code: output.status.code(),
        stdout: String::from_utf8(output.stdout)?,
        stderr: String::from_utf8(output.stderr)?.replace(&file.display().to_string(), "{file}"),
    })
}

/// Runs `zookeeper-operator render -f -` with `yaml` on stdin.
fn render_stdin(yaml: &str) -> RunResult {
    let mut child = Command::new(OPERATOR)
        .args(["render", "-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(yaml.as_bytes())?;
    }
    let output = child.wait_with_output()?;
    Ok(Run {
        code: output.status.code(),
        stdout: String::from_utf8(output.stdout)?,
        stderr: String::from_utf8(output.stderr)?,
    })
}

#[rstest]
#[case::unknown_field(
    &cluster("  servers:\n    roleGroups:\n      default:\n        replica: 5\n"),
    "zookeeper-operator: {file}: 1 problem, nothing rendered:\n  document 1 (ZookeeperCluster zk): spec.servers.roleGroups.default.replica: unknown field (did you mean replicas?)\n"
)]
#[case::type_error(
    &cluster("  servers:\n    roleGroups:\n      default:\n        replicas: -1\n"),
    "zookeeper-operator: {file}: ZookeeperCluster zk: spec.servers.roleGroups.default.replicas: expected an integer between 0 and 65535, got -1\n"
)]
#[case::wrong_api_version(
    "apiVersion: zookeeper.strata.dev/v1\nkind: ZookeeperCluster\nmetadata:\n  name: zk\n",
    "zookeeper-operator: {file}: 1 problem, nothing rendered:\n  document 1 (ZookeeperCluster zk): apiVersion zookeeper.strata.dev/v1 is not served for ZookeeperCluster; use zookeeper.strata.dev/v1alpha1\n"
)]
#[case::empty_file(
    "",
    "zookeeper-operator: {file}: nothing to render: the file holds no objects\n"
)]
#[case::znode_alone(ORPHAN, &format!("zookeeper-operator: {{file}}: nothing to render: every resource was skipped:\n  {ORPHAN_SKIP}\n"))]
fn the_binary_exits_non_zero_with_the_reason_on_stderr(
    #[case] yaml: &str,
    #[case] expected: &str,
) -> Result<(), Box<dyn std::error::Error>> {
    let run = render_file(yaml)?;
    assert_eq!(run.code, Some(1), "{run:?}");
    assert_eq!(run.stdout, "");
    assert_eq!(run.stderr, expected);
    Ok(())
}

#[test]
fn the_binary_renders_and_notes_skipped_resources_on_stderr()
-> Result<(), Box<dyn std::error::Error>> {
    let run = render_stdin(&format!("{}---\n{ORPHAN}", cluster(ONE_SERVER)))?;
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(run.stdout.contains("\nkind: StatefulSet\n"), "{run:?}");
    assert_eq!(
        run.stderr,
        format!("zookeeper-operator: -: skipped {ORPHAN_SKIP}\n")
    );
    Ok(())
}

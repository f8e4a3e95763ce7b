#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pretty_assertions::assert_eq;
use rstest::rstest;

use super::*;

fn parse(text: &str) -> Result<Example, ExampleError> {
    Example::parse(
        Path::new("example.yaml"),
        text,
        &<zookeeper_operator::ZookeeperOperator as strata_operator::cli::Operator>::crds(),
    )
}

#[test]
fn first_document_without_namespace_and_comments() {
    let example = parse(
        "# a comment\n\
         apiVersion: zookeeper.strata.dev/v1alpha1\n\
         kind: ZookeeperCluster\n\
         metadata:\n  name: simple-zk\n  namespace: default\n\
         spec:\n  servers:\n    roleGroups:\n      default:\n        replicas: 3\n\
         ---\n\
         apiVersion: zookeeper.strata.dev/v1alpha1\n\
         kind: ZookeeperZnode\n\
         metadata:\n  name: second\n",
    )
    .expect("valid");
    assert_eq!(
        example,
        Example {
            kind: "ZookeeperCluster".to_owned(),
            name: "simple-zk".to_owned(),
            manifest: "apiVersion: zookeeper.strata.dev/v1alpha1\n\
                       kind: ZookeeperCluster\n\
                       metadata:\n  name: simple-zk\n\
                       spec:\n  servers:\n    roleGroups:\n      default:\n        replicas: 3"
                .to_owned(),
        }
    );
    assert_eq!(example.object(), "zookeepercluster/simple-zk");
}

#[rstest]
#[case::other_kind(
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
    "must be one of the operator's kinds (ZookeeperCluster, ZookeeperZnode), found v1/ConfigMap"
)]
#[case::unknown_version(
    "apiVersion: zookeeper.strata.dev/v9\nkind: ZookeeperCluster\nmetadata:\n  name: x\n",
    "found zookeeper.strata.dev/v9/ZookeeperCluster"
)]
#[case::empty_file("", "found /")]
#[case::no_name(
    "apiVersion: zookeeper.strata.dev/v1alpha1\nkind: ZookeeperCluster\nmetadata: {}\n",
    "has no metadata.name"
)]
#[case::template_syntax(
    "apiVersion: zookeeper.strata.dev/v1alpha1\nkind: ZookeeperCluster\n\
     metadata:\n  name: x\n  annotations:\n    a: '{{ .Values.x }}'\n",
    "which NOTES.txt cannot show verbatim"
)]
#[case::not_yaml("a: [", "is not valid YAML")]
fn unusable_examples_are_refused(#[case] text: &str, #[case] message: &str) {
    let error = parse(text).expect_err("refused");
    assert!(error.to_string().contains(message), "{error}");
}

#[test]
fn the_registered_example_files_are_usable() {
    let workspace = crate::commands::workspace_root();
    for operator in crate::operators::registered() {
        let example = Example::read(&workspace.join(operator.example), &(operator.crds)())
            .unwrap_or_else(|error| panic!("{}: {error}", operator.name));
        assert!(!example.manifest.is_empty(), "{}", operator.name);
    }
}

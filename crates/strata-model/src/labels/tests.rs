#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rstest::rstest;

use super::*;

fn cluster_labels() -> RecommendedLabels {
    RecommendedLabels::new("zookeeper", "simple-zk", "zookeeper-operator", "3.9.4").unwrap()
}

fn map(entries: &[(&str, &str)]) -> BTreeMap<String, String> {
    entries
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[rstest]
#[case::empty("")]
#[case::single_char("a")]
#[case::version("3.9.4")]
#[case::mixed_case_and_symbols("Ab-c_d.e9")]
#[case::max_length(&"x".repeat(63))]
fn valid_label_values(#[case] value: &str) {
    assert_eq!(validate_label_value("example.com/key", value), Ok(()));
}

#[rstest]
#[case::too_long(&"x".repeat(64), "it is longer than 63 characters")]
#[case::space("a b", "only letters, digits, '-', '_' and '.' are allowed")]
#[case::slash("a/b", "only letters, digits, '-', '_' and '.' are allowed")]
#[case::plus("3.9.4+1", "only letters, digits, '-', '_' and '.' are allowed")]
#[case::non_ascii("zöö", "only letters, digits, '-', '_' and '.' are allowed")]
#[case::leading_dash("-a", "it must start and end with a letter or digit")]
#[case::trailing_dot("a.", "it must start and end with a letter or digit")]
#[case::leading_underscore("_a", "it must start and end with a letter or digit")]
fn invalid_label_values(#[case] value: &str, #[case] reason: &'static str) {
    assert_eq!(
        validate_label_value("app.kubernetes.io/instance", value),
        Err(LabelError::InvalidValue {
            key: "app.kubernetes.io/instance".to_owned(),
            value: value.to_owned(),
            reason,
        })
    );
}

#[test]
fn error_message_names_key_and_value() {
    let error = validate_label_value("app.kubernetes.io/component", "a b").unwrap_err();
    assert_eq!(
        error.to_string(),
        "value \"a b\" of label app.kubernetes.io/component is invalid: only letters, digits, '-', '_' and '.' are allowed"
    );
}

#[rstest]
#[case::plain("3.9.4", "3.9.4")]
#[case::plus_build("3.9.4+build.7", "3.9.4-build.7")]
#[case::leading_underscore("_476", "476")]
#[case::trailing_symbols("1.0-", "1.0")]
#[case::truncated(&format!("1.{}", "2".repeat(100)), &format!("1.{}", "2".repeat(61)))]
#[case::nothing_usable("+++", "")]
fn sanitized_versions(#[case] version: &str, #[case] expected: &str) {
    let sanitized = sanitize_version(version);
    assert_eq!(sanitized, expected);
    assert_eq!(validate_label_value(VERSION_LABEL, &sanitized), Ok(()));
}

#[test]
fn cluster_scope() {
    let labels = cluster_labels();
    assert_eq!(
        labels.selector(),
        map(&[(NAME_LABEL, "zookeeper"), (INSTANCE_LABEL, "simple-zk")])
    );
    assert_eq!(
        labels.labels(),
        map(&[
            (NAME_LABEL, "zookeeper"),
            (INSTANCE_LABEL, "simple-zk"),
            (MANAGED_BY_LABEL, "zookeeper-operator"),
            (VERSION_LABEL, "3.9.4"),
        ])
    );
}

#[test]
fn role_scope() {
    let labels = cluster_labels().for_role("server").unwrap();
    assert_eq!(
        labels.selector(),
        map(&[
            (NAME_LABEL, "zookeeper"),
            (INSTANCE_LABEL, "simple-zk"),
            (COMPONENT_LABEL, "server")
        ])
    );
    assert_eq!(labels.labels().len(), 5);
}

#[test]
fn role_group_scope() {
    let labels = cluster_labels()
        .for_role_group("server", "default")
        .unwrap();
    assert_eq!(
        labels.labels(),
        map(&[
            (NAME_LABEL, "zookeeper"),
            (INSTANCE_LABEL, "simple-zk"),
            (COMPONENT_LABEL, "server"),
            (ROLE_GROUP_LABEL, "default"),
            (MANAGED_BY_LABEL, "zookeeper-operator"),
            (VERSION_LABEL, "3.9.4"),
        ])
    );
    assert!(!labels.selector().contains_key(VERSION_LABEL));
    assert!(!labels.selector().contains_key(MANAGED_BY_LABEL));
}

#[test]
fn role_scope_from_role_group_scope_drops_role_group() {
    let labels = cluster_labels()
        .for_role_group("server", "default")
        .unwrap()
        .for_role("server")
        .unwrap();
    assert!(!labels.selector().contains_key(ROLE_GROUP_LABEL));
}

#[rstest]
#[case::empty_app_name(RecommendedLabels::new("", "c", "op", "1").unwrap_err(), NAME_LABEL, "")]
#[case::bad_instance(RecommendedLabels::new("zk", "a b", "op", "1").unwrap_err(), INSTANCE_LABEL, "a b")]
#[case::bad_operator(RecommendedLabels::new("zk", "c", "op/x", "1").unwrap_err(), MANAGED_BY_LABEL, "op/x")]
#[case::unusable_version(RecommendedLabels::new("zk", "c", "op", "+").unwrap_err(), VERSION_LABEL, "")]
#[case::bad_component(cluster_labels().for_role("Server!").unwrap_err(), COMPONENT_LABEL, "Server!")]
#[case::long_role_group(cluster_labels().for_role_group("server", &"g".repeat(64)).unwrap_err(), ROLE_GROUP_LABEL, &"g".repeat(64))]
#[case::bad_component_with_role_group(cluster_labels().for_role_group("", "default").unwrap_err(), COMPONENT_LABEL, "")]
fn invalid_scopes_name_the_key(#[case] error: LabelError, #[case] key: &str, #[case] value: &str) {
    let LabelError::InvalidValue {
        key: actual_key,
        value: actual_value,
        ..
    } = error;
    assert_eq!((actual_key.as_str(), actual_value.as_str()), (key, value));
}

#[test]
fn role_selector_equals_pdb_selector() {
    let role = cluster_labels().for_role("server").unwrap();
    assert_eq!(
        role.selector(),
        crate::pdb::selector_labels("zookeeper", "simple-zk", "server")
    );
}

#[test]
fn role_group_selector_is_covered_by_role_selector() {
    let role = cluster_labels().for_role("server").unwrap().selector();
    let group = cluster_labels()
        .for_role_group("server", "default")
        .unwrap()
        .labels();
    assert!(
        role.iter()
            .all(|(key, value)| group.get(key) == Some(value))
    );
}

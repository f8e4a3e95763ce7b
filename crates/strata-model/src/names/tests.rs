#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rstest::rstest;

use super::*;

fn cluster(name: &str) -> ClusterName {
    ClusterName::new(name).unwrap()
}

fn role(name: &str) -> RoleName {
    RoleName::new(name).unwrap()
}

fn role_group(name: &str) -> RoleGroupName {
    RoleGroupName::new(name).unwrap()
}

#[rstest]
#[case::simple("simple-zk")]
#[case::single_letter("a")]
#[case::digits_inside("zk3")]
#[case::max_length(&"a".repeat(63))]
fn valid_cluster_names(#[case] name: &str) {
    assert_eq!(cluster(name).as_str(), name);
    assert_eq!(cluster(name).client_service_name(), name);
}

#[rstest]
#[case::empty("", "cluster name \"\" is invalid: it is empty")]
#[case::uppercase(
    "Simple",
    "cluster name \"Simple\" is invalid: only lowercase letters, digits and '-' are allowed"
)]
#[case::dot(
    "a.b",
    "cluster name \"a.b\" is invalid: only lowercase letters, digits and '-' are allowed"
)]
#[case::underscore(
    "a_b",
    "cluster name \"a_b\" is invalid: only lowercase letters, digits and '-' are allowed"
)]
#[case::digit_first(
    "1zk",
    "cluster name \"1zk\" is invalid: it must start with a lowercase letter"
)]
#[case::dash_first(
    "-zk",
    "cluster name \"-zk\" is invalid: it must start with a lowercase letter"
)]
#[case::dash_last(
    "zk-",
    "cluster name \"zk-\" is invalid: it must start and end with a letter or digit"
)]
#[case::too_long(&"a".repeat(64), &format!("cluster name {:?} is invalid: it is longer than 63 characters", "a".repeat(64)))]
fn invalid_cluster_names(#[case] name: &str, #[case] message: &str) {
    assert_eq!(ClusterName::new(name).unwrap_err().to_string(), message);
}

#[rstest]
#[case::digit_first_allowed("1ssd", true)]
#[case::dash_inside("in-memory", true)]
#[case::dash_first("-ssd", false)]
#[case::uppercase("SSD", false)]
#[case::empty("", false)]
#[case::max_length(&"9".repeat(63), true)]
#[case::too_long(&"9".repeat(64), false)]
fn role_group_names(#[case] name: &str, #[case] valid: bool) {
    assert_eq!(RoleGroupName::new(name).is_ok(), valid);
    assert_eq!(name.parse::<RoleName>().is_ok(), valid);
}

#[test]
fn role_group_error_names_what_was_invalid() {
    let message = RoleGroupName::new("Fast").unwrap_err().to_string();
    assert_eq!(
        message,
        "role group name \"Fast\" is invalid: only lowercase letters, digits and '-' are allowed"
    );
}

/// A role group name that makes `<cluster>-server-<rg>` exactly `length` characters
/// for the cluster `c`.
fn role_group_for_length(length: usize) -> RoleGroupName {
    role_group(&"g".repeat(length - "c-server-".len()))
}

#[rstest]
#[case::fifty_one(51, true)]
#[case::fifty_two_at_limit(52, true)]
#[case::fifty_three_over_limit(53, false)]
#[case::sixty(60, false)]
fn role_group_object_name_limit(#[case] length: usize, #[case] fits: bool) {
    let result = RoleGroupRef::new(
        &cluster("c"),
        &role("server"),
        &role_group_for_length(length),
    );
    match result {
        Ok(reference) => {
            assert!(fits, "{length} characters were accepted");
            assert_eq!(reference.object_name().len(), length);
        }
        Err(error) => {
            assert!(!fits, "{length} characters were rejected: {error}");
            assert_eq!(
                error,
                NameError::TooLong {
                    name: format!("c-server-{}", "g".repeat(length - 9)),
                    length,
                    kind: NameKind::StatefulSet,
                    max: 52,
                }
            );
        }
    }
}

#[test]
fn too_long_message_is_actionable() {
    let error =
        RoleGroupRef::new(&cluster("c"), &role("server"), &role_group_for_length(60)).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "name \"c-server-{}\" is 60 characters; StatefulSet names may have at most 52 \
             (shorten the cluster, role or role group name)",
            "g".repeat(51)
        )
    );
}

#[rstest]
#[case::sixty_three_at_limit(63, true)]
#[case::sixty_four_over_limit(64, false)]
fn role_object_name_limit(#[case] length: usize, #[case] fits: bool) {
    let cluster_name = cluster(&"c".repeat(length - "-server".len()));
    let result = RoleRef::new(&cluster_name, &role("server"));
    assert_eq!(result.is_ok(), fits, "{result:?}");
    if let Err(error) = result {
        assert!(
            error
                .to_string()
                .contains("Service names may have at most 63"),
            "{error}"
        );
    }
}

#[test]
fn derived_names() {
    let role_ref = RoleRef::new(&cluster("simple-hdfs"), &role("datanode")).unwrap();
    assert_eq!(role_ref.object_name(), "simple-hdfs-datanode");
    assert_eq!(role_ref.cluster().as_str(), "simple-hdfs");
    assert_eq!(role_ref.role().as_str(), "datanode");
    let rg = role_ref.role_group(&role_group("hdd")).unwrap();
    assert_eq!(rg.object_name(), "simple-hdfs-datanode-hdd");
    assert_eq!(rg.role_group().as_str(), "hdd");
    assert_eq!(rg.role().as_str(), "datanode");
    assert_eq!(rg.cluster().as_str(), "simple-hdfs");
    assert_eq!(rg.pod_name(12), "simple-hdfs-datanode-hdd-12");
    assert_eq!(
        rg.pod_fqdn(2, "prod", "simple-hdfs-datanode-hdd", "example.internal"),
        "simple-hdfs-datanode-hdd-2.simple-hdfs-datanode-hdd.prod.svc.example.internal"
    );
}

#[test]
fn role_name_matches_pdb_name() {
    let role_ref = RoleRef::new(&cluster("simple-zk"), &role("server")).unwrap();
    assert_eq!(
        role_ref.object_name(),
        crate::pdb::pdb_name("simple-zk", "server")
    );
}

#[test]
fn longest_pod_name_fits_a_dns_label() {
    let rg = RoleGroupRef::new(&cluster("c"), &role("server"), &role_group_for_length(52)).unwrap();
    assert!(rg.pod_name(u16::MAX).len() <= DNS_LABEL_MAX_LENGTH);
    assert!(format!("{}-{}", rg.object_name(), "abcdefghij").len() <= DNS_LABEL_MAX_LENGTH);
}

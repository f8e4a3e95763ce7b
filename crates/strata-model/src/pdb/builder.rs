//! Builds the one PodDisruptionBudget of a role.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec},
    apimachinery::pkg::{
        apis::meta::v1::{LabelSelector, ObjectMeta},
        util::intstr::IntOrString,
    },
};

use crate::pdb::PdbConfig;

/// Label naming the product (`zookeeper`, `hdfs`, ...).
const NAME_LABEL: &str = "app.kubernetes.io/name";
/// Label naming the cluster object the Pod belongs to.
const INSTANCE_LABEL: &str = "app.kubernetes.io/instance";
/// Label naming the role (`server`, `datanode`, ...).
const COMPONENT_LABEL: &str = "app.kubernetes.io/component";

/// Name of the budget of `role` in `cluster`: `<cluster>-<role>`.
///
/// Exposed so the apply step can recognise (and prune) the budget of a role whose
/// budget was disabled.
pub fn pdb_name(cluster: &str, role: &str) -> String {
    format!("{cluster}-{role}")
}

/// The selector of a role's budget: exactly product name, cluster instance and role.
///
/// The role group label is deliberately absent so one budget spans every role group of
/// the role (ADR030 use case 2); the instance and component labels make budgets of
/// different clusters and different roles disjoint.
pub fn selector_labels(app_name: &str, cluster: &str, role: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (NAME_LABEL.to_owned(), app_name.to_owned()),
        (INSTANCE_LABEL.to_owned(), cluster.to_owned()),
        (COMPONENT_LABEL.to_owned(), role.to_owned()),
    ])
}

/// Everything needed to build the budget of one role, apart from the user's
/// [`PdbConfig`].
///
/// The fields are plain values so building stays a pure function: the operator fills
/// them from the validated cluster, tests and `render` fill them from fixtures.
#[derive(Clone, Debug, PartialEq)]
pub struct RolePdb {
    /// Name of the cluster object, e.g. `simple-zk`; also the `instance` label value.
    pub cluster: String,
    /// Namespace of the cluster object; the budget lives next to its Pods.
    pub namespace: String,
    /// Product name used in `app.kubernetes.io/name`, e.g. `zookeeper`.
    pub app_name: String,
    /// Role name used in `app.kubernetes.io/component`, e.g. `server`.
    pub role: String,
    /// Labels of the budget object itself (the recommended labels of the role).
    pub labels: BTreeMap<String, String>,
    /// The product's default `maxUnavailable` for this role, from [`crate::pdb::defaults`].
    pub default_max_unavailable: u16,
}

impl RolePdb {
    /// The budget for this role, or `None` when the user disabled it.
    ///
    /// The user's `maxUnavailable` wins over the product default. The value is always an
    /// integer: ADR030 found that `maxUnavailable` works across several StatefulSets,
    /// which is what one budget over all role groups needs.
    ///
    /// ```
    /// use strata_model::pdb::{PdbConfig, RolePdb};
    ///
    /// let role_pdb = RolePdb {
    ///     cluster: "simple-zk".into(),
    ///     namespace: "default".into(),
    ///     app_name: "zookeeper".into(),
    ///     role: "server".into(),
    ///     labels: Default::default(),
    ///     default_max_unavailable: strata_model::pdb::defaults::zookeeper_servers(),
    /// };
    /// let pdb = role_pdb.build(&PdbConfig::default()).unwrap();
    /// assert_eq!(pdb.metadata.name.as_deref(), Some("simple-zk-server"));
    /// assert!(role_pdb.build(&PdbConfig { enabled: false, max_unavailable: None }).is_none());
    /// ```
    pub fn build(&self, config: &PdbConfig) -> Option<PodDisruptionBudget> {
        if !config.enabled {
            return None;
        }
        let max_unavailable = config
            .max_unavailable
            .unwrap_or(self.default_max_unavailable);
        Some(PodDisruptionBudget {
            metadata: ObjectMeta {
                name: Some(pdb_name(&self.cluster, &self.role)),
                namespace: Some(self.namespace.clone()),
                labels: Some(self.labels.clone()),
                ..ObjectMeta::default()
            },
            spec: Some(PodDisruptionBudgetSpec {
                max_unavailable: Some(IntOrString::Int(i32::from(max_unavailable))),
                selector: Some(LabelSelector {
                    match_labels: Some(selector_labels(&self.app_name, &self.cluster, &self.role)),
                    match_expressions: None,
                }),
                ..PodDisruptionBudgetSpec::default()
            }),
            status: None,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use rstest::rstest;

    use super::*;

    fn role_pdb(
        cluster: &str,
        app_name: &str,
        role: &str,
        default_max_unavailable: u16,
    ) -> RolePdb {
        RolePdb {
            cluster: cluster.to_owned(),
            namespace: "data".to_owned(),
            app_name: app_name.to_owned(),
            role: role.to_owned(),
            labels: BTreeMap::from([(
                "app.kubernetes.io/managed-by".to_owned(),
                "test-operator".to_owned(),
            )]),
            default_max_unavailable,
        }
    }

    fn max_unavailable(pdb: &PodDisruptionBudget) -> Option<IntOrString> {
        pdb.spec
            .as_ref()
            .and_then(|spec| spec.max_unavailable.clone())
    }

    fn selector(pdb: &PodDisruptionBudget) -> BTreeMap<String, String> {
        pdb.spec
            .as_ref()
            .and_then(|spec| spec.selector.as_ref())
            .and_then(|selector| selector.match_labels.clone())
            .unwrap_or_default()
    }

    #[rstest]
    #[case::defaults_use_product_default(PdbConfig::default(), 1, Some(1))]
    #[case::product_default_two(PdbConfig::default(), 2, Some(2))]
    #[case::user_override_wins(PdbConfig { enabled: true, max_unavailable: Some(3) }, 1, Some(3))]
    #[case::user_override_zero_wins(PdbConfig { enabled: true, max_unavailable: Some(0) }, 1, Some(0))]
    #[case::user_override_max(PdbConfig { enabled: true, max_unavailable: Some(u16::MAX) }, 1, Some(65535))]
    #[case::disabled_yields_none(PdbConfig { enabled: false, max_unavailable: None }, 1, None)]
    #[case::disabled_with_override_yields_none(PdbConfig { enabled: false, max_unavailable: Some(2) }, 1, None)]
    fn max_unavailable_rules(
        #[case] config: PdbConfig,
        #[case] default: u16,
        #[case] expected: Option<i32>,
    ) {
        let built = role_pdb("simple-hdfs", "hdfs", "datanode", default).build(&config);
        assert_eq!(
            built.as_ref().map(max_unavailable),
            expected.map(|value| Some(IntOrString::Int(value)))
        );
    }

    #[test]
    fn name_namespace_labels_and_selector() {
        let input = role_pdb("simple-zk", "zookeeper", "server", 1);
        let pdb = input.build(&PdbConfig::default()).unwrap();
        assert_eq!(pdb.metadata.name.as_deref(), Some("simple-zk-server"));
        assert_eq!(pdb.metadata.namespace.as_deref(), Some("data"));
        assert_eq!(pdb.metadata.labels.as_ref(), Some(&input.labels));
        // Like every built object, the budget has no owner reference: the apply
        // step adds the controller reference to everything it applies.
        assert_eq!(pdb.metadata.owner_references, None);
        assert_eq!(
            selector(&pdb),
            BTreeMap::from([
                (
                    "app.kubernetes.io/component".to_owned(),
                    "server".to_owned()
                ),
                (
                    "app.kubernetes.io/instance".to_owned(),
                    "simple-zk".to_owned()
                ),
                ("app.kubernetes.io/name".to_owned(), "zookeeper".to_owned()),
            ])
        );
        let spec = pdb.spec.unwrap();
        assert_eq!(spec.min_available, None);
        assert_eq!(spec.selector.unwrap().match_expressions, None);
    }

    #[test]
    fn serializes_as_policy_v1_with_integer_max_unavailable() {
        let pdb = role_pdb("t", "trino", "worker", 2)
            .build(&PdbConfig::default())
            .unwrap();
        let json = serde_json::to_value(&pdb).unwrap();
        assert_eq!(json["apiVersion"], "policy/v1");
        assert_eq!(json["kind"], "PodDisruptionBudget");
        assert_eq!(json["spec"]["maxUnavailable"], 2);
    }

    /// Two label selectors given as `matchLabels` can both match one Pod only if they
    /// agree on every key they share.
    fn could_select_same_pod(a: &BTreeMap<String, String>, b: &BTreeMap<String, String>) -> bool {
        a.iter()
            .all(|(key, value)| b.get(key).is_none_or(|other| other == value))
    }

    #[rstest]
    #[case::two_roles_same_cluster(("simple-hdfs", "hdfs", "namenode"), ("simple-hdfs", "hdfs", "datanode"))]
    #[case::journal_and_name_nodes(("simple-hdfs", "hdfs", "journalnode"), ("simple-hdfs", "hdfs", "namenode"))]
    #[case::coordinator_and_worker(("trino", "trino", "coordinator"), ("trino", "trino", "worker"))]
    #[case::same_role_two_clusters(("zk-a", "zookeeper", "server"), ("zk-b", "zookeeper", "server"))]
    #[case::same_role_prefix_clusters(("zk", "zookeeper", "server"), ("zk-server", "zookeeper", "server"))]
    #[case::same_cluster_and_role_two_products(("shared", "trino", "node"), ("shared", "superset", "node"))]
    fn selectors_of_distinct_roles_never_overlap(
        #[case] first: (&str, &str, &str),
        #[case] second: (&str, &str, &str),
    ) {
        let a = role_pdb(first.0, first.1, first.2, 1)
            .build(&PdbConfig::default())
            .unwrap();
        let b = role_pdb(second.0, second.1, second.2, 1)
            .build(&PdbConfig::default())
            .unwrap();
        assert!(!could_select_same_pod(&selector(&a), &selector(&b)));
    }

    #[test]
    fn overlap_check_detects_identical_role() {
        let a = selector_labels("hdfs", "simple-hdfs", "datanode");
        assert!(could_select_same_pod(&a, &a.clone()));
    }

    #[test]
    fn selector_matches_pods_of_every_role_group() {
        let selector = selector_labels("hdfs", "simple-hdfs", "datanode");
        for role_group in ["hdd", "ssd", "in-memory"] {
            let mut pod_labels = selector.clone();
            pod_labels.insert(
                "app.kubernetes.io/role-group".to_owned(),
                role_group.to_owned(),
            );
            assert!(
                selector
                    .iter()
                    .all(|(key, value)| pod_labels.get(key) == Some(value))
            );
        }
    }
}

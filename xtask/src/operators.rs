//! The one list of operators in this workspace.
//!
//! Every generator (CRDs, Helm charts, images) iterates this list, so adding an operator
//! is one entry in [`OPERATORS`] plus one dependency in `xtask/Cargo.toml`. Nothing else
//! keeps a hand-written list of operators or kinds: the CRDs come from the Rust types via
//! each operator library's `crds()` function, and the chart's RBAC rules from the same
//! controller registration the operator's `run` starts its controllers from.

use std::{collections::BTreeSet, path::Path};

use hdfs_operator::HdfsOperator;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use strata_operator::rbac::OperatorRegistration;
use strata_operator::render::{RenderError, Rendered};
use superset_operator::SupersetOperator;
use trino_operator::TrinoOperator;
use zookeeper_operator::ZookeeperOperator;

/// One operator: its name, where its crate lives, its CRDs and its controllers.
#[derive(Debug, Clone, Copy)]
pub struct Operator {
    /// Package, binary, image and chart name, e.g. `zookeeper-operator`.
    pub name: &'static str,
    /// Directory of the operator crate, relative to the workspace root.
    pub crate_dir: &'static str,
    /// The operator library's `crds()`: every CRD the operator owns, derived from its types.
    pub crds: fn() -> Vec<CustomResourceDefinition>,
    /// The operator library's `registration()`: the controllers `run` starts, from which
    /// the chart's RBAC rules are derived.
    pub registration: fn() -> OperatorRegistration,
    /// The operator library's offline `render`: the objects it would apply for the
    /// documents of its kinds among those given (others are left alone).
    pub render: fn(&[serde_json::Value]) -> Result<Rendered, RenderError>,
    /// Example manifest, relative to the workspace root, whose first document the chart's
    /// `NOTES.txt` shows as the first cluster to create.
    pub example: &'static str,
    /// A manifest applied before the example where it runs on KWOK's nodes, relative
    /// to the workspace root: what another operator would publish in a real cluster
    /// (the HDFS example's ZNode ConfigMap needs a real ZooKeeper), or Secrets the
    /// user would create. [`SandboxRunner::prerequisite`] replaces it on the runner.
    pub sandbox_prerequisite: Option<&'static str>,
    /// When the sandbox runs the example's product for real, on the pod runner's node
    /// (its image directory is provisioned); `None`: on KWOK's nodes, without processes.
    pub sandbox_runner: Option<SandboxRunner>,
}

/// How the sandbox runs an example's product for real.
#[derive(Debug, Clone, Copy)]
pub struct SandboxRunner {
    /// The product container of the example's first role; the demo breaks its JVM
    /// (`JAVA_TOOL_OPTIONS`) through `podOverrides` to show Degraded.
    pub container: &'static str,
    /// Sizes the example's documents for the sandbox machine.
    pub fit: fn(&mut Vec<serde_json::Value>),
    /// Whether the demo takes the example through the fault, stop and restart steps
    /// (each restart of the product costs real start-up time), or only shows it
    /// Available, checks it and deletes it.
    pub lifecycle: bool,
    /// What the demo checks in the running product.
    pub check: RealCheck,
    /// A manifest applied, on the runner's node too, in place of the operator's
    /// `sandbox_prerequisite` stand-in: the real product another operator runs (the
    /// HDFS example's ZooKeeper and its ZNode).
    pub prerequisite: Option<&'static str>,
}

/// What the demo checks in a product the runner runs.
#[derive(Debug, Clone, Copy)]
pub enum RealCheck {
    /// A leader is elected; a ZNode's path is created and removed; an ensemble grows
    /// 1 → 3 and keeps the data written before each step.
    Zookeeper(SandboxZookeeper),
    /// A `tpch` query through the coordinator answers with the known row count.
    Trino {
        /// The coordinator's role in the example (`<cluster>-<role>-default-0`).
        coordinator_role: &'static str,
    },
    /// One namenode is active and the other standby, every datanode is live, and a
    /// file written through WebHDFS is read back.
    Hdfs,
}

/// A demo step against a real ZooKeeper: a sub-resource applied once the example is
/// Available, whose discovery ConfigMap (named like it) must hold `published_keys`
/// and name a path that exists in the ensemble until the sub-resource is deleted.
#[derive(Debug, Clone, Copy)]
pub struct SandboxZookeeper {
    /// The sub-resource's manifest, relative to the workspace root.
    pub manifest: &'static str,
    /// The keys its discovery ConfigMap must hold.
    pub published_keys: &'static [&'static str],
    /// The key that holds the path in the ensemble.
    pub path_key: &'static str,
}

/// Every operator of the workspace, in the order generators report them.
///
/// Add one entry per operator, like the ZooKeeper one below.
pub const OPERATORS: &[Operator] = &[
    Operator {
        name: "zookeeper-operator",
        crate_dir: "operators/zookeeper",
        crds: <ZookeeperOperator as strata_operator::cli::Operator>::crds,
        registration: <ZookeeperOperator as strata_operator::cli::Operator>::registration,
        render: <ZookeeperOperator as strata_operator::cli::Operator>::render,
        example: "examples/zookeeper/simple-cluster.yaml",
        sandbox_prerequisite: None,
        sandbox_runner: Some(SandboxRunner {
            container: zookeeper_operator::build::container::ZOOKEEPER_CONTAINER,
            fit: |_| {},
            lifecycle: true,
            check: RealCheck::Zookeeper(SandboxZookeeper {
                manifest: "xtask/sandbox/znode.yaml",
                published_keys: &[
                    "ZOOKEEPER",
                    "ZOOKEEPER_HOSTS",
                    "ZOOKEEPER_CHROOT",
                    "ZOOKEEPER_CLIENT_PORT",
                ],
                path_key: "ZOOKEEPER_CHROOT",
            }),
            prerequisite: None,
        }),
    },
    Operator {
        name: "hdfs-operator",
        crate_dir: "operators/hdfs",
        crds: <HdfsOperator as strata_operator::cli::Operator>::crds,
        registration: <HdfsOperator as strata_operator::cli::Operator>::registration,
        render: <HdfsOperator as strata_operator::cli::Operator>::render,
        example: "examples/hdfs/simple-hdfs.yaml",
        sandbox_prerequisite: Some("xtask/sandbox/hdfs-znode.yaml"),
        sandbox_runner: Some(SandboxRunner {
            container: "namenode",
            fit: |_| {},
            lifecycle: false,
            check: RealCheck::Hdfs,
            prerequisite: Some("xtask/sandbox/hdfs-zookeeper.yaml"),
        }),
    },
    Operator {
        name: "superset-operator",
        crate_dir: "operators/superset",
        crds: <SupersetOperator as strata_operator::cli::Operator>::crds,
        registration: <SupersetOperator as strata_operator::cli::Operator>::registration,
        render: <SupersetOperator as strata_operator::cli::Operator>::render,
        example: "examples/superset/simple-superset.yaml",
        sandbox_prerequisite: Some("xtask/sandbox/superset-secrets.yaml"),
        sandbox_runner: None,
    },
    Operator {
        name: "trino-operator",
        crate_dir: "operators/trino",
        crds: <TrinoOperator as strata_operator::cli::Operator>::crds,
        registration: <TrinoOperator as strata_operator::cli::Operator>::registration,
        render: <TrinoOperator as strata_operator::cli::Operator>::render,
        example: "examples/trino/simple-trino.yaml",
        sandbox_prerequisite: Some("xtask/sandbox/trino-secrets.yaml"),
        sandbox_runner: Some(SandboxRunner {
            container: trino_operator::build::container::TRINO_CONTAINER,
            fit: fit_trino,
            lifecycle: false,
            check: RealCheck::Trino {
                coordinator_role: "coordinator",
            },
            prerequisite: None,
        }),
    },
];

/// The Trino example on the sandbox machine: a coordinator and one worker of 1280Mi
/// each (the least the operator allows), workers that drain in 5 s, and only the
/// `tpch` catalog (the PostgreSQL connector of 483 is not on Maven Central, so the
/// image directory has no plugin for the `postgres` catalog).
fn fit_trino(documents: &mut Vec<serde_json::Value>) {
    documents.retain(|document| {
        document["kind"] != "TrinoCatalog" || document["spec"]["connector"].get("tpch").is_some()
    });
    for document in documents.iter_mut() {
        if document["kind"] != "TrinoCluster" {
            continue;
        }
        let spec = &mut document["spec"];
        for role in ["coordinators", "workers"] {
            spec[role]["config"]["resources"]["memory"]["limit"] = "1280Mi".into();
        }
        spec["workers"]["config"]["shutdownGracePeriod"] = "5s".into();
        spec["workers"]["roleGroups"]["default"]["replicas"] = 1.into();
    }
}

/// The registered operators; generators take a slice so tests can pass fixtures instead.
pub fn registered() -> &'static [Operator] {
    OPERATORS
}

/// Mistakes a new registry entry can make: a name used twice, a crate dir without a crate,
/// or an example file that does not exist.
///
/// Returned as sentences (empty when fine) so a test can show all of them at once.
pub fn registry_problems(operators: &[Operator], workspace: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    let mut names = BTreeSet::new();
    for operator in operators {
        if !names.insert(operator.name) {
            problems.push(format!("{} is registered twice", operator.name));
        }
        let manifest = Path::new(operator.crate_dir).join("Cargo.toml");
        if !workspace.join(&manifest).is_file() {
            problems.push(format!(
                "{}: {} does not exist",
                operator.name,
                manifest.display()
            ));
        }
        if !workspace.join(operator.example).is_file() {
            problems.push(format!(
                "{}: example {} does not exist",
                operator.name, operator.example
            ));
        }
        if let Some(SandboxRunner {
            check: RealCheck::Zookeeper(zookeeper),
            ..
        }) = operator.sandbox_runner
            && !workspace.join(zookeeper.manifest).is_file()
        {
            problems.push(format!(
                "{}: sandbox ZooKeeper manifest {} does not exist",
                operator.name, zookeeper.manifest
            ));
        }
        let real_prerequisite = operator
            .sandbox_runner
            .and_then(|runner| runner.prerequisite);
        for prerequisite in operator
            .sandbox_prerequisite
            .into_iter()
            .chain(real_prerequisite)
            .filter(|prerequisite| !workspace.join(prerequisite).is_file())
        {
            problems.push(format!(
                "{}: sandbox prerequisite {prerequisite} does not exist",
                operator.name
            ));
        }
    }
    problems
}

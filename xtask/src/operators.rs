//! The one list of operators in this workspace.
//!
//! Every generator (CRDs, Helm charts, images) iterates this list, so adding an operator
//! is one line in [`OPERATORS`] plus one dependency in `xtask/Cargo.toml`. Nothing else
//! keeps a hand-written list of operators or kinds: the CRDs come from the Rust types via
//! each operator library's `crds()` function.

use std::{collections::BTreeSet, path::Path};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

/// One operator: its name, where its crate lives, and how to get its CRDs.
#[derive(Debug, Clone, Copy)]
pub struct Operator {
    /// Binary, image and chart name, e.g. `zookeeper-operator`.
    pub name: &'static str,
    /// Directory of the operator crate, relative to the workspace root.
    pub crate_dir: &'static str,
    /// The operator library's `crds()`: every CRD the operator owns, derived from its types.
    pub crds: fn() -> Vec<CustomResourceDefinition>,
}

/// Every operator of the workspace, in the order generators report them.
///
/// Add one line per operator, for example:
/// `Operator { name: "zookeeper-operator", crate_dir: "operators/zookeeper", crds: zookeeper_operator::crds },`
pub const OPERATORS: &[Operator] = &[Operator {
    name: "zookeeper-operator",
    crate_dir: "operators/zookeeper",
    crds: zookeeper_operator::crds,
}];

/// The registered operators; generators take a slice so tests can pass fixtures instead.
pub fn registered() -> &'static [Operator] {
    OPERATORS
}

/// Mistakes a new registry line can make: a name used twice, or a crate dir without a crate.
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
    }
    problems
}

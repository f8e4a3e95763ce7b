//! The shared operator checks (`strata_testing::checks`), run by `cargo xtask
//! test` for every registered operator: a new operator is checked by being
//! registered, without a test file of its own.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use strata_testing::checks::{self, OperatorUnderTest, Tools};
use strata_testing::crd_schema::CrdSchemas;
use strata_testing::validate::Validator;

use crate::operators::Operator;
use crate::tools;

/// The checks' tools, from the provisioned ones.
pub fn tools_of(provisioned: &tools::Tools) -> anyhow::Result<Tools> {
    let python = strata_testing::tools::python_of_venv(&provisioned.kubernetes_validate);
    let crd_schemas = CrdSchemas::from_dirs(
        python.clone(),
        &[
            provisioned.prometheus_operator_crds.clone(),
            provisioned.gateway_api_crds.clone(),
        ],
    )
    .map_err(anyhow::Error::msg)?;
    Ok(Tools {
        validator: Validator::new(
            &provisioned.kubernetes_validate,
            &provisioned.kubernetes_version,
        ),
        crd_schemas,
        python,
        helm: provisioned.sandbox.helm.clone(),
    })
}

/// Builds each operator's binary and runs every check on it; fails naming
/// every check that failed, after running all of them.
pub fn run(workspace: &Path, operators: &[Operator], tools: &Tools) -> anyhow::Result<()> {
    let names: Vec<&str> = operators.iter().map(|operator| operator.name).collect();
    let built = crate::build::binaries(workspace, &names, false)?;
    let mut failed = Vec::new();
    for operator in operators {
        let binary = built
            .get(operator.name)
            .cloned()
            .with_context(|| format!("cargo built no executable named {}", operator.name))?;
        let under_test = under_test(workspace, operator, binary)?;
        for (check, outcome) in checks::run_all(&under_test, tools) {
            match outcome {
                Ok(summary) => eprintln!("    {}: ok: {check} ({summary})", operator.name),
                Err(why) => {
                    eprintln!("    {}: FAILED: {check}\n{why}", operator.name);
                    failed.push(format!("{}: {check}", operator.name));
                }
            }
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        bail!("{} checks failed:\n  {}", failed.len(), failed.join("\n  "))
    }
}

fn under_test(
    workspace: &Path,
    operator: &Operator,
    binary: PathBuf,
) -> anyhow::Result<OperatorUnderTest> {
    let examples = workspace
        .join(operator.example)
        .parent()
        .map(Path::to_path_buf)
        .with_context(|| format!("{}: the example has no directory", operator.name))?;
    Ok(OperatorUnderTest {
        name: operator.name.to_owned(),
        binary,
        examples,
        chart: workspace.join("helm").join(operator.name),
        crd_names: (operator.crds)()
            .into_iter()
            .filter_map(|crd| crd.metadata.name)
            .collect(),
        rules: strata_operator::rbac::rules(&(operator.registration)()),
        lease_rules: strata_operator::rbac::lease_rules(),
        crd_rules: strata_operator::rbac::crd_rules(&(operator.crds)()),
    })
}

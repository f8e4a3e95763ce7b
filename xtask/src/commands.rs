//! The subcommands' work, separate from argument parsing so the pipeline can reuse it.

use std::path::{Path, PathBuf};

use anyhow::bail;

use crate::{
    crds,
    generated::GeneratedTree,
    helm,
    images::{self, ImageOptions},
    operators, pipeline, tools,
};

/// The workspace root: the parent of this crate's directory.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from(".."), Path::to_path_buf)
}

/// `gen-crds`: write `crds/`, or with `check` fail naming every stale, missing or extra file.
pub fn gen_crds(workspace: &Path, check: bool) -> anyhow::Result<()> {
    let tree = crds::desired_tree(operators::registered())?;
    apply(workspace, &tree, check, "cargo xtask gen-crds")
}

/// `gen-helm`: write `helm/`, or with `check` fail naming every stale, missing or extra file.
pub fn gen_helm(workspace: &Path, check: bool) -> anyhow::Result<()> {
    let tree = helm::desired_tree(operators::registered(), workspace)?;
    apply(workspace, &tree, check, "cargo xtask gen-helm")
}

/// `images`: build (and push) every operator's image; fails plainly without a Docker engine.
pub fn images(workspace: &Path, options: &ImageOptions) -> anyhow::Result<()> {
    let docker = images::docker_program()?;
    let steps = images::plan(
        operators::registered(),
        options,
        helm::VERSION,
        &images::revision(workspace),
    );
    images::run(workspace, &docker, &steps)
}

/// hadolint on every Dockerfile of the workspace, with the given hadolint binary.
pub fn hadolint(workspace: &Path, program: &Path) -> anyhow::Result<()> {
    let files = images::dockerfiles(workspace)?;
    images::hadolint(program, &files)?;
    for file in &files {
        let shown = file.strip_prefix(workspace).unwrap_or(file);
        eprintln!("{}: no findings", shown.display());
    }
    Ok(())
}

/// `test`: provision the tools and run the full suite.
pub fn test(workspace: &Path) -> anyhow::Result<()> {
    pipeline::run(workspace)
}

/// `check-operators`: provision the tools and run the shared operator checks.
pub fn check_operators(workspace: &Path) -> anyhow::Result<()> {
    let tools = tools::provision(workspace)?;
    crate::checks::run(
        workspace,
        crate::operators::registered(),
        &crate::checks::tools_of(&tools)?,
    )
}

/// `tools`: provision the tools and print their variables as shell exports.
pub fn tools(workspace: &Path) -> anyhow::Result<()> {
    let tools = tools::provision(workspace)?;
    for (var, value) in tools.env_vars() {
        println!("export {var}='{}'", value.to_string_lossy());
    }
    Ok(())
}

/// Writes `tree` or checks it; shared by every generator so they behave the same.
pub fn apply(
    workspace: &Path,
    tree: &GeneratedTree,
    check: bool,
    regenerate: &str,
) -> anyhow::Result<()> {
    let dir = tree.dir().display();
    if check {
        let drifts = tree.check(workspace)?;
        if drifts.is_empty() {
            eprintln!("{dir}/: {} files up to date", tree.files().len());
            return Ok(());
        }
        for drift in &drifts {
            eprintln!("  {drift}");
        }
        bail!(
            "{} generated files in {dir}/ are out of date; run `{regenerate}`",
            drifts.len()
        );
    }
    let summary = tree.write(workspace)?;
    for path in &summary.written {
        eprintln!("  wrote   {}", path.display());
    }
    for path in &summary.removed {
        eprintln!("  removed {}", path.display());
    }
    eprintln!(
        "{dir}/: {} written, {} unchanged, {} removed",
        summary.written.len(),
        summary.unchanged.len(),
        summary.removed.len()
    );
    Ok(())
}

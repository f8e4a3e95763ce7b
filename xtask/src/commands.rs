//! The subcommands' work, separate from argument parsing so the pipeline can reuse it.

use std::path::{Path, PathBuf};

use anyhow::bail;

use crate::{crds, generated::GeneratedTree, operators, pipeline, tools};

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

/// `test`: provision the tools and run the full suite.
pub fn test(workspace: &Path) -> anyhow::Result<()> {
    pipeline::run(workspace)
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

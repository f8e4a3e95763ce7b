//! Command-line interface of `cargo xtask`.

use clap::{Parser, Subcommand};

use crate::commands;

/// Workspace automation for Strata: generated files, tool provisioning, the full test suite.
#[derive(Debug, Parser)]
#[command(name = "cargo xtask", version)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Task,
}

/// The tasks `cargo xtask` knows.
#[derive(Debug, Subcommand)]
pub enum Task {
    /// Write crds/<plural>.<group>.yaml for every registered operator and remove stale files.
    GenCrds {
        /// Change nothing; fail and name every stale, missing or extra file.
        #[arg(long)]
        check: bool,
    },
    /// Provision the external tools and run the full suite (fmt, clippy, all tests, generated files).
    Test,
    /// Provision the external tools and print their STRATA_* variables as shell exports.
    Tools,
}

/// Runs the parsed command against this workspace.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    let workspace = commands::workspace_root();
    match cli.command {
        Task::GenCrds { check } => commands::gen_crds(&workspace, check),
        Task::Test => commands::test(&workspace),
        Task::Tools => commands::tools(&workspace),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn gen_crds_check_flag_parses() {
        let cli = Cli::try_parse_from(["xtask", "gen-crds", "--check"]).expect("parses");
        assert!(matches!(cli.command, Task::GenCrds { check: true }));
    }
}

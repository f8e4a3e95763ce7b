//! Command-line interface of `cargo xtask`.

use clap::{Parser, Subcommand};

use crate::{commands, helm, images};

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
    /// Write `crds/<plural>.<group>.yaml` for every registered operator and remove stale files.
    GenCrds {
        /// Change nothing; fail and name every stale, missing or extra file.
        #[arg(long)]
        check: bool,
    },
    /// Write `helm/<operator>/` (a chart) for every registered operator and remove stale files.
    GenHelm {
        /// Change nothing; fail and name every stale, missing or extra file.
        #[arg(long)]
        check: bool,
    },
    /// Build the container image of every registered operator with Docker.
    ///
    /// Fails, building nothing, when no Docker engine answers.
    Images {
        /// Push each image after building it.
        #[arg(long)]
        push: bool,
        /// Tag of the images.
        #[arg(long, default_value = helm::VERSION)]
        tag: String,
        /// Registry prefix of the images; the charts' default image.repository uses the default.
        #[arg(long, default_value = images::DEFAULT_REGISTRY)]
        registry: String,
    },
    /// Provision the external tools and run the full suite (fmt, clippy, hadolint, all tests,
    /// generated files).
    Test,
    /// Provision the external tools and print their STRATA_* variables as shell exports.
    Tools,
    /// Provision the external tools and run only the shared operator checks (render,
    /// kubernetes-validate, PyYAML, chart RBAC) on every registered operator; a step of `test`.
    CheckOperators,
    /// Run the pods of the custom resources in a manifest as local processes with the
    /// pod runner (real products, no cluster), forward their ports to loopback, and
    /// print `forward <pod> <port> 127.0.0.1:<port>` and `ready <pod>` lines. Runs until
    /// Ctrl-C. Needs root.
    Run {
        /// The manifest.
        #[arg(short = 'f', long = "file")]
        file: std::path::PathBuf,
    },
    /// Run every operator on a real control plane (etcd, kube-apiserver,
    /// kube-controller-manager, kube-scheduler, KWOK nodes) on loopback, installed with the
    /// real helm and driven with the real kubectl; no cluster needed. Runs until Ctrl-C.
    Sandbox {
        /// Loopback address every component listens on, each on a free port.
        #[arg(long, default_value = "127.0.0.1")]
        address: String,
        /// Apply each operator's example, show it Available, stop it, and exit.
        #[arg(long)]
        demo: bool,
    },
}

/// Runs the parsed command against this workspace.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    let workspace = commands::workspace_root();
    match cli.command {
        Task::GenCrds { check } => commands::gen_crds(&workspace, check),
        Task::GenHelm { check } => commands::gen_helm(&workspace, check),
        Task::Images {
            push,
            tag,
            registry,
        } => commands::images(
            &workspace,
            &images::ImageOptions {
                registry,
                tag,
                push,
            },
        ),
        Task::Test => commands::test(&workspace),
        Task::Tools => commands::tools(&workspace),
        Task::CheckOperators => commands::check_operators(&workspace),
        Task::Run { file } => crate::run::run(&workspace, &file),
        Task::Sandbox { address, demo } => {
            crate::sandbox::run(&workspace, crate::sandbox::SandboxOptions { address, demo })
        }
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

    #[test]
    fn gen_helm_check_flag_parses() {
        let cli = Cli::try_parse_from(["xtask", "gen-helm", "--check"]).expect("parses");
        assert!(matches!(cli.command, Task::GenHelm { check: true }));
    }

    #[test]
    fn images_default_to_the_workspace_version_and_default_registry_without_push() {
        let cli = Cli::try_parse_from(["xtask", "images"]).expect("parses");
        let Task::Images {
            push,
            tag,
            registry,
        } = cli.command
        else {
            panic!("not images: {:?}", cli.command);
        };
        assert!(!push);
        assert_eq!(tag, env!("CARGO_PKG_VERSION"));
        assert_eq!(registry, images::DEFAULT_REGISTRY);
    }

    #[test]
    fn images_take_push_and_tag() {
        let cli =
            Cli::try_parse_from(["xtask", "images", "--push", "--tag", "dev"]).expect("parses");
        assert!(matches!(
            cli.command,
            Task::Images { push: true, ref tag, .. } if tag == "dev"
        ));
    }
}

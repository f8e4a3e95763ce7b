//! `cargo xtask test`: the full suite, as one ordered list of steps.
//!
//! The list is data ([`steps`]) so that the docs, CI and a unit test all agree on what
//! "the full suite" means; [`run`] executes it, printing a banner per step and stopping at
//! the first failure.
//!
//! The main command comes first: `cargo xtask sandbox --demo` runs as a newcomer runs
//! it, as a command of its own on CI's fresh clone, before anything else has built a
//! binary or provisioned a tool. A binary it forgets to build, or a tool it forgets to
//! provision, then fails CI instead of a new user.

use std::{ffi::OsString, path::Path, process::Command, time::Instant};

use anyhow::{Context, bail};

use crate::{checks, commands, operators, tools};

/// What one step does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Run `cargo` with these arguments in the workspace root.
    Cargo(Vec<&'static str>),
    /// Check that the committed `crds/` match the registered operators.
    CheckCrds,
    /// Check that the committed `helm/` charts match the registered operators.
    CheckHelm,
    /// Lint every Dockerfile with the provisioned hadolint.
    Hadolint,
    /// Build every test binary (`cargo test --workspace --no-run`), for the
    /// [`Action::Tests`] step after it.
    BuildTests,
    /// Run every test binary side by side ([`crate::lanes`]) with `--include-ignored`
    /// (building them first unless [`Action::BuildTests`] did), then the doctests. The
    /// steps `beside` run meanwhile, in order, at the lowest CPU priority: the HDFS
    /// and Trino suites, which run alone, leave about half a core idle for 16 minutes.
    Tests {
        /// What runs meanwhile, in order.
        beside: Vec<Step>,
    },
    /// Run the shared operator checks (`strata_testing::checks`) on every
    /// registered operator.
    OperatorChecks,
    /// `cargo xtask sandbox --demo`, as its own `cargo` command: every operator
    /// installed with the real helm onto the real control plane, its pods on the pod
    /// runner's node, and driven with the real kubectl. Nothing runs beside it: what
    /// did must neither build a binary nor provision a tool the demo could then find,
    /// and the lints that did took longer than the demo itself.
    SandboxDemo,
    /// `cargo` with these arguments at the lowest CPU priority and in a target
    /// directory of its own, [`LINT_TARGET_DIR`]: it takes only the CPU the step it
    /// runs beside leaves idle, and never waits on a build lock of `target/`.
    LintCargo(Vec<&'static str>),
    /// Provision every tool the later steps need (`cargo xtask tools`), and export
    /// their variables to those steps. The steps `beside` need no tool and run
    /// meanwhile, in order: provisioning mostly waits on registries and pip, and the
    /// build keeps the cores busy.
    Provision {
        /// What runs meanwhile, in order.
        beside: Vec<Step>,
    },
}

/// One named step of the suite.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// Shown in the banner.
    pub name: &'static str,
    /// What runs.
    pub action: Action,
}

/// The suite, in order: the formatting check, the main command on the fresh clone,
/// then the provisioning of the rest, cheap static checks, every test, and generated
/// files.
pub fn steps() -> Vec<Step> {
    vec![
        Step {
            name: "rustfmt",
            action: Action::Cargo(vec!["fmt", "--all", "--", "--check"]),
        },
        Step {
            name: "the main command first, as a newcomer runs it: cargo xtask sandbox --demo (helm install as pods on the runner's node; real ZooKeeper, HDFS and Trino; Available, Degraded, healed, Stopped, deleted with its PVCs kept; Lease handover)",
            action: Action::SandboxDemo,
        },
        Step {
            name: "provision every other external tool under target/tools, beside the build of every test binary",
            action: Action::Provision {
                beside: vec![Step {
                    name: "cargo test --workspace --no-run",
                    action: Action::BuildTests,
                }],
            },
        },
        Step {
            name: "hadolint on the Dockerfiles",
            action: Action::Hadolint,
        },
        Step {
            name: "tests, including those that need external tools, beside clippy and rustdoc at the lowest priority",
            action: Action::Tests { beside: lints() },
        },
        Step {
            name: "shared checks of every registered operator (render, validation, chart RBAC)",
            action: Action::OperatorChecks,
        },
        Step {
            name: "generated CRDs are up to date",
            action: Action::CheckCrds,
        },
        Step {
            name: "generated Helm charts are up to date",
            action: Action::CheckHelm,
        },
    ]
}

/// Where [`Action::LintCargo`] builds, under the workspace.
pub const LINT_TARGET_DIR: &str = "target/lint";

/// Clippy with every warning denied, then rustdoc, whose lints deny every broken or
/// private doc link.
fn lints() -> Vec<Step> {
    vec![
        Step {
            name: "clippy",
            action: Action::LintCargo(vec![
                "clippy",
                "--workspace",
                "--all-targets",
                "--",
                "-D",
                "warnings",
            ]),
        },
        Step {
            name: "rustdoc: every doc link resolves",
            action: Action::LintCargo(vec!["doc", "--no-deps", "--workspace"]),
        },
    ]
}

/// The tools of the [`Action::Provision`] step, for the steps after it.
struct Provisioned {
    env: std::collections::BTreeMap<&'static str, OsString>,
    check_tools: strata_testing::checks::Tools,
}

/// What earlier steps hand to later ones.
#[derive(Default)]
struct Handed {
    /// From [`Action::Provision`].
    provisioned: Option<Provisioned>,
    /// From [`Action::BuildTests`].
    test_binaries: Option<Vec<crate::lanes::TestBinary>>,
}

/// Runs every step; the ones after [`Action::Provision`] get the tool variables.
pub fn run(workspace: &Path) -> anyhow::Result<()> {
    let started = Instant::now();
    let steps = steps();
    let mut handed = Handed::default();
    for (index, step) in steps.iter().enumerate() {
        banner(index + 1, step.name);
        let step_started = Instant::now();
        execute(workspace, &step.action, &mut handed)
            .with_context(|| format!("step {} ({}) failed", index + 1, step.name))?;
        eprintln!("    ok ({:.1}s)", step_started.elapsed().as_secs_f64());
    }
    eprintln!(
        "\n==> all {} steps passed in {:.1}s",
        steps.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The variables cargo sets for the package it runs (xtask itself), which must not
/// reach the cargo commands xtask starts: cargo records them as inputs of the crates
/// that read them, so a `cargo test` run with xtask's `CARGO_PKG_NAME` differs from a
/// plain `cargo test`, and switching between the two rebuilds part of the tree.
pub(crate) fn package_variables(names: impl Iterator<Item = OsString>) -> Vec<OsString> {
    const EXACT: [&str; 6] = [
        "CARGO_MANIFEST_DIR",
        "CARGO_MANIFEST_PATH",
        "CARGO_MANIFEST_LINKS",
        "CARGO_CRATE_NAME",
        "CARGO_BIN_NAME",
        "CARGO_PRIMARY_PACKAGE",
    ];
    names
        .filter(|name| {
            name.to_str().is_some_and(|name| {
                EXACT.contains(&name) || name.starts_with("CARGO_PKG_") || name == "OUT_DIR"
            })
        })
        .collect()
}

fn execute(workspace: &Path, action: &Action, handed: &mut Handed) -> anyhow::Result<()> {
    let no_tools = std::collections::BTreeMap::new();
    let env = handed
        .provisioned
        .as_ref()
        .map_or(&no_tools, |tools| &tools.env)
        .clone();
    let env = &env;
    match action {
        Action::Cargo(args) => run_cargo(workspace, cargo_command(), args, env),
        Action::LintCargo(args) => {
            let mut command =
                strata_testing::parent_death::lowest_priority_command(Path::new(&cargo()));
            command.env("CARGO_TARGET_DIR", workspace.join(LINT_TARGET_DIR));
            cargo_environment(&mut command, env);
            // Its output is printed once it ends, so it does not interleave with the
            // lines of the step it runs beside; a success prints nothing of its own.
            let output = command
                .args(args)
                .current_dir(workspace)
                .output()
                .context("cannot start cargo")?;
            if !output.status.success() {
                eprint!("{}", String::from_utf8_lossy(&output.stdout));
                eprint!("{}", String::from_utf8_lossy(&output.stderr));
                bail!("cargo {} exited with {}", args.join(" "), output.status);
            }
            Ok(())
        }
        Action::SandboxDemo => run_cargo(
            workspace,
            cargo_command(),
            &["xtask", "sandbox", "--demo"],
            &no_tools,
        ),
        Action::Provision { beside } => {
            let tools = std::thread::scope(|scope| {
                let provisioning = scope.spawn(|| tools::provision(workspace));
                let meanwhile = run_beside(workspace, beside, handed);
                // Joined before either error is returned, so both are seen.
                let tools = provisioning
                    .join()
                    .map_err(|_| anyhow::anyhow!("the provisioning thread panicked"))?;
                meanwhile?;
                tools
            })?;
            for (tool, version) in &tools.versions {
                eprintln!("    {tool}: {version}");
            }
            eprintln!(
                "    kubernetes schemas for validation: {}",
                tools.kubernetes_version
            );
            handed.provisioned = Some(Provisioned {
                env: tools.env_vars(),
                check_tools: checks::tools_of(&tools)?,
            });
            Ok(())
        }
        Action::BuildTests => {
            let binaries = crate::lanes::build(workspace, &cargo(), &|command| {
                cargo_environment(command, env);
            })?;
            handed.test_binaries = Some(binaries);
            Ok(())
        }
        Action::Tests { beside } => {
            let configure = |command: &mut Command| cargo_environment(command, env);
            let binaries = match handed.test_binaries.take() {
                Some(binaries) => binaries,
                None => crate::lanes::build(workspace, &cargo(), &configure)?,
            };
            std::thread::scope(|scope| {
                // Its own thread, which lives as long as the lints run: the
                // parent-death signal of what it starts follows the thread
                // (`parent_death`).
                let meanwhile =
                    scope.spawn(|| run_beside(workspace, beside, &mut Handed::default()));
                let tests = crate::lanes::run(workspace, &cargo(), &configure, binaries);
                // Joined before either error is returned, so both are seen.
                let lints = meanwhile
                    .join()
                    .map_err(|_| anyhow::anyhow!("the thread of the lints panicked"))?;
                tests?;
                lints
            })
        }
        Action::OperatorChecks => {
            let tools = handed
                .provisioned
                .as_ref()
                .context("the operator checks run after the provisioning step")?;
            checks::run(workspace, operators::registered(), &tools.check_tools)
        }
        Action::CheckCrds => commands::gen_crds(workspace, true),
        Action::CheckHelm => commands::gen_helm(workspace, true),
        Action::Hadolint => {
            let program = env
                .get(tools::env::HADOLINT)
                .with_context(|| format!("{} was not provisioned", tools::env::HADOLINT))?;
            commands::hadolint(workspace, Path::new(program))
        }
    }
}

/// Runs `steps` one after the other beside another step, each with its time.
fn run_beside(workspace: &Path, steps: &[Step], handed: &mut Handed) -> anyhow::Result<()> {
    steps.iter().try_for_each(|step| {
        let started = Instant::now();
        execute(workspace, &step.action, handed)
            .with_context(|| format!("{} failed", step.name))?;
        eprintln!(
            "    meanwhile: {} ok ({:.1}s)",
            step.name,
            started.elapsed().as_secs_f64()
        );
        anyhow::Ok(())
    })
}

/// `cargo`, dying with this process like every server the steps start.
fn cargo_command() -> Command {
    strata_testing::parent_death::command(Path::new(&cargo()))
}

/// `command` (a `cargo`) with `args` in the workspace root with the tool variables
/// `env`.
fn run_cargo(
    workspace: &Path,
    mut command: Command,
    args: &[&str],
    env: &std::collections::BTreeMap<&'static str, OsString>,
) -> anyhow::Result<()> {
    let cargo = cargo();
    cargo_environment(&mut command, env);
    let status = command
        .args(args)
        .current_dir(workspace)
        .status()
        .with_context(|| format!("cannot start {cargo:?}"))?;
    if !status.success() {
        bail!("cargo {} exited with {status}", args.join(" "));
    }
    Ok(())
}

fn cargo() -> OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
}

/// The tool variables, without xtask's own package variables.
fn cargo_environment(
    command: &mut Command,
    env: &std::collections::BTreeMap<&'static str, OsString>,
) {
    for variable in package_variables(std::env::vars_os().map(|(name, _)| name)) {
        command.env_remove(variable);
    }
    command.envs(env);
}

fn banner(number: usize, name: &str) {
    eprintln!("\n==> [{number}] {name}");
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn suite_runs_the_main_command_first_then_static_checks_every_test_and_generated_files() {
        let actions: Vec<Action> = steps().into_iter().map(|step| step.action).collect();
        assert_eq!(
            actions,
            vec![
                Action::Cargo(vec!["fmt", "--all", "--", "--check"]),
                Action::SandboxDemo,
                Action::Provision {
                    beside: vec![Step {
                        name: "cargo test --workspace --no-run",
                        action: Action::BuildTests,
                    }]
                },
                Action::Hadolint,
                Action::Tests {
                    beside: vec![
                        Step {
                            name: "clippy",
                            action: Action::LintCargo(vec![
                                "clippy",
                                "--workspace",
                                "--all-targets",
                                "--",
                                "-D",
                                "warnings"
                            ]),
                        },
                        Step {
                            name: "rustdoc: every doc link resolves",
                            action: Action::LintCargo(vec!["doc", "--no-deps", "--workspace"]),
                        },
                    ]
                },
                Action::OperatorChecks,
                Action::CheckCrds,
                Action::CheckHelm,
            ]
        );
    }
}

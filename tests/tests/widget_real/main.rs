//! The shared runtime on the real control plane (`strata_testing::control_plane`): the
//! test operator of `support/widget.rs`, a real kube-runtime `Controller` built from the
//! shared crates, against kube-apiserver, its garbage collector, StatefulSet controller
//! and KWOK's kubelets.
//!
//! What each scenario proves is Kubernetes semantics meeting our apply and status
//! steps: owner references and field managers, server-side apply economy and drift
//! repair, pruning that spares claims, conditions from real pods, pause and stop,
//! objects the operator does not own, and watches of referenced objects. What the real
//! API cannot give (injected 500s, conflicts, slow answers) stays on the in-memory
//! API, in `controller_e2e.rs`.
//!
//! The scenarios share one control plane and run at once, each in a namespace of its
//! own with its own operator ([`widgets::Widgets`]): thirteen control planes, one per
//! test, took 3.5 minutes of CI on two cores. So this binary has its own small
//! harness. Like the other control-plane tests it runs only with `--include-ignored`
//! (or `--ignored`), which `cargo xtask test` passes; a further argument runs only the
//! scenarios whose name contains it; `--list` lists them.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

#[allow(dead_code)] // the in-memory tests use the rest of it
#[path = "../support/widget.rs"]
mod widget;

mod children;
mod conditions;
mod events;
mod operation;
mod ownership;
mod references;
mod widgets;

use std::future::Future;
use std::pin::Pin;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::CustomResourceExt;
use strata_operator::error::BackoffPolicy;
use strata_testing::control_plane::{ControlPlane, ControlPlaneOptions};

use crate::widget::Widget;
use crate::widgets::Widgets;

type Scenario = fn(Widgets) -> Pin<Box<dyn Future<Output = ()> + Send>>;

/// The runtime's default backoff: a failure that needs the user is retried after five
/// minutes, so every recovery within a scenario's minute was requeued by a watch.
fn default_backoff() -> BackoffPolicy {
    BackoffPolicy::default()
}

/// For the one scenario that waits for a retry: the operator watches only what it
/// labels, so a user deleting their own object shows at the next retry only.
fn quick_retry() -> BackoffPolicy {
    BackoffPolicy {
        invalid_spec: Duration::from_secs(2),
        ..BackoffPolicy::default()
    }
}

/// One scenario: its name, the operator's backoff and what it does.
struct Entry {
    name: &'static str,
    backoff: fn() -> BackoffPolicy,
    run: Scenario,
}

/// Every scenario.
const SCENARIOS: &[Entry] = &[
    Entry {
        name: "children_are_owned_labelled_applied_server_side_and_collected_with_their_owner",
        backoff: default_backoff,
        run: |widgets| Box::pin(children::owned_labelled_applied_and_collected(widgets)),
    },
    Entry {
        name: "an_edited_or_deleted_child_is_restored_and_a_reconcile_with_nothing_changed_writes_nothing",
        backoff: default_backoff,
        run: |widgets| Box::pin(children::restored_and_economical(widgets)),
    },
    Entry {
        name: "a_restarted_operator_applies_nothing_again",
        backoff: default_backoff,
        run: |widgets| {
            Box::pin(children::a_restarted_operator_applies_nothing_again(
                widgets,
            ))
        },
    },
    Entry {
        name: "children_no_longer_desired_are_pruned_but_never_claims",
        backoff: default_backoff,
        run: |widgets| Box::pin(children::pruned_but_never_claims(widgets)),
    },
    Entry {
        name: "conditions_follow_the_workload_and_its_pods",
        backoff: default_backoff,
        run: |widgets| Box::pin(conditions::follow_the_workload_and_its_pods(widgets)),
    },
    Entry {
        name: "a_repeated_event_counts_up_its_series_and_a_new_note_is_a_new_event",
        backoff: default_backoff,
        run: |widgets| {
            Box::pin(events::a_repeat_counts_up_and_a_new_note_is_a_new_event(
                widgets,
            ))
        },
    },
    Entry {
        name: "pause_stops_writes_to_children_and_stop_scales_to_zero_keeping_claims",
        backoff: default_backoff,
        run: |widgets| Box::pin(operation::pause_and_stop(widgets)),
    },
    Entry {
        name: "the_operator_command_annotation_pauses_too",
        backoff: default_backoff,
        run: |widgets| {
            Box::pin(operation::the_operator_command_annotation_pauses_too(
                widgets,
            ))
        },
    },
    Entry {
        name: "an_object_a_user_created_is_never_taken_over",
        backoff: quick_retry,
        run: |widgets| Box::pin(ownership::a_users_object_is_never_taken_over(widgets)),
    },
    Entry {
        name: "an_object_another_owner_controls_is_never_taken_over_even_with_our_label",
        backoff: default_backoff,
        run: |widgets| {
            Box::pin(ownership::another_owners_object_is_never_taken_over(
                widgets,
            ))
        },
    },
    Entry {
        name: "a_create_once_secret_of_someone_else_is_reported_not_kept_silently",
        backoff: default_backoff,
        run: |widgets| {
            Box::pin(ownership::someone_elses_create_once_secret_is_reported(
                widgets,
            ))
        },
    },
    Entry {
        name: "a_missing_config_map_is_reported_and_its_creation_requeues_the_owner",
        backoff: default_backoff,
        run: |widgets| {
            Box::pin(references::a_missing_config_map_is_reported_and_requeues(
                widgets,
            ))
        },
    },
    Entry {
        name: "an_edit_of_a_referenced_config_map_rolls_in_and_an_unrelated_one_requeues_nobody",
        backoff: default_backoff,
        run: |widgets| {
            Box::pin(references::an_edit_rolls_in_and_an_unrelated_one_does_not(
                widgets,
            ))
        },
    },
    Entry {
        name: "a_missing_secret_is_reported_and_its_creation_requeues_the_owner",
        backoff: default_backoff,
        run: |widgets| {
            Box::pin(references::a_missing_secret_is_reported_and_requeues(
                widgets,
            ))
        },
    },
    Entry {
        name: "a_create_once_secret_is_generated_once_and_never_overwritten",
        backoff: default_backoff,
        run: |widgets| {
            Box::pin(references::a_create_once_secret_is_never_overwritten(
                widgets,
            ))
        },
    },
];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let filter = name_filter(&args);
    let chosen: Vec<usize> = (0..SCENARIOS.len())
        .filter(|&index| {
            filter
                .as_ref()
                .is_none_or(|f| SCENARIOS[index].name.contains(f))
        })
        .collect();
    if args.iter().any(|arg| arg == "--list") {
        for &index in &chosen {
            println!("{}: test", SCENARIOS[index].name);
        }
        return ExitCode::SUCCESS;
    }
    if !args
        .iter()
        .any(|arg| arg == "--include-ignored" || arg == "--ignored")
    {
        println!(
            "widget_real: {} scenarios ignored: they need the control plane \
             (STRATA_CONTROL_PLANE_BIN); run by cargo xtask test",
            chosen.len()
        );
        return ExitCode::SUCCESS;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let failed = runtime.block_on(run(&chosen));
    if failed.is_empty() {
        println!("widget_real: {} scenarios passed", chosen.len());
        ExitCode::SUCCESS
    } else {
        println!("widget_real: failed: {}", failed.join(", "));
        ExitCode::FAILURE
    }
}

/// libtest's options that take a value as the next argument, which is no name filter.
const OPTIONS_WITH_VALUES: &[&str] = &[
    "--test-threads",
    "--skip",
    "--format",
    "--color",
    "--logfile",
    "--shuffle-seed",
    "-Z",
];

/// The first argument that is neither an option nor an option's value.
fn name_filter(args: &[String]) -> Option<String> {
    let mut arguments = args.iter();
    while let Some(arg) = arguments.next() {
        if OPTIONS_WITH_VALUES.contains(&arg.as_str()) {
            arguments.next();
        } else if !arg.starts_with('-') {
            return Some(arg.clone());
        }
    }
    None
}

/// Starts the control plane, runs the chosen scenarios at once, each in its own
/// namespace, and stops the control plane; returns the names of those that failed.
async fn run(chosen: &[usize]) -> Vec<String> {
    let started = Instant::now();
    let control_plane = ControlPlane::start(ControlPlaneOptions::default())
        .await
        .unwrap_or_else(|error| panic!("the control plane starts: {error}"));
    control_plane
        .install_crds(&[Widget::crd()])
        .await
        .expect("the Widget CRD is established");
    let control_plane = Arc::new(control_plane);
    let tasks: Vec<_> = chosen
        .iter()
        .map(|&index| {
            let Entry { name, backoff, run } = &SCENARIOS[index];
            let (name, backoff, scenario) = (*name, *backoff, *run);
            let control_plane = Arc::clone(&control_plane);
            let task = tokio::spawn(async move {
                let namespace = format!("scenario-{index}");
                let widgets = Widgets::start(control_plane, &namespace, backoff()).await;
                scenario(widgets).await;
            });
            (name, task)
        })
        .collect();
    let mut failed = Vec::new();
    for (name, task) in tasks {
        match task.await {
            Ok(()) => println!("test {name} ... ok"),
            Err(error) => {
                println!("test {name} ... FAILED ({error})");
                failed.push(name.to_owned());
            }
        }
    }
    println!(
        "widget_real: {} scenarios on one control plane in {:.1} s",
        chosen.len(),
        started.elapsed().as_secs_f64()
    );
    failed
}

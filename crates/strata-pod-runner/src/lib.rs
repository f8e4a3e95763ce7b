//! Runs pods as the operators render them, as local processes without a container
//! engine: the pod runner of issue 23. Its design, tried on the development machine, is
//! in `docs/pod-runner.md`.
//!
//! Built so far: the pods' network ([`network`]): a namespace of its own per pod, with
//! an address on a bridge in a namespace of the runner's, no route out of that network,
//! and the hosts file that makes pod FQDNs and Service names resolve there.

pub mod agent;
pub mod container;
pub mod env;
pub mod forward;
pub mod hosts;
pub mod image;
pub mod isolate;
pub mod launch;
pub mod manifest;
pub mod network;
pub mod openshift;
pub mod pod;
pub mod probe;
pub mod report;
pub mod runner;
pub mod service_rules;
pub mod shim;
pub mod spec;
pub mod statefulset;
pub mod status;
pub mod volume;

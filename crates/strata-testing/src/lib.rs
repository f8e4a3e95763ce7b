//! What every operator's tests share, so that a new operator writes only its
//! product's scenarios.
//!
//! - [`harness`]: an operator running against the in-memory API;
//! - [`control_plane`]: a real Kubernetes control plane (etcd, kube-apiserver,
//!   kube-controller-manager, kube-scheduler) with KWOK nodes, on loopback;
//! - [`mod@bench`]: the reconcile benchmark every operator runs over its example;
//! - [`manifests`]: acting as the user (create from JSON, patch the spec);
//! - [`workloads`]: what Kubernetes' own controllers would do there;
//! - [`wait`]: polling for objects, conditions and Events of any kind;
//! - [`tools`]: the `STRATA_*` variables through which `cargo xtask test` hands
//!   the external tools (Helm, kubernetes-validate, Java) to the tests;
//! - [`http`]: a product's HTTP endpoint on loopback;
//! - [`process`]: a program run to completion within a time bound, its whole
//!   process group stopped if it overruns;
//! - [`parent_death`]: long-running servers that the kernel kills with their parent;
//! - [`executable`]: stand-in programs a test runs, written so that executing them
//!   never fails with "Text file busy";
//! - [`hadoop`]: what the real Hadoop client makes of a rendered HDFS client
//!   configuration;
//! - [`validate`], [`yaml`], [`chart`] and [`checks`]: the checks every
//!   operator's binary, examples and chart must pass, which `cargo xtask test`
//!   runs over the operator registry.
// Test support: an unmet precondition fails the test like an assertion.
#![allow(clippy::panic, clippy::expect_used)]

pub mod bench;
pub mod chart;
pub mod checks;
pub mod control_plane;
pub mod crd_schema;
pub mod executable;
pub mod gateway_api;
pub mod hadoop;
pub mod harness;
pub mod http;
pub mod manifests;
pub mod oidc;
pub mod parent_death;
pub mod postgres;
pub mod process;
pub mod prometheus;
pub mod slapd;
pub mod superset;
pub mod tls;
pub mod tools;
pub mod validate;
pub mod wait;
pub mod workloads;
pub mod yaml;

pub use harness::{Harness, TIMEOUT};

//! Reconcile tests: the real ZooKeeper operator (cluster and ZNode controllers) against
//! the in-memory API server.
//!
//! Each test starts its own operator on its own API server, so tests run in parallel and
//! share nothing. The Kubernetes controllers that are not there (StatefulSet controller,
//! kubelet, volume provisioner) are played by the tests: they set StatefulSet status and
//! create Pods and PersistentVolumeClaims with the labels the operator asked for.
//!
//! Waits are bounded by [`support::TIMEOUT`] and fail with a message naming what never
//! happened; the only pause is [`strata_testing::Harness::settle`], which waits
//! until the operator has stopped sending requests.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod certificates;
mod config_change;
mod creation;
mod deletion;
mod economy;
mod exposure;
mod invalid;
mod membership;
mod monitoring;
mod operations;
mod pdb;
mod scaling;
mod status;
mod storage;
mod support;
mod tls;
mod znode;

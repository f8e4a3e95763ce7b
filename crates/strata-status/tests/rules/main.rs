//! Rule tables for strata-status: one named case per ADR027 row and per
//! documented addition. One test binary keeps link time down.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod cluster;
mod combine;
mod crd_schema;
mod fixtures;
mod operation;
mod status;
mod transition;
mod upgradable;
mod version;
mod workload_extraction;
mod workload_table;

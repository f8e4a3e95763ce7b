//! End-to-end tests: real kube-rs clients, watchers and controllers against the test server.

mod accounting;
mod apply;
mod crud;
mod lifecycle;
mod patch;
mod selectors;
mod support;
mod watch;

//! Pod disruption budgets for Strata operators, following ADR030 option 1.
//!
//! Every role of a product gets exactly one [`PodDisruptionBudget`] named
//! `<cluster>-<role>`. Its selector matches the role through the recommended labels
//! `app.kubernetes.io/{name,instance,component}`, so budgets of different roles (and of
//! different clusters) never select the same Pod. The eviction API refuses to evict a
//! Pod covered by more than one budget, which is why overlap must be impossible by
//! construction rather than by convention.
//!
//! Users configure the budget per role under `spec.<role>.roleConfig.podDisruptionBudget`
//! ([`PdbConfig`]). A disabled budget yields no object; the apply step prunes a budget
//! that existed before, so users can replace ours with their own (for example one that
//! spans several roles) without two budgets fighting over the same Pods.
//!
//! Each product supplies its default `maxUnavailable` from [`defaults`].
//!
//! [`PodDisruptionBudget`]: k8s_openapi::api::policy::v1::PodDisruptionBudget

mod builder;
mod config;
pub mod defaults;

pub use builder::{RolePdb, pdb_name, selector_labels};
pub use config::PdbConfig;

//! The Strata HDFS operator: `HdfsCluster`, a highly available HDFS namespace.
//!
//! The crate has the shape every Strata operator shares: `crd` (spec and status types),
//! `validate` (spec to checked model), `config` (product files and scripts), `build`
//! (pure objects), `controller` (the reconcile pipeline) and `render`; `roll` is the
//! HDFS restart order.

pub mod build;
pub mod config;
pub mod controller;
pub mod crd;
pub mod decommission;
pub mod journal;
pub mod journal_sync;
pub mod render;
pub mod roll;
pub mod takeover;
pub mod validate;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;
use strata_operator::cli::Operator;
use strata_operator::controller::OperatorRuntime;
use strata_operator::rbac::OperatorRegistration;

/// The operator's name: field manager, `managed-by` label value, Event reporter.
pub const OPERATOR_NAME: &str = crd::OPERATOR_NAME;

/// The HDFS operator, as the shared command line sees it.
#[derive(Debug)]
pub struct HdfsOperator;

impl Operator for HdfsOperator {
    const NAME: &'static str = OPERATOR_NAME;

    fn crds() -> Vec<CustomResourceDefinition> {
        vec![crd::HdfsCluster::crd()]
    }

    fn registration() -> OperatorRegistration {
        controller::registration()
    }

    fn render(
        documents: &[serde_json::Value],
    ) -> Result<strata_operator::render::Rendered, strata_operator::render::RenderError> {
        render::render(documents)
    }

    async fn run(runtime: OperatorRuntime) {
        controller::run(runtime).await;
    }
}

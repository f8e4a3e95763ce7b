//! The Strata ZooKeeper operator: `ZookeeperCluster` ensembles and
//! `ZookeeperZnode` paths in them.
//!
//! The crate has the shape every Strata operator shares: `crd` (spec and
//! status types), `validate` (spec to checked model), `build` (pure objects),
//! `config` (product config files), `controller` (the reconcile pipelines)
//! and `render`.

pub mod build;
pub mod config;
pub mod controller;
pub mod crd;
pub mod membership;
pub mod render;
pub mod validate;
pub mod znode_client;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;
use strata_operator::cli::Operator;
use strata_operator::controller::OperatorRuntime;
use strata_operator::rbac::OperatorRegistration;

/// The operator's name: field manager, `managed-by` label value, Event reporter.
pub const OPERATOR_NAME: &str = crd::OPERATOR_NAME;

/// The ZooKeeper operator, as the shared command line sees it.
#[derive(Debug)]
pub struct ZookeeperOperator;

impl Operator for ZookeeperOperator {
    const NAME: &'static str = OPERATOR_NAME;

    fn crds() -> Vec<CustomResourceDefinition> {
        vec![crd::ZookeeperCluster::crd(), crd::ZookeeperZnode::crd()]
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
        let options = controller::RunOptions::for_runtime(&runtime);
        controller::run(runtime, options).await;
    }
}

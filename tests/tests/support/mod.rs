//! The test operator's controller, run by the shared harness.

pub mod wait;
pub mod widget;

use std::future::Future;
use std::sync::Arc;

use kube::api::{Api, PostParams};
use kube::runtime::controller::Action;
use serde::de::DeserializeOwned;
use strata_operator::controller::{Context, run_controller};
use strata_operator::definition::ControllerDef;
use strata_operator::error::ReconcileError;
use strata_test_apiserver::TestApiServer;
pub use strata_testing::Harness;

use self::widget::{Widget, definition, reconcile};

/// Starts one controller for `K` on a fresh in-memory API in which
/// `register` has registered the custom resource kinds.
pub fn start_controller<K, F, Fut>(
    register: impl FnOnce(&TestApiServer),
    definition: ControllerDef<K>,
    reconcile: F,
) -> Harness
where
    K: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
    F: Fn(Arc<K>, Arc<Context<()>>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Action, ReconcileError>> + Send + 'static,
{
    let server = TestApiServer::new();
    register(&server);
    Harness::start(server, "widget-operator", move |runtime| async move {
        run_controller(&runtime, &definition, (), reconcile).await;
    })
}

/// The widget operator on a fresh in-memory API.
pub fn start() -> Harness {
    start_controller::<Widget, _, _>(
        |server: &TestApiServer| {
            server.register::<Widget>();
        },
        definition(),
        reconcile,
    )
}

pub async fn create(harness: &Harness, widget: &Widget) -> Widget {
    let api: Api<Widget> = Api::namespaced(harness.server.client(), harness.namespace);
    api.create(&PostParams::default(), widget)
        .await
        .expect("create widget")
}

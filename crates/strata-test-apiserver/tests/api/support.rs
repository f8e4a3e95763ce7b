//! Fixtures shared by the end-to-end tests.

use std::{collections::BTreeMap, future::Future, time::Duration};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{CustomResource, api::ObjectMeta};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strata_test_apiserver::TestApiServer;

/// Upper bound for anything that waits: a broken watch fails the test instead of hanging.
pub const WAIT: Duration = Duration::from_secs(5);

/// A small custom resource with a status subresource.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "test.strata.dev",
    version = "v1alpha1",
    kind = "Widget",
    namespaced,
    status = "WidgetStatus",
    derive = "PartialEq"
)]
pub struct WidgetSpec {
    pub replicas: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
}

/// Status of [`Widget`].
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WidgetStatus {
    pub ready_replicas: i32,
}

/// A server serving the built-ins and [`Widget`].
pub fn server() -> TestApiServer {
    let server = TestApiServer::new();
    server.register::<Widget>();
    server
}

/// A Widget in namespace `default`.
pub fn widget(name: &str, replicas: i32) -> Widget {
    let mut w = Widget::new(
        name,
        WidgetSpec {
            replicas,
            image: None,
        },
    );
    w.metadata.namespace = Some("default".into());
    w
}

/// A ConfigMap with data and labels.
pub fn config_map(name: &str, data: &[(&str, &str)], labels: &[(&str, &str)]) -> ConfigMap {
    let map = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    };
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: (!labels.is_empty()).then(|| map(labels)),
            ..ObjectMeta::default()
        },
        data: (!data.is_empty()).then(|| map(data)),
        ..ConfigMap::default()
    }
}

/// The HTTP code and reason of a kube API error.
pub fn api_error(result: Result<impl Sized, kube::Error>) -> Option<(u16, String)> {
    match result {
        Err(kube::Error::Api(status)) => Some((status.code, status.reason.clone())),
        _ => None,
    }
}

/// Awaits `future`, failing after [`WAIT`].
pub async fn within<T>(future: impl Future<Output = T>) -> anyhow::Result<T> {
    Ok(tokio::time::timeout(WAIT, future).await?)
}

/// `metadata.resourceVersion` parsed as a number.
pub fn rv(meta: &ObjectMeta) -> anyhow::Result<u64> {
    Ok(meta
        .resource_version
        .as_deref()
        .unwrap_or_default()
        .parse()?)
}

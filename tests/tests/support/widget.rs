//! The test operator: a `Widget` resource with a StatefulSet, its config and
//! Service, plus an optional extra ConfigMap and PVC to exercise pruning. Its
//! reconcile is the shared pipeline, step by step.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{StatefulSet, StatefulSetSpec};
use k8s_openapi::api::core::v1::{
    ConfigMap, PersistentVolumeClaim, PodSpec, PodTemplateSpec, Service, ServicePort, ServiceSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::{CustomResource, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strata_model::cluster_operation::ClusterOperation;
use strata_model::labels::RecommendedLabels;
use strata_operator::apply::DesiredObjects;
use strata_operator::cache::ChildKind;
use strata_operator::controller::{Context, ControllerSpec};
use strata_operator::error::ReconcileError;
use strata_operator::pipeline::Prepared;
use strata_status::ClusterStatus;
use strata_test_apiserver::TestApiServer;

use super::Harness;

/// The test resource: a StatefulSet with its config and Service, plus an
/// optional extra ConfigMap and PVC to exercise pruning.
#[derive(CustomResource, Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[kube(
    group = "test.strata.dev",
    version = "v1alpha1",
    kind = "Widget",
    namespaced,
    status = "ClusterStatus"
)]
#[serde(rename_all = "camelCase")]
pub struct WidgetSpec {
    pub replicas: i32,
    pub version: String,
    #[serde(default)]
    pub cluster_operation: ClusterOperation,
    #[serde(default)]
    pub extra: bool,
}

pub const OPERATOR: &str = "widget-operator";

pub fn labels(widget: &Widget) -> Result<RecommendedLabels, ReconcileError> {
    RecommendedLabels::new("widget", &widget.name_any(), OPERATOR, &widget.spec.version)
        .and_then(|labels| labels.for_role_group("server", "default"))
        .map_err(|error| ReconcileError::invalid_spec("InvalidLabel", error.to_string()))
}

pub fn metadata(widget: &Widget, name: String, labels: &RecommendedLabels) -> ObjectMeta {
    ObjectMeta {
        name: Some(name),
        namespace: widget.namespace(),
        labels: Some(labels.labels()),
        ..ObjectMeta::default()
    }
}

/// The pure build step of the test operator.
pub fn build(widget: &Widget) -> Result<Prepared, ReconcileError> {
    let labels = labels(widget)?;
    let name = widget.name_any();
    let mut desired = DesiredObjects::new();
    desired.push(ConfigMap {
        metadata: metadata(widget, format!("{name}-config"), &labels),
        data: Some(BTreeMap::from([(
            "version".to_owned(),
            widget.spec.version.clone(),
        )])),
        ..ConfigMap::default()
    });
    desired.push(Service {
        metadata: metadata(widget, name.clone(), &labels),
        spec: Some(ServiceSpec {
            selector: Some(labels.selector()),
            ports: Some(vec![ServicePort {
                name: Some("http".into()),
                port: 8080,
                ..ServicePort::default()
            }]),
            ..ServiceSpec::default()
        }),
        ..Service::default()
    });
    desired.push(StatefulSet {
        metadata: metadata(widget, name.clone(), &labels),
        spec: StatefulSetSpec {
            replicas: Some(widget.spec.replicas),
            selector: LabelSelector {
                match_labels: Some(labels.selector()),
                ..LabelSelector::default()
            },
            service_name: Some(name.clone()),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels.labels()),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec::default()),
            },
            ..StatefulSetSpec::default()
        },
        ..StatefulSet::default()
    });
    if widget.spec.extra {
        desired.push(ConfigMap {
            metadata: metadata(widget, format!("{name}-extra"), &labels),
            ..ConfigMap::default()
        });
        desired.push(PersistentVolumeClaim {
            metadata: metadata(widget, format!("{name}-scratch"), &labels),
            ..PersistentVolumeClaim::default()
        });
    }
    Ok(Prepared {
        objects: desired,
        product_version: widget.spec.version.clone(),
    })
}

/// The test operator's reconcile: the shared pipeline, step by step.
pub async fn reconcile(
    widget: Arc<Widget>,
    context: Arc<Context<()>>,
) -> Result<Action, ReconcileError> {
    let operation = widget.spec.cluster_operation.state(widget.annotations());
    let applied = async {
        let prepared = build(&widget)?;
        context
            .apply_prepared(widget.as_ref(), &operation, prepared)
            .await
    }
    .await;
    context.report(widget.as_ref(), &operation, applied).await
}

pub fn start() -> Harness {
    super::start_controller::<Widget, _, _>(
        |server: &TestApiServer| {
            server.register::<Widget>();
        },
        ControllerSpec {
            name: "widget",
            child_kinds: vec![
                ChildKind::of::<ConfigMap>(),
                ChildKind::of::<Service>(),
                ChildKind::of::<StatefulSet>(),
                ChildKind::of::<PersistentVolumeClaim>(),
            ],
            watch_pods: true,
        },
        reconcile,
    )
}

pub fn widget(name: &str, replicas: i32) -> Widget {
    let mut widget = Widget::new(
        name,
        WidgetSpec {
            replicas,
            version: "1.0.0".into(),
            ..WidgetSpec::default()
        },
    );
    widget.metadata.namespace = Some("default".into());
    widget
}

pub async fn create(harness: &Harness, widget: &Widget) -> Widget {
    let api: Api<Widget> = Api::namespaced(harness.server.client(), harness.namespace);
    api.create(&PostParams::default(), widget)
        .await
        .expect("create widget")
}

pub async fn patch_spec(harness: &Harness, name: &str, spec: serde_json::Value) {
    let api: Api<Widget> = Api::namespaced(harness.server.client(), harness.namespace);
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({ "spec": spec })),
    )
    .await
    .expect("patch widget");
}

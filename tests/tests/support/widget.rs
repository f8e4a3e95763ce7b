//! The test operator: a `Widget` resource with a StatefulSet, its config and
//! Service, plus an optional extra ConfigMap and PVC to exercise pruning. Its
//! reconcile is the shared pipeline, step by step. Its objects are valid on a real
//! API server, so the same operator runs on the in-memory API (`support`) and on the
//! real control plane (`widget_real`).

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{StatefulSet, StatefulSetSpec};
use k8s_openapi::api::core::v1::{
    ConfigMap, Container, PersistentVolumeClaim, PersistentVolumeClaimSpec, PodSpec,
    PodTemplateSpec, Secret, Service, ServicePort, ServiceSpec, VolumeResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::api::ObjectMeta;
use kube::runtime::controller::Action;
use kube::{CustomResource, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strata_model::cluster_operation::ClusterOperation;
use strata_model::labels::RecommendedLabels;
use strata_operator::apply::{DesiredObjects, random_token};
use strata_operator::cache::ChildKind;
use strata_operator::controller::{Context, ControllerSpec};
use strata_operator::definition::ControllerDef;
use strata_operator::error::ReconcileError;
use strata_operator::pipeline::Prepared;
use strata_operator::reference::Target;
use strata_status::ClusterStatus;

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
    /// A ConfigMap whose `greeting` the widget copies into its own config.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub greeting_config_map: Option<String>,
    /// A Secret the widget's pods would use; the operator only checks it exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials_secret: Option<String>,
    /// Whether the widget gets a generated, create-once key Secret `<name>-key`.
    #[serde(default)]
    pub generated_key: bool,
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

/// What a widget refers to, read from the reference caches.
#[derive(Debug, Default)]
pub struct Dereferenced {
    pub greeting: Option<String>,
}

fn config_maps(widget: &Widget) -> Vec<Target> {
    let namespace = widget.namespace().unwrap_or_default();
    widget
        .spec
        .greeting_config_map
        .iter()
        .map(|name| Target::named(&namespace, name))
        .collect()
}

fn secrets(widget: &Widget) -> Vec<Target> {
    let namespace = widget.namespace().unwrap_or_default();
    widget
        .spec
        .credentials_secret
        .iter()
        .map(|name| Target::named(&namespace, name))
        .collect()
}

/// Step 1: read the referenced objects from the caches; a missing one is the user's
/// to create.
pub fn dereference(widget: &Widget, context: &Context<()>) -> Result<Dereferenced, ReconcileError> {
    let namespace = widget.namespace().unwrap_or_default();
    let mut dereferenced = Dereferenced::default();
    if let Some(name) = &widget.spec.greeting_config_map {
        let config_map = context
            .references
            .get::<ConfigMap>(&namespace, name)
            .map_err(ReconcileError::from)?
            .ok_or_else(|| {
                ReconcileError::invalid_spec(
                    "ConfigMapMissing",
                    format!("the ConfigMap {namespace}/{name} does not exist"),
                )
            })?;
        dereferenced.greeting = config_map
            .data
            .as_ref()
            .and_then(|data| data.get("greeting"))
            .cloned();
    }
    if let Some(name) = &widget.spec.credentials_secret {
        context
            .references
            .metadata::<Secret>(&namespace, name)
            .map_err(ReconcileError::from)?
            .ok_or_else(|| {
                ReconcileError::invalid_spec(
                    "SecretMissing",
                    format!("the Secret {namespace}/{name} does not exist"),
                )
            })?;
    }
    Ok(dereferenced)
}

/// Fills the generated key of the create-once Secret.
fn generate_key(secret: &mut Secret) -> Result<(), String> {
    let key = random_token(32).map_err(|error| error.to_string())?;
    secret.string_data = Some(BTreeMap::from([("KEY".to_owned(), key)]));
    Ok(())
}

/// The pure build step of the test operator, with what the widget refers to.
pub fn build(widget: &Widget, dereferenced: &Dereferenced) -> Result<Prepared, ReconcileError> {
    let labels = labels(widget)?;
    let name = widget.name_any();
    let mut desired = DesiredObjects::new();
    desired.push(ConfigMap {
        metadata: metadata(widget, format!("{name}-config"), &labels),
        data: Some(
            [("version".to_owned(), widget.spec.version.clone())]
                .into_iter()
                .chain(
                    dereferenced
                        .greeting
                        .clone()
                        .map(|greeting| ("greeting".to_owned(), greeting)),
                )
                .collect(),
        ),
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
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "widget".into(),
                        image: Some(format!("example.invalid/widget:{}", widget.spec.version)),
                        ..Container::default()
                    }],
                    ..PodSpec::default()
                }),
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
            spec: Some(PersistentVolumeClaimSpec {
                access_modes: Some(vec!["ReadWriteOnce".into()]),
                resources: Some(VolumeResourceRequirements {
                    requests: Some(BTreeMap::from([(
                        "storage".to_owned(),
                        Quantity("1Gi".to_owned()),
                    )])),
                    ..VolumeResourceRequirements::default()
                }),
                ..PersistentVolumeClaimSpec::default()
            }),
            ..PersistentVolumeClaim::default()
        });
    }
    if widget.spec.generated_key {
        desired.push_create_once(
            Secret {
                metadata: metadata(widget, format!("{name}-key"), &labels),
                ..Secret::default()
            },
            generate_key,
        );
    }
    Ok(Prepared::new(desired, widget.spec.version.clone()))
}

/// The test operator's reconcile: the shared pipeline, step by step.
pub async fn reconcile(
    widget: Arc<Widget>,
    context: Arc<Context<()>>,
) -> Result<Action, ReconcileError> {
    let operation = widget.spec.cluster_operation.state(widget.annotations());
    let applied = async {
        let dereferenced = dereference(&widget, &context)?;
        let prepared = build(&widget, &dereferenced)?;
        context
            .apply_prepared(widget.as_ref(), &operation, prepared)
            .await
    }
    .await;
    context.report(widget.as_ref(), &operation, applied).await
}

/// The widget controller: its children, pods, and the ConfigMaps and Secrets widgets
/// name.
pub fn definition() -> ControllerDef<Widget> {
    ControllerDef::new(ControllerSpec {
        name: "widget",
        child_kinds: vec![
            ChildKind::of::<ConfigMap>(),
            ChildKind::of::<Secret>(),
            ChildKind::of::<Service>(),
            ChildKind::of::<StatefulSet>(),
            ChildKind::of::<PersistentVolumeClaim>(),
        ],
        watch_pods: true,
        restarts_pods: false,
    })
    .reading::<ConfigMap>(config_maps)
    .reading_metadata_of::<Secret>(secrets)
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

//! An operator keeps its own CRDs current: it applies the schema it was built with
//! over an older one, never creates a CRD the chart did not install, and never
//! downgrades one a newer operator applied.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

#[allow(dead_code, unused_imports)] // shared with controller_e2e, which uses the rest of it
mod support;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{CustomResourceExt, ResourceExt};
use strata_operator::crds::{self, CrdOutcome, VERSION_ANNOTATION};
use strata_operator::rbac;
use strata_test_apiserver::{TestApiServer, Verb};
use support::widget::Widget;

/// The Widget CRD as an older operator installed it: without the `generatedKey`
/// field in its schema.
fn older_widget_crd() -> CustomResourceDefinition {
    let mut crd = Widget::crd();
    let mut schema = serde_json::to_value(&crd.spec.versions[0].schema).expect("schema");
    let spec = &mut schema["openAPIV3Schema"]["properties"]["spec"]["properties"];
    spec.as_object_mut()
        .expect("spec properties")
        .remove("generatedKey");
    crd.spec.versions[0].schema = serde_json::from_value(schema).expect("schema");
    crd
}

fn has_generated_key(crd: &CustomResourceDefinition) -> bool {
    serde_json::to_value(&crd.spec.versions[0].schema).expect("schema")["openAPIV3Schema"]
        ["properties"]["spec"]["properties"]
        .get("generatedKey")
        .is_some()
}

fn stored(server: &TestApiServer) -> Option<CustomResourceDefinition> {
    server
        .list_typed::<CustomResourceDefinition>()
        .into_iter()
        .find(|crd| crd.name_any() == Widget::crd_name())
}

#[tokio::test]
async fn an_older_crd_is_upgraded_in_place() {
    let server = TestApiServer::new();
    server
        .upsert(&older_widget_crd())
        .expect("the chart installed the CRD");
    assert!(!has_generated_key(&stored(&server).expect("installed")));

    let outcomes = crds::upgrade(
        &server.client(),
        "widget-operator",
        "0.2.0",
        vec![Widget::crd()],
    )
    .await
    .expect("the upgrade succeeds");

    assert_eq!(
        outcomes,
        vec![(Widget::crd_name().to_owned(), CrdOutcome::Applied)]
    );
    let upgraded = stored(&server).expect("still installed");
    assert!(
        has_generated_key(&upgraded),
        "the new field is in the schema"
    );
    assert_eq!(
        upgraded
            .annotations()
            .get(VERSION_ANNOTATION)
            .map(String::as_str),
        Some("0.2.0")
    );
    // Every request is granted by the chart's CRD ClusterRole, names included.
    let rules = rbac::crd_rules(&[Widget::crd()]);
    for request in server.requests() {
        let verb = request.verb.to_string();
        let granted = rules.iter().any(|rule| {
            rule.api_groups
                .iter()
                .flatten()
                .any(|group| *group == request.group)
                && rule
                    .resources
                    .iter()
                    .flatten()
                    .any(|resource| *resource == request.resource)
                && rule.verbs.contains(&verb)
                && rule
                    .resource_names
                    .iter()
                    .flatten()
                    .any(|name| Some(name) == request.name.as_ref())
        });
        assert!(granted, "{request:?} is not granted by {rules:?}");
    }
}

#[tokio::test]
async fn a_missing_crd_is_not_created() {
    let server = TestApiServer::new();
    let outcomes = crds::upgrade(
        &server.client(),
        "widget-operator",
        "0.2.0",
        vec![Widget::crd()],
    )
    .await
    .expect("the upgrade succeeds");
    assert_eq!(
        outcomes,
        vec![(Widget::crd_name().to_owned(), CrdOutcome::Missing)]
    );
    assert!(stored(&server).is_none());
    assert_eq!(server.count(Verb::Patch, "customresourcedefinitions"), 0);
}

#[tokio::test]
async fn a_crd_of_a_newer_operator_is_left_alone() {
    let server = TestApiServer::new();
    let mut newer = Widget::crd();
    newer
        .annotations_mut()
        .insert(VERSION_ANNOTATION.to_owned(), "0.3.0".to_owned());
    server
        .upsert(&newer)
        .expect("a newer operator applied the CRD");

    let outcomes = crds::upgrade(
        &server.client(),
        "widget-operator",
        "0.2.0",
        vec![older_widget_crd()],
    )
    .await
    .expect("the upgrade succeeds");

    assert_eq!(
        outcomes,
        vec![(
            Widget::crd_name().to_owned(),
            CrdOutcome::Newer("0.3.0".to_owned())
        )]
    );
    assert!(has_generated_key(&stored(&server).expect("installed")));
    assert_eq!(server.count(Verb::Patch, "customresourcedefinitions"), 0);
}

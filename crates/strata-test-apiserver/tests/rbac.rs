//! RBAC enforcement for ServiceAccount users: what the stored Roles and bindings grant
//! is served, everything else is a 403 that names the request, and other users stay
//! administrators.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use kube::api::{Api, DeleteParams, ObjectMeta, PostParams};
use strata_test_apiserver::{TestApiServer, Verb};

const OPERATOR: &str = "system:serviceaccount:ops:operator";

fn config_map(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some("data".to_owned()),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    }
}

/// The operator may get, list and create ConfigMaps in `data`, nothing else.
fn grant(server: &TestApiServer) {
    let meta = |name: &str| ObjectMeta {
        name: Some(name.to_owned()),
        namespace: Some("data".to_owned()),
        ..ObjectMeta::default()
    };
    server
        .upsert(&Role {
            metadata: meta("operator"),
            rules: Some(vec![PolicyRule {
                api_groups: Some(vec![String::new()]),
                resources: Some(vec!["configmaps".to_owned()]),
                verbs: vec!["get".to_owned(), "list".to_owned(), "create".to_owned()],
                ..PolicyRule::default()
            }]),
        })
        .unwrap();
    server
        .upsert(&RoleBinding {
            metadata: meta("operator"),
            role_ref: RoleRef {
                api_group: Some("rbac.authorization.k8s.io".to_owned()),
                kind: "Role".to_owned(),
                name: "operator".to_owned(),
            },
            subjects: Some(vec![Subject {
                kind: "ServiceAccount".to_owned(),
                name: "operator".to_owned(),
                namespace: Some("ops".to_owned()),
                ..Subject::default()
            }]),
        })
        .unwrap();
}

#[tokio::test]
async fn a_service_account_gets_what_its_bindings_grant_and_a_403_for_the_rest() {
    let server = TestApiServer::new();
    server.enforce_rbac();
    grant(&server);
    let operator: Api<ConfigMap> = Api::namespaced(server.client_as(OPERATOR), "data");

    operator
        .create(&PostParams::default(), &config_map("granted"))
        .await
        .expect("create is granted");
    operator.get("granted").await.expect("get is granted");
    let denied = operator
        .delete("granted", &DeleteParams::default())
        .await
        .expect_err("delete is not granted");
    let kube::Error::Api(status) = denied else {
        panic!("expected a 403, got {denied:?}");
    };
    assert_eq!(status.code, 403);
    assert!(
        status
            .message
            .contains("cannot delete resource \"configmaps\""),
        "{}",
        status.message
    );
    let elsewhere: Api<ConfigMap> = Api::namespaced(server.client_as(OPERATOR), "other");
    assert_eq!(
        elsewhere
            .list(&Default::default())
            .await
            .err()
            .and_then(|error| match error {
                kube::Error::Api(status) => Some(status.code),
                _ => None,
            }),
        Some(403),
        "the Role grants nothing outside its namespace"
    );

    let refused: Vec<(Verb, Option<String>)> = server
        .denied()
        .into_iter()
        .map(|request| (request.verb, request.namespace))
        .collect();
    assert_eq!(
        refused,
        vec![
            (Verb::Delete, Some("data".to_owned())),
            (Verb::List, Some("other".to_owned()))
        ]
    );

    // Anyone else is an administrator.
    let admin: Api<ConfigMap> = Api::namespaced(server.client_as("admin"), "data");
    admin
        .delete("granted", &DeleteParams::default())
        .await
        .expect("other users are not held to RBAC");
}

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::ObjectMeta;

use super::*;

fn config_map(data: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some("cm".into()),
            namespace: Some("ns".into()),
            ..ObjectMeta::default()
        },
        data: Some([("k".to_string(), data.to_string())].into()),
        ..ConfigMap::default()
    }
}

fn owner() -> OwnerReference {
    OwnerReference {
        api_version: "test.strata.dev/v1alpha1".into(),
        kind: "Owner".into(),
        name: "o".into(),
        uid: "uid-1".into(),
        ..OwnerReference::default()
    }
}

fn cached(desired: &DesiredObject) -> DynamicObject {
    let mut value = desired.value().clone();
    value["metadata"]["resourceVersion"] = "7".into();
    value["metadata"]["namespace"] = "ns".into();
    serde_json::from_value(value).expect("valid object")
}

#[test]
fn an_applied_object_matches_its_cached_copy() {
    let desired = DesiredObject::new(&config_map("a"))
        .expect("desired")
        .owned_by(&owner());
    assert!(desired.matches(&cached(&desired)));
}

#[test]
fn drift_in_a_field_we_set_does_not_match() {
    let desired = DesiredObject::new(&config_map("a"))
        .expect("desired")
        .owned_by(&owner());
    let mut drifted = cached(&desired);
    drifted.data["data"]["k"] = "edited".into();
    assert!(!desired.matches(&drifted));
}

#[test]
fn changed_desired_content_does_not_match_the_old_copy() {
    let old = DesiredObject::new(&config_map("a"))
        .expect("desired")
        .owned_by(&owner());
    let new = DesiredObject::new(&config_map("b"))
        .expect("desired")
        .owned_by(&owner());
    assert!(!new.matches(&cached(&old)));
}

#[test]
fn owner_reference_and_hash_are_set() {
    let desired = DesiredObject::new(&config_map("a"))
        .expect("desired")
        .owned_by(&owner());
    let metadata = &desired.value()["metadata"];
    assert_eq!(metadata["ownerReferences"][0]["uid"], "uid-1");
    assert_eq!(metadata["ownerReferences"][0]["controller"], true);
    assert!(metadata["annotations"][DESIRED_HASH_ANNOTATION].is_string());
    assert_eq!(desired.value()["kind"], "ConfigMap");
    assert_eq!(desired.value()["apiVersion"], "v1");
}

fn stateful_set(replicas: i32) -> k8s_openapi::api::apps::v1::StatefulSet {
    k8s_openapi::api::apps::v1::StatefulSet {
        metadata: ObjectMeta {
            name: Some("a".into()),
            ..ObjectMeta::default()
        },
        spec: k8s_openapi::api::apps::v1::StatefulSetSpec {
            replicas: Some(replicas),
            ..Default::default()
        },
        ..Default::default()
    }
}

fn secret() -> k8s_openapi::api::core::v1::Secret {
    k8s_openapi::api::core::v1::Secret {
        metadata: ObjectMeta {
            name: Some("key".into()),
            ..ObjectMeta::default()
        },
        ..Default::default()
    }
}

fn fill_key(secret: &mut k8s_openapi::api::core::v1::Secret) -> Result<(), String> {
    secret.string_data = Some([("KEY".to_owned(), "generated".to_owned())].into());
    Ok(())
}

#[test]
fn objects_are_ordered_config_first() {
    let mut objects = DesiredObjects::new();
    objects.push(stateful_set(3));
    objects.push(config_map("x"));
    let kinds: Vec<_> = objects
        .into_objects(false)
        .expect("erase")
        .iter()
        .map(|o| o.resource().kind.clone())
        .collect();
    assert_eq!(kinds, ["ConfigMap", "StatefulSet"]);
}

#[test]
fn stopping_scales_workloads_and_keeps_the_rest() {
    let mut objects = DesiredObjects::new();
    objects.push(stateful_set(3));
    objects.push(config_map("x"));
    let running = objects.clone().into_objects(false).expect("erase");
    let stopped = objects.into_objects(true).expect("erase");
    assert_eq!(running[1].value()["spec"]["replicas"], 3);
    assert_eq!(stopped[1].value()["spec"]["replicas"], 0);
    assert_eq!(running[0], stopped[0]);
}

#[test]
fn a_pod_template_annotation_reaches_workloads_whose_template_may_change() {
    let mut objects = DesiredObjects::new();
    objects.push(stateful_set(3));
    objects.push(config_map("x"));
    objects.push(k8s_openapi::api::batch::v1::Job {
        metadata: ObjectMeta {
            name: Some("init".into()),
            ..ObjectMeta::default()
        },
        spec: Some(Default::default()),
        ..Default::default()
    });
    objects.annotate_pod_templates("strata.dev/references-hash", "abc");
    let annotated: Vec<(String, bool)> = objects
        .into_objects(false)
        .expect("erase")
        .iter()
        .map(|object| {
            let value = object.value();
            let template = &value["spec"]["template"];
            (
                object.resource().kind.clone(),
                template["metadata"]["annotations"]["strata.dev/references-hash"] == "abc",
            )
        })
        .collect();
    assert_eq!(
        annotated,
        [
            ("ConfigMap".to_owned(), false),
            ("Job".to_owned(), false),
            ("StatefulSet".to_owned(), true),
        ]
    );
}

#[test]
fn create_once_values_exist_only_in_the_creation_body() {
    let mut objects = DesiredObjects::new();
    objects.push_create_once(secret(), fill_key);
    let desired = objects
        .into_objects(false)
        .expect("erase")
        .remove(0)
        .owned_by(&owner());
    assert_eq!(desired.mode(), ApplyMode::CreateOnce);
    assert_eq!(desired.creation_value()["stringData"]["KEY"], "generated");
    assert_eq!(
        desired.creation_value()["metadata"]["ownerReferences"][0]["uid"],
        "uid-1"
    );
    assert!(desired.value().get("stringData").is_none());
    let rendered = desired.into_value();
    assert!(rendered.get("stringData").is_none() && rendered.get("data").is_none());
    assert_eq!(
        rendered["metadata"]["annotations"][CREATE_ONCE_ANNOTATION],
        "true"
    );
}

#[test]
fn a_create_once_object_matches_any_existing_copy() {
    let desired = DesiredObject::with_mode(&secret(), ApplyMode::CreateOnce)
        .expect("desired")
        .owned_by(&owner());
    let mut edited = cached(&desired);
    edited.data["data"] = serde_json::json!({"KEY": "dXNlcg=="});
    assert!(desired.matches(&edited));
}

#[test]
fn a_sealed_object_is_sent_with_its_values_and_shown_without_them() {
    let mut shown = secret();
    shown.metadata.annotations = Some([("fingerprint".to_owned(), "f1".to_owned())].into());
    let mut sealed = shown.clone();
    fill_key(&mut sealed).expect("fill");
    let mut objects = DesiredObjects::new();
    objects.push_sealed(shown, sealed);
    let desired = objects
        .into_objects(false)
        .expect("erase")
        .remove(0)
        .owned_by(&owner());
    assert_eq!(desired.mode(), ApplyMode::Apply);
    assert_eq!(desired.creation_value()["stringData"]["KEY"], "generated");
    assert!(desired.value().get("stringData").is_none());
    let hash = &desired.value()["metadata"]["annotations"][DESIRED_HASH_ANNOTATION];
    assert_eq!(
        &desired.creation_value()["metadata"]["annotations"][DESIRED_HASH_ANNOTATION],
        hash,
        "what is stored must carry the hash the next comparison looks for"
    );
    assert!(!format!("{desired:?}").contains("generated"));
    let rendered = desired.into_value();
    assert!(rendered.get("stringData").is_none() && rendered.get("data").is_none());
    assert_eq!(rendered["metadata"]["annotations"]["fingerprint"], "f1");
}

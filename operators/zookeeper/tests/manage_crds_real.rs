//! `manageCrds` against the real apiextensions server, with the chart's RBAC: the
//! operator upgrades a CRD that an older release left (Helm never upgrades `crds/`),
//! so a field the old schema lacked is served; and it leaves alone a CRD that a newer
//! operator applied, so rolling back the image takes no field away.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::path::Path;
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, PostParams};
use strata_operator::crds::VERSION_ANNOTATION;
use strata_testing::control_plane::{
    ControlPlane, ControlPlaneOptions, OperatorProcess, wait_until,
};
use zookeeper_operator::OPERATOR_NAME;

const NAMESPACE: &str = "strata-operators";
const CRD: &str = "zookeeperclusters.zookeeper.strata.dev";
/// The field the "older release" lacks.
const NEW_FIELD: &str = "clusterOperation";
const TIMEOUT: Duration = Duration::from_secs(60);

/// A cluster that sets the new field; refused by strict field validation while the
/// installed schema lacks it.
const CLUSTER_WITH_NEW_FIELD: &str = "apiVersion: zookeeper.strata.dev/v1alpha1
kind: ZookeeperCluster
metadata:
  name: uses-new-field
  namespace: default
spec:
  clusterOperation:
    reconciliationPaused: true
  servers:
    roleGroups:
      default:
        replicas: 1
";

/// Replaces the installed CRD with one whose schema lacks [`NEW_FIELD`], stamped as
/// applied by operator `version`: what an older (or, with a high version, newer)
/// release left behind.
async fn install_schema_without_new_field(api: &Api<CustomResourceDefinition>, version: &str) {
    let mut crd = serde_json::to_value(api.get(CRD).await.expect("the chart's CRD")).unwrap();
    for served in crd["spec"]["versions"].as_array_mut().unwrap() {
        served["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
            .as_object_mut()
            .unwrap()
            .remove(NEW_FIELD);
    }
    crd["metadata"]["annotations"][VERSION_ANNOTATION] = version.into();
    let crd: CustomResourceDefinition = serde_json::from_value(crd).unwrap();
    api.replace(CRD, &PostParams::default(), &crd)
        .await
        .expect("the old CRD replaces the chart's");
}

fn serves_new_field(crd: &CustomResourceDefinition) -> bool {
    crd.spec.versions.iter().all(|served| {
        served
            .schema
            .as_ref()
            .and_then(|schema| schema.open_api_v3_schema.as_ref())
            .and_then(|schema| schema.properties.as_ref())
            .and_then(|properties| properties.get("spec"))
            .and_then(|spec| spec.properties.as_ref())
            .is_some_and(|properties| properties.contains_key(NEW_FIELD))
    })
}

fn apply_strictly(control_plane: &ControlPlane, file: &Path) -> Result<String, String> {
    control_plane.kubectl(&[
        "apply",
        "--server-side",
        "--validate=strict",
        "-f",
        &file.to_string_lossy(),
    ])
}

#[tokio::test]
#[ignore = "needs the control plane (STRATA_CONTROL_PLANE_BIN); run by cargo xtask test"]
async fn the_leader_upgrades_an_older_crd_and_leaves_a_newer_one_alone() {
    let control_plane = ControlPlane::start(ControlPlaneOptions::default())
        .await
        .unwrap_or_else(|error| panic!("the control plane starts: {error}"));
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    control_plane
        .install_operator_chart(&workspace, OPERATOR_NAME, NAMESPACE)
        .expect("the chart installs");
    let api: Api<CustomResourceDefinition> =
        Api::all(control_plane.client().await.expect("an admin client"));
    let cluster = control_plane.dir().join("uses-new-field.yaml");
    std::fs::write(&cluster, CLUSTER_WITH_NEW_FIELD).unwrap();
    let binary = Path::new(env!("CARGO_BIN_EXE_zookeeper-operator"));
    let start_operator = async |name: &str| {
        let token = control_plane
            .service_account_token(NAMESPACE, OPERATOR_NAME)
            .await
            .expect("a token of the chart's ServiceAccount");
        OperatorProcess::start(&control_plane, binary, name, NAMESPACE, &token, &[])
            .expect("the operator starts")
    };

    // An older release's CRD: the API server refuses the new field.
    install_schema_without_new_field(&api, "0.0.1").await;
    let refused =
        apply_strictly(&control_plane, &cluster).expect_err("the old schema refuses the new field");
    assert!(
        refused.contains(NEW_FIELD),
        "the refusal names {NEW_FIELD}: {refused}"
    );

    let mut operator = start_operator("upgrading").await;
    let upgraded = wait_until(
        "the leader applying its CRD over the old one",
        TIMEOUT,
        async || {
            let crd = api.get(CRD).await.ok()?;
            let version = crd.metadata.annotations.as_ref()?.get(VERSION_ANNOTATION)?;
            (version == env!("CARGO_PKG_VERSION") && serves_new_field(&crd)).then_some(crd)
        },
    )
    .await;
    operator.check_alive().expect("the operator runs");
    assert!(serves_new_field(&upgraded));
    apply_strictly(&control_plane, &cluster)
        .unwrap_or_else(|error| panic!("the upgraded schema serves the new field: {error}"));
    drop(operator);

    // A newer release's CRD: a rolled-back operator leaves it as it is.
    install_schema_without_new_field(&api, "99.0.0").await;
    let mut operator = start_operator("rolled-back").await;
    wait_until(
        "the rolled-back operator saying it leaves the newer CRD alone",
        TIMEOUT,
        async || {
            let log = std::fs::read_to_string(control_plane.dir().join("rolled-back.log")).ok()?;
            log.lines()
                .any(|line| line.contains("applied by a newer operator") && line.contains(CRD))
                .then_some(())
        },
    )
    .await;
    operator.check_alive().expect("the operator runs");
    let kept = api.get(CRD).await.expect("the CRD");
    assert_eq!(
        kept.metadata
            .annotations
            .as_ref()
            .and_then(|annotations| annotations.get(VERSION_ANNOTATION))
            .map(String::as_str),
        Some("99.0.0"),
        "a newer operator's CRD keeps its stamp"
    );
    assert!(
        !serves_new_field(&kept),
        "a rolled-back operator rewrote a newer operator's CRD"
    );
}

//! How the shared runtime reads Secrets it refers to: metadata only, never a value.
//! The real API server's audit log does not record a request's `Accept` header, so
//! this stays on the in-memory API, which does; that the reference is watched and
//! its creation requeues the owner is proven on the real control plane, in
//! `widget_real/references.rs`.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

#[allow(dead_code)] // shared with controller_e2e, which uses the rest of it
mod support;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Secret;
use kube::api::ObjectMeta;
use strata_status::{ConditionStatus, ConditionType};
use support::create;
use support::wait::{wait_for_condition, wait_for_reason};
use support::widget::widget;

#[tokio::test]
async fn a_missing_secret_is_reported_without_reading_any_secret_value() {
    let harness = support::start();
    let mut w = widget("w", 1);
    w.spec.credentials_secret = Some("credentials".to_owned());
    create(&harness, &w).await;
    wait_for_reason(
        &harness,
        "w",
        ConditionType::Degraded,
        ConditionStatus::True,
        "SecretMissing",
    )
    .await;

    let secret = Secret {
        metadata: ObjectMeta {
            name: Some("credentials".to_owned()),
            namespace: Some("default".to_owned()),
            ..ObjectMeta::default()
        },
        string_data: Some(BTreeMap::from([(
            "password".to_owned(),
            "do-not-leak".to_owned(),
        )])),
        ..Secret::default()
    };
    harness.server.upsert(&secret).expect("create the Secret");
    wait_for_condition(
        &harness,
        "w",
        ConditionType::Degraded,
        ConditionStatus::False,
    )
    .await;

    let secret_reads: Vec<_> = harness
        .server
        .requests()
        .into_iter()
        .filter(|request| request.resource == "secrets" && request.verb.is_read())
        .collect();
    assert!(
        !secret_reads.is_empty(),
        "the Secret must be watched, not ignored"
    );
    assert!(
        secret_reads.iter().all(|request| request.metadata_only),
        "every read of Secrets must ask for metadata only: {secret_reads:?}"
    );
}

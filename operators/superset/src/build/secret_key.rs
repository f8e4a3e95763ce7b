//! `SECRET_KEY`: Superset signs sessions and encrypts stored database passwords, SSH
//! tunnel credentials and OAuth tokens with it (`encrypted_field_factory`), so it must
//! never change by accident. A key the user names (`clusterConfig.secretKeySecret`)
//! wins. Otherwise the operator creates `<cluster>-secret-key` once, random, and never
//! writes it again; `render` shows the Secret without a value.
//!
//! The generated Secret outlives the cluster
//! ([`strata_operator::apply::ApplyMode::CreateOnceRetained`]): the metadata database
//! it encrypts is the user's and survives a `kubectl delete`, a GitOps replace or a
//! Helm uninstall, and a cluster re-created on it must decrypt what it stored. So the
//! Secret has no owner reference, and one of its name that exists already (restored
//! from a backup, or left by the cluster's predecessor) is adopted as it is. Only the
//! user deletes it, once the metadata database is gone too.
//!
//! Rotation: `clusterConfig.previousSecretKeySecret` names the old key while the new
//! one is in place; the init container re-encrypts from it
//! ([`crate::build::container::PREVIOUS_SECRET_KEY_ENV`]).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Secret;
use strata_model::build::object_meta;
use strata_operator::apply::random_token;

use crate::validate::{SecretKeySource, ValidatedCluster};

/// The key of the Secret.
pub const SECRET_KEY_KEY: &str = "SECRET_KEY";
/// Random bytes in a generated key (64 hex characters).
pub const SECRET_KEY_BYTES: usize = 32;

/// The generated `<superset>-secret-key`, without a value: the value is filled in
/// only when the Secret is created ([`fill_secret_key`]). `None` when the user names
/// the key's Secret.
pub fn secret_key_secret(cluster: &ValidatedCluster) -> Option<Secret> {
    let SecretKeySource::Generated(name) = &cluster.secret_key else {
        return None;
    };
    Some(Secret {
        metadata: object_meta(
            name,
            &cluster.identity.namespace,
            cluster.identity.labels.labels(),
        ),
        type_: Some("Opaque".to_owned()),
        ..Secret::default()
    })
}

/// Generates the key, once, just before the Secret is created.
pub fn fill_secret_key(secret: &mut Secret) -> Result<(), String> {
    let key = random_token(SECRET_KEY_BYTES).map_err(|error| error.to_string())?;
    secret.string_data = Some(BTreeMap::from([(SECRET_KEY_KEY.to_owned(), key)]));
    Ok(())
}

//! `SECRET_KEY`: Superset signs sessions and encrypts stored database passwords with
//! it, so it must never change by accident. The operator creates it once, random, and
//! never writes it again; `render` shows the Secret without a value.
//!
//! Rotation (by hand): set the old key as `PREVIOUS_SECRET_KEY` (an `envOverrides`
//! entry or a `configOverrides` expression reading it), write the new one into the
//! Secret, run `superset re-encrypt-secrets` in a pod, then restart the pods.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Secret;
use strata_model::build::object_meta;
use strata_operator::apply::random_token;

use crate::validate::ValidatedCluster;

/// The key of the Secret.
pub const SECRET_KEY_KEY: &str = "SECRET_KEY";
/// Random bytes in a generated key (64 hex characters).
pub const SECRET_KEY_BYTES: usize = 32;

/// `<superset>-secret-key`, without a value: the value is filled in only when the
/// Secret is created ([`fill_secret_key`]).
pub fn secret_key_secret(cluster: &ValidatedCluster) -> Secret {
    Secret {
        metadata: object_meta(
            &secret_key_name(cluster),
            &cluster.identity.namespace,
            cluster.identity.labels.labels(),
        ),
        type_: Some("Opaque".to_owned()),
        ..Secret::default()
    }
}

/// The Secret's name.
pub fn secret_key_name(cluster: &ValidatedCluster) -> String {
    format!("{}-secret-key", cluster.identity.name)
}

/// Generates the key, once, just before the Secret is created.
pub fn fill_secret_key(secret: &mut Secret) -> Result<(), String> {
    let key = random_token(SECRET_KEY_BYTES).map_err(|error| error.to_string())?;
    secret.string_data = Some(BTreeMap::from([(SECRET_KEY_KEY.to_owned(), key)]));
    Ok(())
}

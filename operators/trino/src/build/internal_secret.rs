//! `internal-communication.shared-secret`: the nodes sign their internal requests with
//! it, so every node must hold the same value, and a new value would split the
//! cluster until every pod restarted. The operator creates it once, random, and never
//! writes it again; `render` shows the Secret without a value.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Secret;
use strata_model::build::object_meta;
use strata_operator::apply::random_token;

use crate::validate::ValidatedCluster;

/// The key of the Secret.
pub const SHARED_SECRET_KEY: &str = "sharedSecret";
/// Random bytes in a generated secret (128 hex characters).
pub const SHARED_SECRET_BYTES: usize = 64;

/// `<trino>-internal-secret`, without a value: the value is filled in only when the
/// Secret is created ([`fill_internal_secret`]).
pub fn internal_secret(cluster: &ValidatedCluster) -> Secret {
    Secret {
        metadata: object_meta(
            &internal_secret_name(cluster),
            &cluster.identity.namespace,
            cluster.identity.labels.labels(),
        ),
        type_: Some("Opaque".to_owned()),
        ..Secret::default()
    }
}

/// The Secret's name.
pub fn internal_secret_name(cluster: &ValidatedCluster) -> String {
    format!("{}-internal-secret", cluster.identity.name)
}

/// Generates the secret, once, just before the Secret is created.
pub fn fill_internal_secret(secret: &mut Secret) -> Result<(), String> {
    let value = random_token(SHARED_SECRET_BYTES).map_err(|error| error.to_string())?;
    secret.string_data = Some(BTreeMap::from([(SHARED_SECRET_KEY.to_owned(), value)]));
    Ok(())
}

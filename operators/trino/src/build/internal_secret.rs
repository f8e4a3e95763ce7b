//! `internal-communication.shared-secret`: the nodes sign their internal requests with
//! it, so every node must hold the same value, and a new value would split the
//! cluster until every pod restarted. The operator creates it once, random, and never
//! writes it again; `render` shows the Secret without a value.
//!
//! Deleting the Secret is how it is rotated (security review, finding 20): the
//! operator makes a new one with a new random id ([`SHARED_SECRET_ID_ANNOTATION`]), and
//! that id is in the restart-together hash, so every pod restarts at once onto the
//! new value instead of one by one, as each happens to restart, into a split cluster.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Secret;
use strata_model::build::object_meta;
use strata_operator::apply::random_token;

use crate::validate::ValidatedCluster;

/// The key of the Secret.
pub const SHARED_SECRET_KEY: &str = "sharedSecret";
/// Random bytes in a generated secret (128 hex characters).
pub const SHARED_SECRET_BYTES: usize = 64;
/// The annotation with the id the operator gives the Secret when it makes it: random,
/// not secret, and new with every new Secret.
pub const SHARED_SECRET_ID_ANNOTATION: &str = "trino.strata.dev/shared-secret-id";
/// Random bytes in an id (32 hex characters).
pub const SHARED_SECRET_ID_BYTES: usize = 16;

/// `<trino>-internal-secret`, without a value: the value is filled in only when the
/// Secret is created ([`fill_internal_secret`]). `id` is what a Secret made now carries
/// ([`SHARED_SECRET_ID_ANNOTATION`]).
pub fn internal_secret(cluster: &ValidatedCluster, id: Option<&str>) -> Secret {
    let mut metadata = object_meta(
        &internal_secret_name(cluster),
        &cluster.identity.namespace,
        cluster.identity.labels.labels(),
    );
    if let Some(id) = id {
        metadata.annotations = Some(BTreeMap::from([(
            SHARED_SECRET_ID_ANNOTATION.to_owned(),
            id.to_owned(),
        )]));
    }
    Secret {
        metadata,
        type_: Some("Opaque".to_owned()),
        ..Secret::default()
    }
}

/// The id for the restart-together hash, from the stored Secret's metadata
/// (`stored`, `None` when there is no Secret): its annotation; a new random one when
/// there is no Secret, which the Secret made in this reconcile then carries; `None`
/// for a Secret made before ids, so that an upgrade of the operator restarts nothing.
pub fn shared_secret_id(
    stored: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta>,
) -> Result<Option<String>, String> {
    match stored {
        Some(metadata) => Ok(metadata
            .annotations
            .as_ref()
            .and_then(|annotations| annotations.get(SHARED_SECRET_ID_ANNOTATION))
            .cloned()),
        None => random_token(SHARED_SECRET_ID_BYTES)
            .map(Some)
            .map_err(|error| error.to_string()),
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

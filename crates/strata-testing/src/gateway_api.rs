//! What the tests take from the Gateway API project: its CRDs, which a real control
//! plane installs to take the HTTPRoutes the Trino and Superset operators apply, and
//! the GatewayClass and Gateway a test creates for a route to attach to.
//!
//! No Gateway controller runs, so nothing writes a route's status: a test that needs
//! one (a refusal, an acceptance) writes it through the status subresource, as the
//! controller would.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

use crate::tools::{GATEWAY_API_CRDS, crds_in};

/// The GatewayClass, Gateway, HTTPRoute and BackendTLSPolicy CRDs of the provisioned
/// Gateway API release
/// (its standard channel), for [`crate::control_plane::ControlPlane::install_crds`].
pub fn crds() -> Vec<CustomResourceDefinition> {
    crds_in(GATEWAY_API_CRDS)
}

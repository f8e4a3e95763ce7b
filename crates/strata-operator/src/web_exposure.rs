//! The checks of a web UI's routes from outside (`clusterConfig.ingress` and
//! `clusterConfig.httpRoute`), as every product with a web UI validates them.

use strata_model::http_route::{HttpRouteExposure, INVALID_HTTP_ROUTE};
use strata_model::ingress::{INVALID_INGRESS, IngressExposure};

use crate::error::ReconcileError;

/// Refuses an Ingress or an HTTPRoute the API server would refuse, naming its field
/// under `spec.clusterConfig`.
pub fn check(
    ingress: Option<&IngressExposure>,
    http_route: Option<&HttpRouteExposure>,
) -> Result<(), ReconcileError> {
    if let Some(ingress) = ingress {
        ingress
            .check("spec.clusterConfig.ingress")
            .map_err(|message| ReconcileError::invalid_spec(INVALID_INGRESS, message))?;
    }
    if let Some(route) = http_route {
        route
            .check("spec.clusterConfig.httpRoute")
            .map_err(|message| ReconcileError::invalid_spec(INVALID_HTTP_ROUTE, message))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use rstest::rstest;
    use serde_json::{Value, json};

    use super::*;

    #[rstest]
    #[case::neither(None, None, None)]
    #[case::both_valid(
        Some(json!({"host": "trino.example.com"})),
        Some(json!({"parentRefs": [{"name": "public"}]})),
        None
    )]
    #[case::an_ingress_to_an_ip_address(Some(json!({"host": "192.0.2.7"})), None, Some("InvalidIngress"))]
    #[case::a_route_without_a_gateway(None, Some(json!({"parentRefs": []})), Some("InvalidHttpRoute"))]
    fn each_route_is_checked_under_its_field(
        #[case] ingress: Option<Value>,
        #[case] route: Option<Value>,
        #[case] refused: Option<&str>,
    ) {
        let ingress: Option<IngressExposure> =
            ingress.map(|value| serde_json::from_value(value).unwrap_or_default());
        let route: Option<HttpRouteExposure> =
            route.map(|value| serde_json::from_value(value).unwrap_or_default());
        let reason = check(ingress.as_ref(), route.as_ref())
            .err()
            .map(|error| error.reason().to_owned());
        assert_eq!(reason.as_deref(), refused);
    }
}

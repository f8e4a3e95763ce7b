//! What the controller observes of the namenodes' web UI exposure, for discovery and
//! the status: each exposed Service's address, and each Ingress's URL.

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::networking::v1::Ingress;
use strata_model::exposure::ExternalAddress;
use strata_operator::controller::Context;
use strata_status::ProgressStep;

use super::cluster::ClusterContext;
use crate::build::service::namenode_http_service_name;
use crate::validate::ValidatedCluster;

/// Records where each namenode's exposed HTTP Service is reached from outside, as the
/// watched Services say, for discovery. Returns the Progressing step while one is a
/// load balancer without an address.
pub(super) fn observe_namenode_http_addresses(
    context: &Context<ClusterContext>,
    validated: &mut ValidatedCluster,
) -> Option<ProgressStep> {
    if validated.namenode_http_service.is_default() {
        return None;
    }
    let mut waiting = None;
    for namenode in &validated.topology.namenodes {
        let service = namenode_http_service_name(&namenode.id);
        let stored = context
            .caches
            .get_typed::<Service>(&validated.identity.namespace, &service);
        let address = ExternalAddress::observe(&validated.namenode_http_service, stored.as_ref());
        waiting = waiting.or_else(|| address.waiting_step(&service));
        validated
            .namenode_http_addresses
            .insert(namenode.id.clone(), address);
    }
    waiting
}

/// Records each namenode's URL through its Ingress, once the Ingress controller has
/// written it an address, for discovery.
pub(super) fn observe_namenode_ingresses(
    context: &Context<ClusterContext>,
    validated: &mut ValidatedCluster,
) {
    let Some(ingress) = &validated.namenode_ingress else {
        return;
    };
    for namenode in &validated.topology.namenodes {
        let stored = context.caches.get_typed::<Ingress>(
            &validated.identity.namespace,
            &namenode_http_service_name(&namenode.id),
        );
        let wanted = ingress.for_namenode(&namenode.id);
        if let Some(url) = strata_model::ingress::ingress_url(Some(&wanted), stored.as_ref()) {
            validated
                .namenode_ingress_urls
                .insert(namenode.id.clone(), url);
        }
    }
}

//! Builders every operator's build step uses: pure functions from validated values to
//! `k8s-openapi` objects.
//!
//! They hold the decisions that are the same for every product, made once: least
//! privilege for every container, claims that outlive their pods, headless Services
//! that publish unready pods (peers must find each other before they are ready),
//! a config hash that rolls pods when their files change, and pod overrides merged
//! last so the user always wins. What stays in an operator is what is about its
//! product: ports, probes' commands, files, and which of these pieces it needs.

pub mod container;
pub mod meta;
pub mod pod;
pub mod role_group;
pub mod service;
pub mod stateful_set;

pub use self::container::{
    ContainerPort, PAUSE_BEFORE_STOP_SECONDS, container_port, env_vars, exec_probe, http_probe,
    pause_before_stop, resource_requirements, restricted_security_context, tcp_probe, volume_mount,
};
pub use self::meta::{
    CONFIG_HASH_ANNOTATION, REFERENCES_HASH_ANNOTATION, config_hash, object_meta,
};
pub use self::pod::{
    config_map_volume, memory_volume, pod_security_context, pod_security_context_as,
    preferred_spread, scratch_volume, secret_volume,
};
pub use self::role_group::{RoleGroupObjects, metrics_service_name, role_group_metrics_service};
pub use self::service::{
    PrometheusScrape, STATEFULSET_POD_NAME_LABEL, ScrapeScheme, client_service, headless_service,
    metrics_service, pod_service, service_port,
};
pub use self::stateful_set::{PodUpdates, StatefulSetParts, pvc_template, stateful_set};

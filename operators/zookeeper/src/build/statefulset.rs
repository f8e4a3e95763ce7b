//! The StatefulSet of a role group.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::PodSpec;
pub use strata_model::build::CONFIG_HASH_ANNOTATION;
use strata_model::build::{
    PodUpdates, config_map_volume, memory_volume, pod_security_context, preferred_spread,
    pvc_template, scratch_volume, secret_volume,
};
use strata_model::role_group::Workload;

use super::container::{
    CONFIG_VOLUME, DATA_VOLUME, KEYSTORE_VOLUME, LOG_VOLUME, TLS_VOLUME, TMP_VOLUME,
    keystore_container, myid_container, zookeeper_container,
};
use crate::membership::{
    JOINING_ANNOTATION, MYID_OFFSET_ANNOTATION, PEER_TYPE_ANNOTATION, SERVERS_ANNOTATION,
};
use crate::validate::{ValidatedCluster, ValidatedRoleGroup};

/// uid and gid of the `zookeeper` user in the official image. The image names its user
/// but sets no numeric `USER`, so `runAsNonRoot` needs the number spelled out.
pub const ZOOKEEPER_UID: i64 = 1000;
/// Size limit of each scratch volume (`/tmp`, `/logs`); both hold only small files
/// because logs go to the console.
pub const SCRATCH_SIZE_LIMIT: &str = "64Mi";
/// Size limit of the in-memory keystore volume: a key and a certificate chain.
pub const KEYSTORE_SIZE_LIMIT: &str = "1Mi";

/// `/tmp` holds a heap dump after an OutOfMemoryError: room for the whole heap
/// on top of the scratch space, so the dump does not get the pod evicted.
pub fn tmp_size_limit(group: &ValidatedRoleGroup) -> String {
    format!("{}Mi", group.resources.heap_mib + 64)
}

/// `<cluster>-server-<group>`: Pods `<name>-<ordinal>` with `myid = myidOffset + ordinal`.
///
/// `podManagementPolicy: Parallel`: a fresh ensemble needs a quorum before any server
/// becomes ready, so starting Pods one at a time (waiting for readiness) would never get
/// past the first Pod. Updates are `OnDelete`: the operator restarts one Pod at a time
/// when the quorum is healthy ([`crate::membership`]), and the StatefulSet records the
/// membership its servers belong to. Servers of the cluster prefer different nodes, so a
/// lost node costs the quorum at most one voter.
pub fn stateful_set(
    cluster: &ValidatedCluster,
    group: &ValidatedRoleGroup,
    config_hash: &str,
) -> StatefulSet {
    let name = group.name.object_name();
    let mut stateful_set = group.stateful_set(
        &cluster.identity,
        Workload {
            parallel: true,
            pod_updates: PodUpdates::ByOperator,
            config_hash,
            pod: PodSpec {
                init_containers: Some(
                    std::iter::once(myid_container(cluster, group))
                        .chain(cluster.tls.iter().map(|_| keystore_container(cluster)))
                        .collect(),
                ),
                containers: vec![zookeeper_container(cluster, group)],
                volumes: Some(
                    [
                        config_map_volume(CONFIG_VOLUME, name),
                        scratch_volume(TMP_VOLUME, &tmp_size_limit(group)),
                        scratch_volume(LOG_VOLUME, SCRATCH_SIZE_LIMIT),
                    ]
                    .into_iter()
                    .chain(cluster.tls.iter().flat_map(|tls| {
                        [
                            secret_volume(TLS_VOLUME, &tls.secret_name(name)),
                            memory_volume(KEYSTORE_VOLUME, KEYSTORE_SIZE_LIMIT),
                        ]
                    }))
                    .collect(),
                ),
                security_context: Some(pod_security_context(ZOOKEEPER_UID)),
                affinity: Some(preferred_spread(cluster.servers.labels.selector())),
                ..PodSpec::default()
            },
            claims: vec![pvc_template(
                DATA_VOLUME,
                group.labels.selector(),
                &group.product.data,
            )],
        },
    );
    let mut annotations = BTreeMap::from([
        (SERVERS_ANNOTATION.to_owned(), group.replicas.to_string()),
        (
            MYID_OFFSET_ANNOTATION.to_owned(),
            group.product.myid_offset.to_string(),
        ),
    ]);
    if group.product.observer {
        annotations.insert(PEER_TYPE_ANNOTATION.to_owned(), "observer".to_owned());
    }
    if let Some(joining) = group.product.joining {
        annotations.insert(JOINING_ANNOTATION.to_owned(), joining.to_string());
    }
    stateful_set.metadata.annotations = Some(annotations);
    stateful_set
}

//! The StatefulSet of a role group.

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{KeyToPath, PodSpec, Secret, Volume};
use strata_model::build::{
    PodUpdates, config_map_volume, object_meta, pod_security_context_as, preferred_spread,
    pvc_template, scratch_volume, secret_volume,
};
use strata_model::role_group::Workload;

use super::config_map::namenode_state_name;
use super::container::{
    CONFIG_VOLUME, DATA_VOLUME, LOG_VOLUME, RUN_VOLUME, STATE_VOLUME, TMP_VOLUME, daemon,
    format_container, refresh_nodes_container, zkfc_container,
};
use crate::config::zookeeper_tls;
use crate::crd::{HdfsRole, PodUser};
use crate::validate::{ValidatedCluster, ValidatedRole, ValidatedRoleGroup};

/// Size limit of the log and pid scratch volumes; logs go to the console.
pub const SCRATCH_SIZE_LIMIT: &str = "64Mi";

/// The `hadoop` user of the upstream image for a product version: uid 1000 in group
/// 100 up to 3.4; from 3.5 the image is based on Ubuntu 24.04, whose `ubuntu` user
/// holds 1000, and `hadoop` is 1001 in group 1001. The image names its user without a
/// numeric `USER`, so `runAsNonRoot` needs the numbers.
/// A new cluster's pods run as it; an existing cluster keeps the user it was created
/// with ([`crate::validate::ValidatedCluster::keep_pod_user`]).
pub fn hadoop_user(product_version: &str) -> PodUser {
    let mut parts = product_version
        .split(['.', '-'])
        .map(|part| part.parse::<u32>().ok());
    match (parts.next().flatten(), parts.next().flatten()) {
        (Some(major), Some(minor)) if (major, minor) >= (3, 5) => PodUser {
            uid: 1001,
            gid: 1001,
        },
        _ => PodUser {
            uid: 1000,
            gid: 100,
        },
    }
}

/// `/tmp` holds a heap dump after an OutOfMemoryError: room for the whole heap on top
/// of the scratch space, so the dump does not get the pod evicted.
pub fn tmp_size_limit(group: &ValidatedRoleGroup) -> String {
    format!("{}Mi", group.resources.heap_mib + 64)
}

/// `<hdfs>-<role>-<rg>`.
///
/// Journalnodes and namenodes start in parallel: a namenode waits for the journalnode
/// quorum, and a second namenode bootstraps from the first, so ordered starts would
/// only slow a new cluster down. Pods are restarted by the operator (`OnDelete`), in
/// the order HDFS needs: journalnodes, then namenodes, then datanodes.
pub fn stateful_set(
    cluster: &ValidatedCluster,
    role: &ValidatedRole,
    group: &ValidatedRoleGroup,
    config_hash: &str,
) -> StatefulSet {
    let name = group.name.object_name();
    let PodUser { uid, gid } = cluster.pod_user;
    let mut volumes = vec![
        config_map_volume(CONFIG_VOLUME, name),
        scratch_volume(TMP_VOLUME, &tmp_size_limit(group)),
        scratch_volume(LOG_VOLUME, SCRATCH_SIZE_LIMIT),
        scratch_volume(RUN_VOLUME, SCRATCH_SIZE_LIMIT),
    ];
    let mut containers = vec![daemon(cluster, role.role, group)];
    let mut init_containers = None;
    if role.role == HdfsRole::NameNode {
        volumes.push(config_map_volume(
            STATE_VOLUME,
            &namenode_state_name(cluster),
        ));
        if cluster.zookeeper.tls {
            volumes.extend(zookeeper_tls_volumes(cluster));
        }
        containers.push(zkfc_container(cluster));
        containers.push(refresh_nodes_container(cluster));
        init_containers = Some(vec![format_container(cluster, group)]);
    }
    group.stateful_set(
        &cluster.identity,
        Workload {
            parallel: true,
            pod_updates: PodUpdates::ByOperator,
            config_hash,
            pod: PodSpec {
                init_containers,
                containers,
                volumes: Some(volumes),
                security_context: Some(pod_security_context_as(uid, gid)),
                affinity: Some(preferred_spread(role.labels.selector())),
                ..PodSpec::default()
            },
            claims: vec![pvc_template(
                DATA_VOLUME,
                group.labels.selector(),
                &group.product.data,
            )],
        },
    )
}

/// The volume of the ZooKeeper CA, from the ZNode discovery ConfigMap.
pub const ZOOKEEPER_CA_VOLUME: &str = "zookeeper-ca";
/// The volume of the ZKFCs' keystore.
pub const ZOOKEEPER_CLIENT_VOLUME: &str = "zookeeper-client";

/// `<hdfs>-zookeeper-client`: the Secret with the ZKFCs' keystore.
pub fn zookeeper_client_secret_name(cluster: &ValidatedCluster) -> String {
    format!("{}-zookeeper-client", cluster.identity.name.as_str())
}

/// The keystore's Secret, without its store: that is made once, when it is created.
pub fn zookeeper_client_secret(cluster: &ValidatedCluster) -> Secret {
    Secret {
        metadata: object_meta(
            &zookeeper_client_secret_name(cluster),
            &cluster.identity.namespace,
            cluster.identity.labels.labels(),
        ),
        type_: Some("Opaque".to_owned()),
        ..Secret::default()
    }
}

/// The namenodes' volumes for TLS to ZooKeeper: the discovery ConfigMap's CA as a PEM
/// truststore, and the keystore: the ZNode's client certificate when it gives one,
/// else the operator's own, which Hadoop insists on.
fn zookeeper_tls_volumes(cluster: &ValidatedCluster) -> [Volume; 2] {
    let mut ca = config_map_volume(ZOOKEEPER_CA_VOLUME, &cluster.zookeeper.config_map);
    if let Some(source) = &mut ca.config_map {
        source.items = Some(vec![KeyToPath {
            key: zookeeper_tls::CA_KEY.to_owned(),
            path: zookeeper_tls::TRUSTSTORE_FILE.to_owned(),
            ..KeyToPath::default()
        }]);
    }
    let mut client = secret_volume(
        ZOOKEEPER_CLIENT_VOLUME,
        cluster
            .zookeeper
            .client_secret
            .as_deref()
            .unwrap_or(&zookeeper_client_secret_name(cluster)),
    );
    // The ZNode's Secret also holds the PEM key: only the store goes into the pod.
    if let (Some(_), Some(source)) = (&cluster.zookeeper.client_secret, &mut client.secret) {
        source.items = Some(vec![KeyToPath {
            key: zookeeper_tls::KEYSTORE_FILE.to_owned(),
            path: zookeeper_tls::KEYSTORE_FILE.to_owned(),
            ..KeyToPath::default()
        }]);
    }
    [ca, client]
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case::hadoop_3_3("3.3.6", (1000, 100))]
    #[case::hadoop_3_4("3.4.2", (1000, 100))]
    #[case::hadoop_3_5("3.5.0", (1001, 1001))]
    #[case::hadoop_3_5_suffixed("3.5.0-patched", (1001, 1001))]
    #[case::hadoop_4("4.0.0", (1001, 1001))]
    #[case::unparsable_keeps_the_3_4_user("latest", (1000, 100))]
    fn the_user_follows_the_product_version(#[case] version: &str, #[case] user: (i64, i64)) {
        let PodUser { uid, gid } = hadoop_user(version);
        assert_eq!((uid, gid), user);
    }
}

//! The StatefulSet of a role group.

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{
    ConfigMapVolumeSource, KeyToPath, PodSpec, SecretVolumeSource, Volume,
};
use strata_model::build::{
    PodUpdates, config_map_volume, pod_security_context, preferred_spread, scratch_volume,
};
use strata_model::role_group::Workload;
use strata_operator::reference::KeySource;

use super::config_map::packages_name;
use super::container::{
    CONFIG_VOLUME, HOME_VOLUME, PACKAGES_VOLUME, TMP_VOLUME, init_database, mounted_cas, web_server,
};
use super::metrics::statsd_exporter;
use crate::validate::{CA_KEY, CaSource, ValidatedCluster, ValidatedRoleGroup, discovery_volumes};

/// uid and gid of the image's `superset` user, which it creates without a number.
pub const SUPERSET_UID: i64 = 1000;

/// The `/tmp` volume's size limit. Werkzeug spools every request body over 500 KB to
/// `/tmp` (CSV, Excel and ZIP imports), and a volume over its limit gets the whole pod
/// evicted with its requests in flight, so it holds a large import, not just scratch.
pub const TMP_SIZE_LIMIT: &str = "2Gi";

/// `<superset>-node-<rg>`. Pods start one at a time (`OrderedReady`) and roll one at a
/// time by the StatefulSet controller, so two init containers never migrate the
/// database at once during a rollout. Web servers are stateless: no volume claims.
pub fn stateful_set(
    cluster: &ValidatedCluster,
    group: &ValidatedRoleGroup,
    config_hash: &str,
) -> StatefulSet {
    group.stateful_set(
        &cluster.identity,
        Workload {
            parallel: false,
            pod_updates: PodUpdates::Rolling,
            config_hash,
            pod: PodSpec {
                init_containers: Some(vec![init_database(cluster, group)]),
                containers: vec![web_server(cluster, group), statsd_exporter(cluster)],
                volumes: Some(volumes(cluster, group.name.object_name())),
                security_context: Some(pod_security_context(SUPERSET_UID)),
                affinity: Some(preferred_spread(cluster.nodes.labels.selector())),
                ..PodSpec::default()
            },
            claims: Vec::new(),
        },
    )
}

/// The volumes of every Superset pod: the role group's ConfigMap `config_map`,
/// scratch space, and what the cluster's settings add (the operator's packages, the
/// database's CA, the Trino clusters' discovery, which the workers read too: they run
/// SQL Lab's async queries).
pub fn volumes(cluster: &ValidatedCluster, config_map: &str) -> Vec<Volume> {
    let mut volumes = vec![
        config_map_volume(CONFIG_VOLUME, config_map),
        scratch_volume(HOME_VOLUME, "256Mi"),
        scratch_volume(TMP_VOLUME, TMP_SIZE_LIMIT),
    ];
    if !cluster.wheels.is_empty() {
        volumes.push(config_map_volume(PACKAGES_VOLUME, &packages_name(cluster)));
    }
    for ca in mounted_cas(cluster) {
        volumes.push(ca_volume(ca.volume, ca.source));
    }
    for (config_map, volume) in discovery_volumes(&cluster.trino_connections) {
        volumes.push(config_map_volume(&volume, config_map));
    }
    volumes
}

/// A CA of [`mounted_cas`] as the volume `name`: only `ca.crt`, so a Secret that also
/// holds a key (a cert-manager Secret named by mistake) never puts that key in the pod.
fn ca_volume(name: &str, ca: &CaSource) -> Volume {
    let items = Some(vec![KeyToPath {
        key: CA_KEY.to_owned(),
        path: CA_KEY.to_owned(),
        ..KeyToPath::default()
    }]);
    let mut volume = Volume {
        name: name.to_owned(),
        ..Volume::default()
    };
    match ca.object {
        KeySource::Secret => {
            volume.secret = Some(SecretVolumeSource {
                secret_name: Some(ca.name.clone()),
                items,
                ..SecretVolumeSource::default()
            });
        }
        KeySource::ConfigMap => {
            volume.config_map = Some(ConfigMapVolumeSource {
                name: ca.name.clone(),
                items,
                ..ConfigMapVolumeSource::default()
            });
        }
    }
    volume
}

//! Discovery ConfigMaps: how client applications find an ensemble (named after the
//! cluster) or their own znode in it (named after the ZNode).
//!
//! Both carry the same keys, so a client such as the HDFS operator reads either without
//! knowing which one it got:
//!
//! | key | cluster ConfigMap | ZNode ConfigMap |
//! | --- | --- | --- |
//! | `ZOOKEEPER` | `<hosts>` | `<hosts><chroot>` |
//! | `ZOOKEEPER_HOSTS` | `<hosts>` | `<hosts>` |
//! | `ZOOKEEPER_CHROOT` | `/` | `<chroot>` |
//! | `ZOOKEEPER_CLIENT_PORT` | `2282` or `2181` | the same |
//! | `ZOOKEEPER_TLS` | `"true"` with TLS on | the same |
//! | `ZOOKEEPER_CLIENT_AUTHENTICATION` | `Required` or `None`, with TLS on | the same |
//! | `ca.crt` | the CA to trust, with TLS on | the same |
//!
//! `ZOOKEEPER_CLIENT_AUTHENTICATION` is `clusterConfig.tls.clientAuthentication`: a
//! client presents the ZNode's certificate (`ZOOKEEPER_CLIENT_SECRET`) only where the
//! ensemble checks it, and does not restart for each renewal of a certificate nobody
//! checks (security review, finding 7).
//!
//! With `clusterConfig.service`, the cluster ConfigMap also has `ZOOKEEPER_NODE_PORT`
//! (`NodePort`, once allocated) or `ZOOKEEPER_EXTERNAL_HOST` and
//! `ZOOKEEPER_EXTERNAL_PORT` (`LoadBalancer`, once it has an address); each ZNode's
//! ConfigMap copies them from it ([`external_keys`]), since a client outside the
//! cluster reaches its chroot through the same address.
//!
//! `<hosts>` is the client Service's FQDN with port, `<cluster>.<ns>.svc.<domain>:2282`
//! with TLS on (the default), `:2181` with it off. `ca.crt` has the name a Secret or
//! ConfigMap mount expects, so a pod can mount the ConfigMap's key as its truststore.
//! `render` shows no `ca.crt`: the CA exists only in the cluster.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use strata_model::labels::{COMPONENT_LABEL, INSTANCE_LABEL, MANAGED_BY_LABEL, NAME_LABEL};
use strata_operator::error::ReconcileError;

use crate::build::container::client_ports;
use crate::config::tls::SECURE_CLIENT_PORT;
use crate::config::zoo_cfg::CLIENT_PORT;
use crate::crd::{APP_NAME, OPERATOR_NAME, ZookeeperZnode};
use crate::validate::ValidatedCluster;
use strata_model::build::object_meta as metadata;

/// Connection string, chroot included.
pub const ZOOKEEPER_KEY: &str = "ZOOKEEPER";
/// `host:port` list without chroot.
pub const ZOOKEEPER_HOSTS_KEY: &str = "ZOOKEEPER_HOSTS";
/// The chroot path, `/` for the whole ensemble.
pub const ZOOKEEPER_CHROOT_KEY: &str = "ZOOKEEPER_CHROOT";
/// The client port alone.
pub const ZOOKEEPER_CLIENT_PORT_KEY: &str = "ZOOKEEPER_CLIENT_PORT";
/// `"true"` when clients must connect over TLS (absent otherwise).
pub const ZOOKEEPER_TLS_KEY: &str = "ZOOKEEPER_TLS";
/// `Required` when clients must present a certificate the cluster's CA signed, `None`
/// when the ensemble asks for none; with TLS on.
pub const ZOOKEEPER_CLIENT_AUTHENTICATION_KEY: &str = "ZOOKEEPER_CLIENT_AUTHENTICATION";
/// The CA certificate (PEM) clients trust, with TLS on.
pub const CA_CERTIFICATE_KEY: &str = "ca.crt";

/// What the discovery of an ensemble that serves TLS says besides its address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DiscoveryTls<'a> {
    /// The CA to trust: `None` in `render`, which has no cluster to read it from.
    pub ca_pem: Option<&'a str>,
    /// Whether the servers require client certificates.
    pub client_auth_required: bool,
}
/// The keys of the address a client outside the cluster uses, as
/// [`strata_model::exposure::ExternalAddress::discovery_keys`] names them.
pub const EXTERNAL_KEYS: [&str; 3] = [
    "ZOOKEEPER_EXTERNAL_HOST",
    "ZOOKEEPER_EXTERNAL_PORT",
    "ZOOKEEPER_NODE_PORT",
];

/// The external address in the cluster's discovery `data`, for a ZNode's ConfigMap:
/// only what the cluster publishes now, so an address the cluster lost leaves the
/// ZNode's ConfigMap too.
pub fn external_keys(cluster_discovery: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    cluster_discovery
        .iter()
        .filter(|(key, _)| EXTERNAL_KEYS.contains(&key.as_str()))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect()
}

/// `app.kubernetes.io/component` of ZNode discovery ConfigMaps.
pub const ZNODE_COMPONENT: &str = "znode";

/// `<cluster>`: the discovery ConfigMap of the whole ensemble.
pub fn cluster_discovery_config_map(cluster: &ValidatedCluster) -> ConfigMap {
    let port = match cluster.tls {
        Some(_) => SECURE_CLIENT_PORT,
        None => CLIENT_PORT,
    };
    let hosts = cluster.connection_hosts_at(port);
    let mut data = discovery_data(hosts.clone(), hosts, "/", port);
    if let Some(tls) = &cluster.tls {
        add_tls(
            &mut data,
            DiscoveryTls {
                ca_pem: tls.ca_pem.as_deref(),
                client_auth_required: tls.settings.client_auth_required,
            },
        );
    }
    let port_name = client_ports(cluster)
        .first()
        .map(|client| client.name)
        .unwrap_or_default();
    data.extend(
        cluster
            .external_address
            .discovery_keys(ZOOKEEPER_KEY, port_name, port),
    );
    ConfigMap {
        metadata: metadata(
            cluster.identity.name.as_str(),
            &cluster.identity.namespace,
            cluster.identity.labels.labels(),
        ),
        data: Some(data),
        ..ConfigMap::default()
    }
}

/// The discovery ConfigMap of a ZNode: named after it, in its namespace, pointing at
/// `hosts` (see [`crate::validate::connection_hosts`]) with `chroot` appended; with
/// `tls`, the TLS flag, whether clients need a certificate, and the CA to trust.
///
/// Its labels are the recommended ones without `app.kubernetes.io/version`: the ZNode
/// does not know the product version of its cluster, which may live in another
/// namespace. `app.kubernetes.io/instance` is the ZNode's name.
pub fn znode_discovery_config_map(
    znode: &ZookeeperZnode,
    hosts: &str,
    chroot: &str,
    client_port: u16,
    tls: Option<DiscoveryTls<'_>>,
) -> Result<ConfigMap, ReconcileError> {
    let name = znode.name_any();
    let namespace = znode.namespace().ok_or_else(|| {
        ReconcileError::invalid_spec(
            "MissingNamespace",
            format!("ZookeeperZnode {name} has no namespace"),
        )
    })?;
    if !chroot.starts_with('/') || chroot.len() < 2 || chroot.ends_with('/') {
        return Err(ReconcileError::invalid_spec(
            "InvalidZnodePath",
            format!(
                "znode path {chroot:?} of ZookeeperZnode {name} must start with '/', not end with '/' and not be the root"
            ),
        ));
    }
    let labels = BTreeMap::from(
        [
            (NAME_LABEL, APP_NAME),
            (INSTANCE_LABEL, name.as_str()),
            (COMPONENT_LABEL, ZNODE_COMPONENT),
            (MANAGED_BY_LABEL, OPERATOR_NAME),
        ]
        .map(|(key, value)| (key.to_owned(), value.to_owned())),
    );
    let mut data = discovery_data(
        format!("{hosts}{chroot}"),
        hosts.to_owned(),
        chroot,
        client_port,
    );
    if let Some(tls) = tls {
        add_tls(&mut data, tls);
    }
    Ok(ConfigMap {
        metadata: metadata(&name, &namespace, labels),
        data: Some(data),
        ..ConfigMap::default()
    })
}

/// The znode path of a ZNode: the path recorded in the status wins (it is what
/// exists in ZooKeeper); otherwise `/znode-<uid>`, unique even when a ZNode is
/// deleted and created again with the same name. `None` for a ZNode that was
/// never stored (as in `render`): its path depends on the uid the API server
/// has not assigned yet, and any other name would be a path that never exists.
pub fn znode_path(znode: &ZookeeperZnode) -> Option<String> {
    znode
        .status
        .as_ref()
        .and_then(|status| status.znode_path.clone())
        .or_else(|| {
            znode
                .metadata
                .uid
                .as_ref()
                .map(|uid| format!("/znode-{uid}"))
        })
}

fn add_tls(data: &mut BTreeMap<String, String>, tls: DiscoveryTls<'_>) {
    data.insert(ZOOKEEPER_TLS_KEY.to_owned(), "true".to_owned());
    let client_authentication = if tls.client_auth_required {
        "Required"
    } else {
        "None"
    };
    data.insert(
        ZOOKEEPER_CLIENT_AUTHENTICATION_KEY.to_owned(),
        client_authentication.to_owned(),
    );
    if let Some(ca_pem) = tls.ca_pem {
        data.insert(CA_CERTIFICATE_KEY.to_owned(), ca_pem.to_owned());
    }
}

fn discovery_data(
    connection: String,
    hosts: String,
    chroot: &str,
    client_port: u16,
) -> BTreeMap<String, String> {
    BTreeMap::from([
        (ZOOKEEPER_KEY.to_owned(), connection),
        (ZOOKEEPER_HOSTS_KEY.to_owned(), hosts),
        (ZOOKEEPER_CHROOT_KEY.to_owned(), chroot.to_owned()),
        (
            ZOOKEEPER_CLIENT_PORT_KEY.to_owned(),
            client_port.to_string(),
        ),
    ])
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use rstest::rstest;
    use serde_json::json;

    use super::*;
    use crate::crd::ZnodeStatus;

    fn znode(
        uid: Option<&str>,
        recorded: Option<&str>,
    ) -> Result<ZookeeperZnode, serde_json::Error> {
        let mut znode: ZookeeperZnode = serde_json::from_value(json!({
            "apiVersion": "zookeeper.strata.dev/v1alpha1",
            "kind": "ZookeeperZnode",
            "metadata": {"name": "hdfs-znode", "namespace": "apps"},
            "spec": {"clusterRef": {"name": "simple-zk", "namespace": "zk"}}
        }))?;
        znode.metadata.uid = uid.map(str::to_owned);
        znode.status = recorded.map(|path| ZnodeStatus {
            znode_path: Some(path.to_owned()),
            ..ZnodeStatus::default()
        });
        Ok(znode)
    }

    #[rstest]
    #[case::a_load_balancer(
        &[("ZOOKEEPER", "zk:2282"), ("ZOOKEEPER_EXTERNAL_HOST", "zk.example.com"), ("ZOOKEEPER_EXTERNAL_PORT", "2282")],
        &[("ZOOKEEPER_EXTERNAL_HOST", "zk.example.com"), ("ZOOKEEPER_EXTERNAL_PORT", "2282")]
    )]
    #[case::a_node_port(
        &[("ZOOKEEPER_TLS", "true"), ("ZOOKEEPER_NODE_PORT", "30181")],
        &[("ZOOKEEPER_NODE_PORT", "30181")]
    )]
    #[case::no_address_yet(&[("ZOOKEEPER", "zk:2282"), ("ca.crt", "pem")], &[])]
    fn a_znode_publishes_the_clusters_external_address_alone(
        #[case] cluster: &[(&str, &str)],
        #[case] expected: &[(&str, &str)],
    ) {
        let owned = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
                .collect()
        };
        assert_eq!(external_keys(&owned(cluster)), owned(expected));
    }

    #[rstest]
    #[case::recorded_path_wins(Some("u-1"), Some("/custom"), Some("/custom"))]
    #[case::uid_when_nothing_recorded(Some("u-1"), None, Some("/znode-u-1"))]
    #[case::recorded_path_without_uid(None, Some("/custom"), Some("/custom"))]
    #[case::no_path_before_the_api_server_assigns_a_uid(None, None, None)]
    fn path(
        #[case] uid: Option<&str>,
        #[case] recorded: Option<&str>,
        #[case] expected: Option<&str>,
    ) -> Result<(), serde_json::Error> {
        assert_eq!(znode_path(&znode(uid, recorded)?).as_deref(), expected);
        Ok(())
    }

    #[test]
    fn znode_config_map_has_all_keys() -> Result<(), Box<dyn std::error::Error>> {
        let hosts = "simple-zk.zk.svc.cluster.local:2181";
        let config_map =
            znode_discovery_config_map(&znode(None, None)?, hosts, "/znode-x", 2181, None)?;
        assert_eq!(config_map.metadata.name.as_deref(), Some("hdfs-znode"));
        assert_eq!(config_map.metadata.namespace.as_deref(), Some("apps"));
        assert_eq!(
            serde_json::to_value(&config_map.data)?,
            json!({
                "ZOOKEEPER": "simple-zk.zk.svc.cluster.local:2181/znode-x",
                "ZOOKEEPER_CHROOT": "/znode-x",
                "ZOOKEEPER_CLIENT_PORT": "2181",
                "ZOOKEEPER_HOSTS": "simple-zk.zk.svc.cluster.local:2181"
            })
        );
        let labels = config_map.metadata.labels.unwrap_or_default();
        assert_eq!(
            labels.get(MANAGED_BY_LABEL).map(String::as_str),
            Some(OPERATOR_NAME)
        );
        Ok(())
    }

    #[rstest]
    #[case::from_the_cluster(Some("-----BEGIN CERTIFICATE-----"), false, json!({
        "ZOOKEEPER_TLS": "true",
        "ZOOKEEPER_CLIENT_AUTHENTICATION": "None",
        "ca.crt": "-----BEGIN CERTIFICATE-----"
    }))]
    #[case::client_certificates_required(Some("-----BEGIN CERTIFICATE-----"), true, json!({
        "ZOOKEEPER_TLS": "true",
        "ZOOKEEPER_CLIENT_AUTHENTICATION": "Required",
        "ca.crt": "-----BEGIN CERTIFICATE-----"
    }))]
    #[case::rendered_without_a_cluster(None, false, json!({
        "ZOOKEEPER_TLS": "true",
        "ZOOKEEPER_CLIENT_AUTHENTICATION": "None"
    }))]
    fn a_tls_znode_config_map_says_so_names_the_ca_and_whether_clients_need_a_certificate(
        #[case] ca_pem: Option<&str>,
        #[case] client_auth_required: bool,
        #[case] tls_keys: serde_json::Value,
    ) -> Result<(), Box<dyn std::error::Error>> {
        let hosts = "simple-zk.zk.svc.cluster.local:2282";
        let tls = DiscoveryTls {
            ca_pem,
            client_auth_required,
        };
        let config_map =
            znode_discovery_config_map(&znode(None, None)?, hosts, "/znode-x", 2282, Some(tls))?;
        let mut expected = json!({
            "ZOOKEEPER": "simple-zk.zk.svc.cluster.local:2282/znode-x",
            "ZOOKEEPER_CHROOT": "/znode-x",
            "ZOOKEEPER_CLIENT_PORT": "2282",
            "ZOOKEEPER_HOSTS": "simple-zk.zk.svc.cluster.local:2282"
        });
        if let (Some(expected), Some(tls_keys)) = (expected.as_object_mut(), tls_keys.as_object()) {
            expected.extend(tls_keys.clone());
        }
        assert_eq!(serde_json::to_value(&config_map.data)?, expected);
        Ok(())
    }

    #[rstest]
    #[case::relative("znode-x")]
    #[case::root("/")]
    #[case::trailing_slash("/a/")]
    fn invalid_chroot_is_rejected(#[case] chroot: &str) -> Result<(), serde_json::Error> {
        let error = znode_discovery_config_map(&znode(None, None)?, "h:2181", chroot, 2181, None)
            .err()
            .map(|error| error.reason().to_owned());
        assert_eq!(error.as_deref(), Some("InvalidZnodePath"));
        Ok(())
    }
}

//! Who the quorum trusts, on real ZooKeeper 3.9.5 through the pod runner (security
//! review, finding 1). A quorum peer is trusted with everything: the leader sends a
//! learner a snapshot of every znode whatever its ACL, and runs the requests it forwards
//! under whatever identities it claims. ZooKeeper checks nothing of a peer's
//! certificate but its chain, so a ZNode's client certificate must not chain to what
//! the quorum trusts.
//!
//! Three servers with the operator's certificates (made by the certificate step, as
//! the controller makes them) and `clientAuthentication: Required`; a ZNode's client
//! certificate issued as the ZNode controller issues it. From another pod:
//! - the ZNode's certificate is served on the secure client port of every server;
//! - a learner that speaks the quorum protocol (`OBSERVERINFO`, then `ACKEPOCH`) to the
//!   leader's quorum port with a server's own certificate is taken: the leader answers
//!   `LEADERINFO` and starts the sync, which shows the probe speaks the protocol;
//! - the same learner with the ZNode's certificate is refused in the TLS handshake, and
//!   nothing of the quorum protocol arrives.

#![allow(clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use strata_certificates::authority::CertificateAuthority;
use strata_pod_runner::manifest::apply_all;
use zookeeper_operator::build::znode_client::{ClientSigning, client_secret};
use zookeeper_operator::validate::DEFAULT_CERTIFICATE_LIFETIME;

use crate::support::issued_secrets;
use crate::support::pods::{NAMESPACE, pod_address, pod_runner};
use crate::tls::{client_config, in_pod, mode, srvr_over_tls};

const SECURE_PORT: u16 = 2282;
const QUORUM_PORT: u16 = 2888;
const TIMEOUT: Duration = Duration::from_secs(10);

/// ZooKeeper's quorum packet types (`org.apache.zookeeper.server.quorum.Leader`).
const DIFF: i32 = 13;
const TRUNC: i32 = 14;
const SNAP: i32 = 15;
const OBSERVERINFO: i32 = 16;
const LEADERINFO: i32 = 17;
const ACKEPOCH: i32 = 18;

/// The learner's server id: in no server's configuration, which the leader only logs.
const LEARNER_ID: i64 = 99;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root and the ZooKeeper image directory (STRATA_ZOOKEEPER_IMAGE); run by cargo xtask test"]
async fn a_znodes_certificate_is_served_as_a_client_and_refused_at_the_quorum_port() {
    let name = "quorum-zk";
    let cluster = json!({
        "apiVersion": "zookeeper.strata.dev/v1alpha1",
        "kind": "ZookeeperCluster",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "clusterConfig": {"tls": {"clientAuthentication": "Required"}},
            "servers": {"roleGroups": {"default": {"replicas": 3}}},
        },
    });
    let (secrets, ca_pem) = issued_secrets(&cluster);
    let values = |secret_name: &str| -> BTreeMap<String, String> {
        let secret = secrets
            .iter()
            .find(|secret| secret.metadata.name.as_deref() == Some(secret_name))
            .unwrap_or_else(|| panic!("the certificate step writes Secret {secret_name}"));
        secret
            .data
            .clone()
            .unwrap_or_default()
            .into_iter()
            .map(|(key, value)| (key, String::from_utf8_lossy(&value.0).into_owned()))
            .collect()
    };
    let server = values(&format!("{name}-server-default-tls"));
    let znode = znode_certificate(&values(&format!("{name}-client-ca")), &ca_pem);

    let mut runner = pod_runner().unwrap_or_else(|error| panic!("{error}"));
    for secret in secrets.clone() {
        runner
            .apply_secret(secret)
            .unwrap_or_else(|error| panic!("{error}"));
    }
    let objects: Vec<Value> = zookeeper_operator::render::render(std::slice::from_ref(&cluster))
        .unwrap_or_else(|error| panic!("{error}"))
        .objects
        .into_iter()
        .filter(|object| object["kind"] != "Secret")
        .collect();
    apply_all(&mut runner, &objects).unwrap_or_else(|error| panic!("{error}"));
    let pods: Vec<String> = (0..3)
        .map(|ordinal| format!("{name}-server-default-{ordinal}"))
        .collect();
    let names: Vec<&str> = pods.iter().map(String::as_str).collect();
    runner
        .wait_ready(NAMESPACE, &names, Duration::from_secs(180))
        .await
        .unwrap_or_else(|report| panic!("{report}"));
    let fqdn = |pod: &str| format!("{pod}.{name}-server-default.{NAMESPACE}.svc.cluster.local");

    // As a client, the ZNode's certificate is served by every server; one of them leads.
    let mut leader = None;
    for (ordinal, pod) in pods.iter().enumerate() {
        let config = client_config(&ca_pem, Some((&znode.0, &znode.1)));
        let secure = pod_address(&runner, pod, SECURE_PORT).expect("the pod's address");
        let server_name = fqdn(pod);
        let answer = in_pod(&runner, &pods[(ordinal + 1) % 3], move || {
            srvr_over_tls(config, &server_name, secure)
        })
        .unwrap_or_else(|error| panic!("srvr with the ZNode's certificate to {pod}: {error}"));
        if mode(&answer) == Some("leader") {
            leader = Some(pod.clone());
        }
    }
    let leader = leader.expect("one server leads");
    let learner_pod = pods
        .iter()
        .find(|pod| **pod != leader)
        .expect("a follower's pod")
        .clone();
    let quorum = pod_address(&runner, &leader, QUORUM_PORT).expect("the leader's address");

    let join = |certificate: &str, key: &str| {
        let config = client_config(&ca_pem, Some((certificate, key)));
        let server_name = fqdn(&leader);
        in_pod(&runner, &learner_pod, move || {
            join_as_observer(config, &server_name, quorum)
        })
    };
    let as_a_server = join(&server["tls.crt"], &server["tls.key"]);
    let as_a_znode = join(&znode.0, &znode.1);
    eprintln!(
        "at {leader}'s quorum port: a server's certificate got {as_a_server:?}; \
         a ZNode's certificate got {as_a_znode:?}"
    );
    let synced = as_a_server.unwrap_or_else(|error| {
        panic!("the probe joins as an observer with a server's own certificate: {error}")
    });
    assert_eq!(synced[0], LEADERINFO, "{synced:?}");
    assert!(
        [SNAP, DIFF, TRUNC].contains(&synced[1]),
        "the leader starts the sync after ACKEPOCH: {synced:?}"
    );
    match as_a_znode {
        Ok(packets) => panic!(
            "a ZNode's client certificate joined the quorum as an observer: the leader sent \
             packets {packets:?} (17 LEADERINFO, then 15 SNAP, 13 DIFF or 14 TRUNC: the data)"
        ),
        Err(refusal) => assert!(
            refusal.contains("alert") || refusal.contains("closed"),
            "refused in the handshake, not otherwise: {refusal}"
        ),
    }
    runner.stop_all().await;
}

/// A ZNode's client certificate and key, issued as the ZNode controller issues it: by
/// the cluster's client CA (`ca.crt` and `ca.key` of its Secret), trusting `ca_pem`.
fn znode_certificate(client_ca: &BTreeMap<String, String>, ca_pem: &str) -> (String, String) {
    let authority = CertificateAuthority::from_pem(&client_ca["ca.crt"], &client_ca["ca.key"])
        .unwrap_or_else(|error| panic!("the client CA: {error}"));
    let secret = client_secret(
        "tenant",
        NAMESPACE,
        BTreeMap::new(),
        ClientSigning {
            ca: &authority,
            trusted_pem: ca_pem,
            lifetime: DEFAULT_CERTIFICATE_LIFETIME,
        },
        None,
        SystemTime::now(),
    )
    .unwrap_or_else(|error| panic!("{error}"));
    let data = secret.sealed.data.unwrap_or_default();
    let text = |key: &str| String::from_utf8_lossy(&data[key].0).into_owned();
    (text("tls.crt"), text("tls.key"))
}

/// Speaks to a leader's quorum port as a new observer does: `OBSERVERINFO` with its
/// id and protocol version, then, once the leader answers `LEADERINFO`, `ACKEPOCH`.
/// Returns the types of the two packets the leader sent (the second starts the sync,
/// whose data follows and is left unread), or why the conversation ended.
fn join_as_observer(
    config: Arc<rustls::ClientConfig>,
    name: &str,
    address: SocketAddr,
) -> Result<Vec<i32>, String> {
    let (mut connection, mut socket) =
        strata_testing::tls::connect(config, name, address, TIMEOUT)?;
    let mut stream = rustls::Stream::new(&mut connection, &mut socket);
    let mut learner_info = Vec::new();
    learner_info.extend(LEARNER_ID.to_be_bytes());
    learner_info.extend(0x10000_i32.to_be_bytes());
    learner_info.extend(0_i64.to_be_bytes());
    write_packet(&mut stream, OBSERVERINFO, &learner_info)?;
    let first = read_packet_type(&mut stream)?;
    if first != LEADERINFO {
        return Ok(vec![first]);
    }
    write_packet(&mut stream, ACKEPOCH, &0_i32.to_be_bytes())?;
    let second = read_packet_type(&mut stream)?;
    Ok(vec![first, second])
}

/// A `QuorumPacket` as jute's binary archive writes it: type, zxid 0, the data with its
/// length, and no auth info (-1).
fn write_packet(stream: &mut impl Write, kind: i32, data: &[u8]) -> Result<(), String> {
    let mut packet = Vec::new();
    packet.extend(kind.to_be_bytes());
    packet.extend(0_i64.to_be_bytes());
    packet.extend(i32::try_from(data.len()).unwrap_or(i32::MAX).to_be_bytes());
    packet.extend(data);
    packet.extend((-1_i32).to_be_bytes());
    stream
        .write_all(&packet)
        .and_then(|()| stream.flush())
        .map_err(|error| format!("writing packet {kind}: {error}"))
}

/// Reads one `QuorumPacket` whole and returns its type.
fn read_packet_type(stream: &mut impl Read) -> Result<i32, String> {
    let mut read_exact = |length: usize| -> Result<Vec<u8>, String> {
        let mut bytes = vec![0; length];
        stream.read_exact(&mut bytes).map_err(|error| {
            if error.kind() == std::io::ErrorKind::UnexpectedEof {
                "the leader closed the connection".to_owned()
            } else {
                format!("reading a packet: {error}")
            }
        })?;
        Ok(bytes)
    };
    let int = |bytes: Vec<u8>| i32::from_be_bytes(bytes.try_into().unwrap_or_default());
    let kind = int(read_exact(4)?);
    read_exact(8)?;
    let data_length = int(read_exact(4)?);
    if let Ok(length) = usize::try_from(data_length) {
        read_exact(length)?;
    }
    let identities = int(read_exact(4)?);
    for _ in 0..identities.max(0) {
        for _ in ["scheme", "id"] {
            let length = int(read_exact(4)?);
            read_exact(usize::try_from(length).unwrap_or_default())?;
        }
    }
    Ok(kind)
}

//! The pod network on the real kernel: namespaces, a bridge and veth pairs made with
//! iproute2. Needs root, as the pod runner does; `cargo xtask test` runs it.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::time::Duration;

use strata_pod_runner::network::PodNetwork;

#[test]
#[ignore = "needs root and iproute2; run by cargo xtask test"]
fn pods_reach_each_other_and_nothing_else_and_leave_nothing_behind() {
    let mut network = PodNetwork::create().unwrap_or_else(|error| panic!("{error}"));
    let server = network.add_pod("server").expect("the server's namespace");
    let client = network.add_pod("client").expect("the client's namespace");
    assert_ne!(server, client);
    let namespaces = ["server", "client"].map(|pod| network.netns_path(pod).unwrap());

    let listener = network
        .in_pod("server", move || TcpListener::bind((server, 8080)))
        .unwrap()
        .expect("a listener on the server's address");
    let serving = std::thread::spawn(move || {
        let (mut stream, peer) = listener.accept().expect("a connection");
        stream.write_all(b"hello").expect("the greeting");
        peer
    });
    let greeting = network
        .in_pod("client", move || {
            let mut stream = TcpStream::connect_timeout(
                &SocketAddr::from((server, 8080)),
                Duration::from_secs(5),
            )?;
            let mut text = String::new();
            stream.read_to_string(&mut text)?;
            Ok::<_, std::io::Error>(text)
        })
        .unwrap()
        .expect("the client reaches the server by its pod address");
    assert_eq!(greeting, "hello");
    let peer = serving.join().expect("the server thread");
    assert_eq!(
        peer.ip(),
        client,
        "the server sees the client's pod address"
    );

    // No default route: an address outside the pod network (TEST-NET-1) fails at once,
    // and nothing is sent.
    let outside = network
        .in_pod("client", || {
            TcpStream::connect_timeout(
                &SocketAddr::from((Ipv4Addr::new(192, 0, 2, 1), 80)),
                Duration::from_secs(5),
            )
        })
        .unwrap()
        .expect_err("nothing outside the pod network is reachable");
    assert_eq!(outside.kind(), ErrorKind::NetworkUnreachable, "{outside}");

    network.remove_pod("server").expect("the server leaves");
    assert!(!namespaces[0].exists(), "{}", namespaces[0].display());
    drop(network);
    assert!(!namespaces[1].exists(), "{}", namespaces[1].display());
    let left: Vec<String> = std::fs::read_dir(Path::new("/run/netns"))
        .map(|entries| {
            entries
                .flatten()
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .filter(|name| name.starts_with(&format!("strata-{}-", std::process::id())))
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(left, Vec::<String>::new(), "every namespace is deleted");
}

//! The znode client against a real single server: creation, recursive deletion, and bounded
//! failure once the server is gone.

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use zookeeper_operator::znode_client::{ZnodeClient, ZnodeError};

use crate::support::loopback::LoopbackGroup;
use crate::support::server::HarnessError;
use crate::support::start_standalone;

type TestResult = Result<(), Box<dyn std::error::Error>>;

const TIMEOUT: Duration = Duration::from_secs(5);

/// One rendered one-replica cluster, serving in standalone mode on 127.0.0.<last_octet>.
fn single_server(last_octet: u8) -> Result<LoopbackGroup, HarnessError> {
    start_standalone(
        &format!("znode-client-{last_octet}"),
        Ipv4Addr::new(127, 0, 0, last_octet),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Java and ZooKeeper (STRATA_JAVA, STRATA_ZOOKEEPER_CLASSPATH); run by cargo xtask test"]
async fn ensure_path_creates_parents_and_is_idempotent() -> TestResult {
    let server = single_server(10)?;
    let client = ZnodeClient::connect(&server.connection_string(), TIMEOUT).await?;

    assert!(!client.exists("/strata").await?);
    client.ensure_path("/strata/znodes/default/simple").await?;
    for path in [
        "/strata",
        "/strata/znodes",
        "/strata/znodes/default",
        "/strata/znodes/default/simple",
    ] {
        assert!(client.exists(path).await?, "{path} missing");
    }

    client.ensure_path("/strata/znodes/default/simple").await?;
    client.ensure_path("/strata/znodes").await?;
    client.ensure_path("/").await?;
    assert!(client.exists("/strata/znodes/default/simple").await?);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Java and ZooKeeper (STRATA_JAVA, STRATA_ZOOKEEPER_CLASSPATH); run by cargo xtask test"]
async fn delete_recursive_removes_a_tree_and_tolerates_missing_paths() -> TestResult {
    let server = single_server(11)?;
    let client = ZnodeClient::connect(&server.connection_string(), TIMEOUT).await?;
    for path in [
        "/tree/a/b/c",
        "/tree/a/d",
        "/tree/e",
        "/keep/me",
        "/tree-sibling",
    ] {
        client.ensure_path(path).await?;
    }

    client.delete_recursive("/tree").await?;
    for path in ["/tree", "/tree/a", "/tree/a/b/c", "/tree/e"] {
        assert!(!client.exists(path).await?, "{path} survived");
    }
    for path in ["/keep/me", "/tree-sibling"] {
        assert!(client.exists(path).await?, "{path} was deleted too");
    }

    client.delete_recursive("/tree").await?;
    client.delete_recursive("/never/created").await?;
    let root = client.delete_recursive("/").await;
    assert!(
        matches!(root, Err(ZnodeError::InvalidPath { .. })),
        "{root:?}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Java and ZooKeeper (STRATA_JAVA, STRATA_ZOOKEEPER_CLASSPATH); run by cargo xtask test"]
async fn stopped_server_fails_fast_with_transient_errors() -> TestResult {
    let timeout = Duration::from_secs(2);
    let slack = Duration::from_millis(500);
    let mut server = single_server(12)?;
    let address = server.connection_string();
    let client = ZnodeClient::connect(&address, timeout).await?;
    client.ensure_path("/before-stop").await?;

    // Dropping the guards kills the process by PID.
    server.stop();

    let started = Instant::now();
    let exists = client.exists("/before-stop").await;
    let took = started.elapsed();
    assert!(
        matches!(&exists, Err(error) if error.is_transient()),
        "{exists:?}"
    );
    assert!(took <= timeout + slack, "exists took {took:?}");

    let started = Instant::now();
    let ensure = client.ensure_path("/after-stop").await;
    let took = started.elapsed();
    assert!(
        matches!(&ensure, Err(error) if error.is_transient()),
        "{ensure:?}"
    );
    assert!(took <= timeout + slack, "ensure_path took {took:?}");

    let started = Instant::now();
    let connect = ZnodeClient::connect(&address, timeout).await;
    let took = started.elapsed();
    assert!(
        matches!(&connect, Err(error) if error.is_transient()),
        "{connect:?}"
    );
    assert!(took <= timeout + slack, "connect took {took:?}");
    Ok(())
}

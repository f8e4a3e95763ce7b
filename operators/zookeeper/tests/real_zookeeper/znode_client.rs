//! The znode client against a real single server: creation, recursive deletion, and bounded
//! failure once the server is gone.

use std::time::{Duration, Instant};

use zookeeper_operator::znode_client::{ZnodeClient, ZnodeError};

use crate::support::pods::Standalone;

type TestResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

const TIMEOUT: Duration = Duration::from_secs(5);

/// One rendered one-replica cluster, serving in standalone mode.
async fn single_server(name: &str) -> Result<Standalone, Box<dyn std::error::Error + Send + Sync>> {
    Standalone::start(&format!("znode-client-{name}")).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root and the ZooKeeper image directory (STRATA_ZOOKEEPER_IMAGE); run by cargo xtask test"]
async fn ensure_path_creates_parents_and_is_idempotent() -> TestResult {
    let server = single_server("ensure").await?;
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
    server.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root and the ZooKeeper image directory (STRATA_ZOOKEEPER_IMAGE); run by cargo xtask test"]
async fn delete_recursive_removes_a_tree_and_tolerates_missing_paths() -> TestResult {
    let server = single_server("delete").await?;
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
    server.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root and the ZooKeeper image directory (STRATA_ZOOKEEPER_IMAGE); run by cargo xtask test"]
async fn stopped_server_fails_fast_with_transient_errors() -> TestResult {
    let timeout = Duration::from_secs(2);
    let slack = Duration::from_millis(500);
    let mut server = single_server("stopped").await?;
    let address = server.connection_string();
    let client = ZnodeClient::connect(&address, timeout).await?;
    client.ensure_path("/before-stop").await?;

    // The pod goes, and its forward with it.
    server.stop().await?;

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
    server.shutdown().await;
    Ok(())
}

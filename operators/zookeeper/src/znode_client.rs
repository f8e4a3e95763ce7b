//! A small, bounded client for the znode operations the `ZookeeperZnode` controller needs.
//!
//! Every call, connecting included, finishes within the timeout given at connect time: a
//! reconcile must never hang on an unreachable or partitioned ensemble. Errors say whether
//! retrying later can help ([`ZnodeError::is_transient`]), so the controller can requeue
//! instead of reporting a user error.
//!
//! The client is meant to be short-lived (one per reconcile): after a session expiry it is
//! unusable, and connecting again is cheap compared to reconciling a znode.

use std::fmt;
use std::future::Future;
use std::time::Duration;

use futures::FutureExt;
use zookeeper_client::{Acls, Client, CreateMode, TlsOptions};

/// The znode operations, named in errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// Creating a path and its parents.
    EnsurePath,
    /// Deleting a path and everything below it.
    DeleteRecursive,
    /// Checking whether a path exists.
    Exists,
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::EnsurePath => "creating",
            Self::DeleteRecursive => "deleting",
            Self::Exists => "checking",
        })
    }
}

/// Why a znode operation failed.
#[derive(Debug, thiserror::Error)]
pub enum ZnodeError {
    /// The path is not an absolute, normalised znode path (or is the root for a delete).
    #[error("invalid znode path {path:?}: {reason}")]
    InvalidPath {
        /// The rejected path.
        path: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// No session was established in time.
    #[error("connecting to ZooKeeper at {connection_string:?} did not finish within {timeout:?}")]
    ConnectTimeout {
        /// Where we tried to connect.
        connection_string: String,
        /// The bound that expired.
        timeout: Duration,
    },
    /// The client refused or lost the connection attempt.
    #[error("connecting to ZooKeeper at {connection_string:?} failed")]
    Connect {
        /// Where we tried to connect.
        connection_string: String,
        /// The client's error.
        #[source]
        source: zookeeper_client::Error,
    },
    /// An operation did not finish in time.
    #[error("{operation} znode {path:?} did not finish within {timeout:?}")]
    OperationTimeout {
        /// What we were doing.
        operation: Operation,
        /// The path involved.
        path: String,
        /// The bound that expired.
        timeout: Duration,
    },
    /// ZooKeeper answered with an error.
    #[error("{operation} znode {path:?} failed")]
    Operation {
        /// What we were doing.
        operation: Operation,
        /// The path involved.
        path: String,
        /// The client's error.
        #[source]
        source: zookeeper_client::Error,
    },
}

impl ZnodeError {
    /// True when the same call may succeed later without any change by the user: timeouts,
    /// lost connections, expired sessions, throttling, a concurrent change to the tree.
    pub fn is_transient(&self) -> bool {
        match self {
            Self::InvalidPath { .. } => false,
            Self::ConnectTimeout { .. } | Self::OperationTimeout { .. } => true,
            Self::Connect { source, .. } | Self::Operation { source, .. } => {
                is_transient_source(source)
            }
        }
    }
}

impl ZnodeError {
    /// True when ZooKeeper refused the operation for lack of permission: an application
    /// set ACLs on its nodes that the operator's anonymous session does not pass.
    pub fn is_access_denied(&self) -> bool {
        matches!(
            self,
            Self::Operation { source, .. }
                if matches!(
                    source,
                    zookeeper_client::Error::NoAuth | zookeeper_client::Error::AuthFailed
                )
        )
    }
}

fn is_transient_source(error: &zookeeper_client::Error) -> bool {
    use zookeeper_client::Error as E;
    matches!(
        error,
        E::ConnectionLoss
            | E::SessionExpired
            | E::Timeout
            | E::NoHosts
            | E::ClientClosed
            | E::SessionMoved
            | E::Throttled
            | E::NotReadOnly
            // A node appeared below a path while we deleted it; the next attempt removes it.
            | E::NotEmpty
    )
}

/// What a client needs to connect over TLS: the CA it trusts and the certificate it
/// presents. `Debug` never shows the key.
#[derive(Clone)]
pub struct ClientTls {
    /// The CA certificates (PEM) the servers' certificates must lead to.
    pub ca_pem: String,
    /// The client's certificate (PEM).
    pub certificate_pem: String,
    /// Its key (PKCS#8 PEM).
    pub key_pem: String,
}

impl fmt::Debug for ClientTls {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.debug_struct("ClientTls").finish_non_exhaustive()
    }
}

impl ClientTls {
    fn options(&self) -> Result<TlsOptions, zookeeper_client::Error> {
        // kube's and this client's rustls share the process's provider: aws-lc-rs, the
        // only one the workspace enables.
        // The server's certificate must name the host connected to, as the Java client
        // checks it.
        TlsOptions::new()
            .with_pem_ca(&self.ca_pem)?
            .with_pem_identity(&self.certificate_pem, &self.key_pem)
    }
}

/// A connected ZooKeeper session with bounded operations.
#[derive(Debug)]
pub struct ZnodeClient {
    client: Client,
    timeout: Duration,
}

impl ZnodeClient {
    /// Connects to `connection_string` (`host:port[,host:port...][/chroot]`). Both the
    /// connection and every later call on the client are bounded by `timeout`.
    pub async fn connect(connection_string: &str, timeout: Duration) -> Result<Self, ZnodeError> {
        Self::connect_with(connection_string, timeout, None).await
    }

    /// Like [`connect`](Self::connect), over TLS: the servers must present a certificate
    /// `tls`'s CA signed, and this client presents `tls`'s certificate (mutual TLS).
    pub async fn connect_secure(
        connection_string: &str,
        timeout: Duration,
        tls: &ClientTls,
    ) -> Result<Self, ZnodeError> {
        Self::connect_with(connection_string, timeout, Some(tls)).await
    }

    async fn connect_with(
        connection_string: &str,
        timeout: Duration,
        tls: Option<&ClientTls>,
    ) -> Result<Self, ZnodeError> {
        let connect_error = |source| ZnodeError::Connect {
            connection_string: connection_string.to_owned(),
            source,
        };
        // The session timeout also sets how fast the client notices a dead connection (2/5
        // of it); tying it to the call timeout keeps that detection inside our bound. The
        // server clamps it to at least 2 ticks anyway.
        let connector =
            Client::connector().with_session_timeout(timeout.max(Duration::from_secs(2)));
        let connecting = match tls {
            None => connector.connect(connection_string).boxed(),
            Some(tls) => connector
                .with_tls(tls.options().map_err(connect_error)?)
                .secure_connect(connection_string)
                .boxed(),
        };
        match tokio::time::timeout(timeout, connecting).await {
            Ok(Ok(client)) => Ok(Self { client, timeout }),
            Ok(Err(source)) => Err(ZnodeError::Connect {
                connection_string: connection_string.to_owned(),
                source,
            }),
            Err(_) => Err(ZnodeError::ConnectTimeout {
                connection_string: connection_string.to_owned(),
                timeout,
            }),
        }
    }

    /// Creates `path` and any missing parents as persistent, world-accessible znodes.
    /// Succeeds when they already exist, so it can run on every reconcile.
    pub async fn ensure_path(&self, path: &str) -> Result<(), ZnodeError> {
        validate_path(path)?;
        if path == "/" {
            return Ok(());
        }
        let options = CreateMode::Persistent.with_acls(Acls::anyone_all());
        self.bounded(
            Operation::EnsurePath,
            path,
            self.client.mkdir(path, &options),
        )
        .await
    }

    /// Deletes `path` and everything below it, children first. A path that does not exist
    /// (or disappears meanwhile) counts as deleted. The root is refused.
    pub async fn delete_recursive(&self, path: &str) -> Result<(), ZnodeError> {
        validate_path(path)?;
        if path == "/" {
            return Err(ZnodeError::InvalidPath {
                path: path.to_owned(),
                reason: "refusing to delete the root znode",
            });
        }
        self.bounded(Operation::DeleteRecursive, path, self.delete_tree(path))
            .await
    }

    /// Whether `path` exists.
    pub async fn exists(&self, path: &str) -> Result<bool, ZnodeError> {
        validate_path(path)?;
        let stat = self
            .bounded(Operation::Exists, path, self.client.check_stat(path))
            .await?;
        Ok(stat.is_some())
    }

    /// Lists the tree below `root` breadth first, then deletes it deepest first so that every
    /// node is childless when its turn comes.
    async fn delete_tree(&self, root: &str) -> Result<(), zookeeper_client::Error> {
        let mut nodes = vec![root.to_owned()];
        let mut next = 0;
        while let Some(node) = nodes.get(next).cloned() {
            next += 1;
            match self.client.list_children(&node).await {
                Ok(children) => nodes.extend(children.iter().map(|child| join(&node, child))),
                Err(zookeeper_client::Error::NoNode) => {}
                Err(error) => return Err(error),
            }
        }
        for node in nodes.iter().rev() {
            match self.client.delete(node, None).await {
                Ok(()) | Err(zookeeper_client::Error::NoNode) => {}
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }

    async fn bounded<T>(
        &self,
        operation: Operation,
        path: &str,
        call: impl Future<Output = Result<T, zookeeper_client::Error>>,
    ) -> Result<T, ZnodeError> {
        match tokio::time::timeout(self.timeout, call).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(source)) => Err(ZnodeError::Operation {
                operation,
                path: path.to_owned(),
                source,
            }),
            Err(_) => Err(ZnodeError::OperationTimeout {
                operation,
                path: path.to_owned(),
                timeout: self.timeout,
            }),
        }
    }
}

fn join(parent: &str, child: &str) -> String {
    if parent == "/" {
        format!("/{child}")
    } else {
        format!("{parent}/{child}")
    }
}

/// Checks the rules ZooKeeper applies, before a request is sent: absolute, no empty, `.` or
/// `..` segments, no trailing slash, no control characters.
fn validate_path(path: &str) -> Result<(), ZnodeError> {
    let invalid = |reason| {
        Err(ZnodeError::InvalidPath {
            path: path.to_owned(),
            reason,
        })
    };
    if !path.starts_with('/') {
        return invalid("it must start with '/'");
    }
    if path == "/" {
        return Ok(());
    }
    if path.ends_with('/') {
        return invalid("it must not end with '/'");
    }
    if path.chars().any(char::is_control) {
        return invalid("it must not contain control characters");
    }
    for segment in path[1..].split('/') {
        match segment {
            "" => return invalid("it must not contain empty segments ('//')"),
            "." | ".." => return invalid("it must not contain '.' or '..' segments"),
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case::root("/")]
    #[case::single("/strata")]
    #[case::nested("/strata/znodes/default")]
    #[case::dots_inside_names("/a.b/..c")]
    fn valid_paths_pass(#[case] path: &str) {
        assert!(validate_path(path).is_ok(), "{path}");
    }

    #[rstest]
    #[case::relative("strata", "it must start with '/'")]
    #[case::empty("", "it must start with '/'")]
    #[case::trailing_slash("/strata/", "it must not end with '/'")]
    #[case::double_slash("/a//b", "it must not contain empty segments ('//')")]
    #[case::dot_segment("/a/./b", "it must not contain '.' or '..' segments")]
    #[case::dot_dot_segment("/a/..", "it must not contain '.' or '..' segments")]
    #[case::control_character("/a\nb", "it must not contain control characters")]
    fn invalid_paths_are_rejected(#[case] path: &str, #[case] reason: &str) {
        let error = validate_path(path).map_err(|e| e.to_string());
        assert_eq!(
            error,
            Err(format!("invalid znode path {path:?}: {reason}")),
            "{path}"
        );
    }

    #[rstest]
    #[case::connection_loss(zookeeper_client::Error::ConnectionLoss, true)]
    #[case::session_expired(zookeeper_client::Error::SessionExpired, true)]
    #[case::client_timeout(zookeeper_client::Error::Timeout, true)]
    #[case::no_hosts(zookeeper_client::Error::NoHosts, true)]
    #[case::throttled(zookeeper_client::Error::Throttled, true)]
    #[case::concurrent_child(zookeeper_client::Error::NotEmpty, true)]
    #[case::no_auth(zookeeper_client::Error::NoAuth, false)]
    #[case::auth_failed(zookeeper_client::Error::AuthFailed, false)]
    #[case::invalid_acl(zookeeper_client::Error::InvalidAcl, false)]
    #[case::bad_arguments(zookeeper_client::Error::BadArguments(&"bad"), false)]
    fn operation_errors_are_classified(
        #[case] source: zookeeper_client::Error,
        #[case] transient: bool,
    ) {
        let error = ZnodeError::Operation {
            operation: Operation::EnsurePath,
            path: "/a".to_owned(),
            source,
        };
        assert_eq!(error.is_transient(), transient, "{error:?}");
    }

    #[rstest]
    #[case::connect_timeout(ZnodeError::ConnectTimeout { connection_string: "h:1".to_owned(), timeout: Duration::from_secs(1) }, true)]
    #[case::operation_timeout(ZnodeError::OperationTimeout { operation: Operation::Exists, path: "/a".to_owned(), timeout: Duration::from_secs(1) }, true)]
    #[case::invalid_path(ZnodeError::InvalidPath { path: "a".to_owned(), reason: "x" }, false)]
    fn other_errors_are_classified(#[case] error: ZnodeError, #[case] transient: bool) {
        assert_eq!(error.is_transient(), transient, "{error:?}");
    }

    #[rstest]
    #[case::below_root("/", "a", "/a")]
    #[case::below_nested("/a/b", "c", "/a/b/c")]
    fn children_are_joined_to_their_parent(
        #[case] parent: &str,
        #[case] child: &str,
        #[case] expected: &str,
    ) {
        assert_eq!(join(parent, child), expected);
    }
}

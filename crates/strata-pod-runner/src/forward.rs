//! Port forwarding from the host's loopback into a pod, as `kubectl port-forward` does:
//! a listener on `127.0.0.1` of the host, and for each connection a socket opened
//! inside the pod's network namespace (on a thread that joined it, so no route from the
//! host into the pod network is needed), with the bytes copied both ways.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use nix::sched::{CloneFlags, setns};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// A running forward; dropping it closes the listener.
#[derive(Debug)]
pub struct Forward {
    /// The host's end.
    pub local: SocketAddr,
    task: JoinHandle<()>,
}

impl Drop for Forward {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Forwards `local` (a loopback address of the host; port 0 picks a free one) to
/// `address:port` in the pod whose network namespace is `netns`. Must be called on a
/// tokio runtime.
pub async fn forward(
    local: SocketAddr,
    netns: PathBuf,
    address: Ipv4Addr,
    port: u16,
) -> std::io::Result<Forward> {
    let listener = TcpListener::bind(local).await?;
    let local = listener.local_addr()?;
    let task = tokio::spawn(async move {
        while let Ok((mut inbound, _)) = listener.accept().await {
            let netns = netns.clone();
            tokio::spawn(async move {
                if let Ok(mut outbound) = connect_in(netns, SocketAddr::from((address, port))).await
                {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                }
            });
        }
    });
    Ok(Forward { local, task })
}

/// A connection made from inside a network namespace.
async fn connect_in(netns: PathBuf, target: SocketAddr) -> std::io::Result<TcpStream> {
    let (sender, receiver) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let connected = std::fs::File::open(&netns)
            .and_then(|file| setns(&file, CloneFlags::CLONE_NEWNET).map_err(std::io::Error::from))
            .and_then(|()| std::net::TcpStream::connect_timeout(&target, Duration::from_secs(5)))
            .and_then(|stream| stream.set_nonblocking(true).map(|()| stream));
        let _ = sender.send(connected);
    });
    let stream = receiver
        .await
        .map_err(|_| std::io::Error::other("the connecting thread ended"))??;
    TcpStream::from_std(stream)
}

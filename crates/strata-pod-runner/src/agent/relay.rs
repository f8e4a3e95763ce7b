//! kube-proxy's part for the API server: its Service's address served inside the pod
//! network.

use std::net::SocketAddr;
use std::time::Duration;

use k8s_openapi::api::core::v1::Service;
use kube::{Api, Client};
use tokio::task::JoinHandle;

use super::AgentError;
use crate::runner::PodRunner;

/// Serves the `kubernetes` Service's address inside the pod network, each connection
/// relayed to `api_server`; the runner learns the Service at once, so that the first
/// pods get its variables. The TLS stays end to end: the API server's certificate
/// names that address.
pub(super) async fn relay_api_server(
    client: &Client,
    runner: &mut PodRunner,
    api_server: SocketAddr,
) -> Result<JoinHandle<()>, AgentError> {
    let service = Api::<Service>::namespaced(client.clone(), "default")
        .get("kubernetes")
        .await
        .map_err(|source| AgentError {
            doing: "read the Service default/kubernetes".to_owned(),
            source,
        })?;
    let relay_error = |reason: String| AgentError {
        doing: "serve the Service default/kubernetes to the pods".to_owned(),
        source: kube::Error::Service(reason.into()),
    };
    runner
        .apply_service(service.clone())
        .map_err(|error| relay_error(error.to_string()))?;
    let spec = service.spec.unwrap_or_default();
    let address: std::net::Ipv4Addr = spec
        .cluster_ip
        .unwrap_or_default()
        .parse()
        .map_err(|error| relay_error(format!("its clusterIP: {error}")))?;
    let port = spec
        .ports
        .unwrap_or_default()
        .first()
        .and_then(|port| u16::try_from(port.port).ok())
        .ok_or_else(|| relay_error("it has no port".to_owned()))?;
    let listener = runner
        .listen_for_service(address, port)
        .map_err(|error| relay_error(error.to_string()))?;
    listener
        .set_nonblocking(true)
        .map_err(|error| relay_error(error.to_string()))?;
    let listener = tokio::net::TcpListener::from_std(listener)
        .map_err(|error| relay_error(error.to_string()))?;
    Ok(tokio::spawn(async move {
        loop {
            match listener.accept().await {
                Ok((mut inbound, _)) => {
                    tokio::spawn(async move {
                        if let Ok(mut outbound) = tokio::net::TcpStream::connect(api_server).await {
                            let _ =
                                tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                        }
                    });
                }
                Err(error) => {
                    eprintln!("strata-pod-runner: the API server relay cannot accept: {error}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    }))
}

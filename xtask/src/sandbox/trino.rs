//! The Trino example on the runner's node, for real: a `tpch` query through the
//! coordinator, over Trino's client protocol, on HTTPS (the default) as the cluster's
//! discovery ConfigMap describes it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::Value;
use strata_testing::http::{Response, request};

use super::POLL_PERIOD;
use super::demo::DemoTarget;
use super::kubectl::Kubectl;
use super::operator_pods::OperatorPods;

/// The coordinator's port without TLS, as the operator renders it.
const HTTP_PORT: u16 = 8080;
/// Its port with TLS (the default).
const HTTPS_PORT: u16 = 8443;
/// The query, and what `tpch` answers: the 25 nations of TPC-H.
const QUERY: &str = "SELECT count(*) FROM tpch.tiny.nation";
const NATIONS: u64 = 25;
/// How long the query may take, its first run included (the workers announce
/// themselves, the plugin loads its data generator).
const QUERY_TIMEOUT: Duration = Duration::from_secs(120);

/// How the sandbox reaches the coordinator: plain HTTP, or HTTPS checked against the
/// CA of the cluster's discovery ConfigMap for the coordinator pod's FQDN.
#[derive(Clone)]
enum Transport {
    Plain,
    Tls {
        config: Arc<rustls::ClientConfig>,
        name: String,
    },
}

impl Transport {
    /// From the discovery ConfigMap `<cluster>`, as a client in the cluster reads it.
    fn read(
        kubectl: &Kubectl,
        target: &DemoTarget,
        pod: &str,
        group: &str,
    ) -> anyhow::Result<Self> {
        let data = kubectl.config_map_data(&target.namespace, target.name())?;
        if data["TRINO_TLS"] != "true" {
            return Ok(Self::Plain);
        }
        let ca = data["ca.crt"].as_str().with_context(|| {
            format!(
                "the discovery ConfigMap {} says TLS but has no ca.crt",
                target.name()
            )
        })?;
        let config = strata_testing::tls::client_config(ca, None)
            .map_err(|error| anyhow::anyhow!("the CA of {}: {error}", target.name()))?;
        Ok(Self::Tls {
            config,
            name: format!("{pod}.{group}.{}.svc.cluster.local", target.namespace),
        })
    }

    fn port(&self) -> u16 {
        match self {
            Self::Plain => HTTP_PORT,
            Self::Tls { .. } => HTTPS_PORT,
        }
    }

    fn send(
        &self,
        address: &str,
        method: &str,
        path: &str,
        body: Option<&str>,
    ) -> anyhow::Result<Response> {
        let headers = [("X-Trino-User", "sandbox")];
        match self {
            Self::Plain => request(address, method, path, &headers, body),
            Self::Tls { config, name } => strata_testing::tls::https_request(
                config.clone(),
                name,
                address.parse()?,
                (method, path),
                &headers,
                body,
            ),
        }
        .map_err(anyhow::Error::msg)
    }
}

/// Asks the coordinator of `target` for [`QUERY`] and checks the count.
pub(super) async fn answers_tpch(
    kubectl: &Kubectl,
    pods: &OperatorPods<'_>,
    target: &DemoTarget,
    coordinator_role: &str,
) -> anyhow::Result<()> {
    let group = format!("{}-{coordinator_role}-default", target.name());
    let pod = format!("{group}-0");
    let transport = Transport::read(kubectl, target, &pod, &group)?;
    let port = transport.port();
    let started = Instant::now();
    let rows = loop {
        // The forward follows the pod: a replaced coordinator gets a new one.
        let address = pods
            .agent
            .forwarded(&format!("{pod}:{port}"))
            .map(|address| address.to_string());
        let transport = transport.clone();
        let asked = match address {
            Some(address) => {
                tokio::task::spawn_blocking(move || query(&transport, &address, QUERY)).await?
            }
            None => Err(anyhow::anyhow!(
                "the runner forwards no port {port} of {pod}"
            )),
        };
        match asked {
            Ok(rows) => break rows,
            Err(error) if started.elapsed() < QUERY_TIMEOUT => {
                eprintln!("    not yet: {error:#}");
                tokio::time::sleep(POLL_PERIOD * 4).await;
            }
            Err(error) => return Err(error.context(format!("{QUERY} through {pod}"))),
        }
    };
    let count = rows
        .first()
        .and_then(|row| row.get(0))
        .and_then(Value::as_u64);
    if count != Some(NATIONS) {
        bail!("{QUERY} through {pod} answered {rows:?}, not {NATIONS}");
    }
    println!("{QUERY}: {NATIONS}");
    let over = match transport {
        Transport::Plain => "plain HTTP",
        Transport::Tls { .. } => "HTTPS, its certificate checked against the discovery CA",
    };
    eprintln!(
        "==> the real Trino coordinator {pod} and its worker answered over {over} in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The rows of `sql`: `POST /v1/statement`, then `GET nextUri` until there is none.
fn query(transport: &Transport, address: &str, sql: &str) -> anyhow::Result<Vec<Value>> {
    let mut page = transport
        .send(address, "POST", "/v1/statement", Some(sql))?
        .json()
        .map_err(anyhow::Error::msg)?;
    let mut rows = Vec::new();
    loop {
        if let Some(data) = page["data"].as_array() {
            rows.extend(data.iter().cloned());
        }
        let Some(next) = page["nextUri"].as_str() else {
            break;
        };
        let path = next
            .split_once("://")
            .and_then(|(_, rest)| rest.find('/').map(|slash| rest[slash..].to_owned()))
            .with_context(|| format!("a nextUri without a path: {next}"))?;
        std::thread::sleep(Duration::from_millis(100));
        page = transport
            .send(address, "GET", &path, None)?
            .json()
            .map_err(anyhow::Error::msg)?;
    }
    match page.get("error") {
        None => Ok(rows),
        Some(error) => bail!("{sql}: {}", error["message"]),
    }
}

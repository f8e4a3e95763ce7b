//! The Trino example on the runner's node, for real: a `tpch` query through the
//! coordinator, over Trino's client protocol.

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::Value;
use strata_testing::http::request;

use super::POLL_PERIOD;
use super::demo::DemoTarget;
use super::operator_pods::OperatorPods;

/// The coordinator's HTTP port, as the operator renders it.
const HTTP_PORT: u16 = 8080;
/// The query, and what `tpch` answers: the 25 nations of TPC-H.
const QUERY: &str = "SELECT count(*) FROM tpch.tiny.nation";
const NATIONS: u64 = 25;
/// How long the query may take, its first run included (the workers announce
/// themselves, the plugin loads its data generator).
const QUERY_TIMEOUT: Duration = Duration::from_secs(120);

/// Asks the coordinator of `target` for [`QUERY`] and checks the count.
pub(super) async fn answers_tpch(
    pods: &OperatorPods<'_>,
    target: &DemoTarget,
    coordinator_role: &str,
) -> anyhow::Result<()> {
    let pod = format!("{}-{coordinator_role}-default-0", target.name());
    let started = Instant::now();
    let rows = loop {
        // The forward follows the pod: a replaced coordinator gets a new one.
        let address = pods
            .agent
            .forwarded(&format!("{pod}:{HTTP_PORT}"))
            .map(|address| address.to_string());
        let asked = match address {
            Some(address) => tokio::task::spawn_blocking(move || query(&address, QUERY)).await?,
            None => Err(anyhow::anyhow!(
                "the runner forwards no port {HTTP_PORT} of {pod}"
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
    eprintln!(
        "==> the real Trino coordinator {pod} and its worker answered in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The rows of `sql`: `POST /v1/statement`, then `GET nextUri` until there is none.
fn query(address: &str, sql: &str) -> anyhow::Result<Vec<Value>> {
    let headers = [("X-Trino-User", "sandbox")];
    let mut page = request(address, "POST", "/v1/statement", &headers, Some(sql))
        .map_err(anyhow::Error::msg)?
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
        page = request(address, "GET", &path, &headers, None)
            .map_err(anyhow::Error::msg)?
            .json()
            .map_err(anyhow::Error::msg)?;
    }
    match page.get("error") {
        None => Ok(rows),
        Some(error) => bail!("{sql}: {}", error["message"]),
    }
}

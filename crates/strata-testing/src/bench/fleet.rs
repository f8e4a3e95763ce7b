//! The benchmark's clusters: made from the example manifest, written straight
//! into the in-memory API (not counted as requests), and waited for.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::Harness;
use kube::Resource;
use serde::Serialize;
use serde::de::DeserializeOwned;
use strata_operator::render::{documents_of_kind, parse_documents};
use strata_test_apiserver::{RequestRecord, TestApiServer, Verb};

use super::error::BenchError;

/// Namespace of every benchmark cluster; the harness watches it.
pub const NAMESPACE: &str = "default";

/// The annotation the steady-state phase changes on every cluster: a change
/// that triggers a reconcile but asks for nothing new.
pub const TOUCH_ANNOTATION: &str = "bench.strata.dev/touched";

/// How often the waits look at the operator: cheap enough not to show in the
/// CPU figures, fine enough for phases of seconds.
const POLL: Duration = Duration::from_millis(100);

/// No reconcile and no write for this long means the operator is done. It is
/// longer than the harness's longest retry backoff (500 ms).
const QUIET: Duration = Duration::from_secs(1);

/// What a benchmark cluster kind must be: a namespaced custom resource the
/// in-memory API stores.
pub trait ClusterKind:
    Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
    + Clone
    + Serialize
    + DeserializeOwned
    + std::fmt::Debug
{
}

impl<K> ClusterKind for K where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + Serialize
        + DeserializeOwned
        + std::fmt::Debug
{
}

/// The first cluster of kind `K` in a manifest, the template for all others.
pub fn cluster_template<K: ClusterKind>(yaml: &str) -> Result<K, BenchError> {
    let documents = parse_documents(yaml)?;
    documents_of_kind::<K>(&documents)?
        .into_iter()
        .next()
        .ok_or_else(|| BenchError::Template(format!("no document of kind {}", K::kind(&()))))
}

/// Names `<prefix>-0000`, `<prefix>-0001`, ...: short enough for every derived object
/// name when the prefix is.
pub fn cluster_names(prefix: &str, count: usize) -> Vec<String> {
    (0..count)
        .map(|index| format!("{prefix}-{index:04}"))
        .collect()
}

/// Stores one copy of `template` per name, as `kubectl apply` would but
/// without going through the request log.
pub fn create_all<K: ClusterKind>(
    server: &TestApiServer,
    template: &K,
    names: &[String],
) -> Result<(), BenchError> {
    for name in names {
        let mut cluster = template.clone();
        cluster.meta_mut().name = Some(name.clone());
        cluster.meta_mut().namespace = Some(NAMESPACE.to_owned());
        server.upsert(&cluster)?;
    }
    Ok(())
}

/// Sets the touch annotation of every cluster to `value`.
pub fn touch_all<K: ClusterKind>(
    server: &TestApiServer,
    names: &[String],
    value: &str,
) -> Result<(), BenchError> {
    for name in names {
        server.modify::<K>(NAMESPACE, name, |cluster| {
            cluster
                .meta_mut()
                .annotations
                .get_or_insert_with(BTreeMap::new)
                .insert(TOUCH_ANNOTATION.to_owned(), value.to_owned());
        })?;
    }
    Ok(())
}

/// Clusters of kind `K` whose status the operator has written.
pub fn clusters_with_status<K: ClusterKind>(server: &TestApiServer) -> usize {
    let resource = kube::api::ApiResource::erase::<K>(&());
    server
        .objects(&format!("{}.{}", resource.plural, resource.group))
        .iter()
        .filter(|cluster| !cluster["status"].is_null())
        .count()
}

/// When the operator last did something, once it has gone quiet.
#[derive(Clone, Copy, Debug)]
pub struct Settled {
    /// The poll at which the last reconcile or write was seen.
    pub last_activity: Instant,
    /// Reconciles finished by then, in total.
    pub reconciles: u64,
}

/// Waits until at least `min_reconciles` reconciles have finished in total,
/// `done` holds, and then neither the reconcile count nor the API's
/// resourceVersion has moved for a quiet period of a few seconds.
pub async fn wait_until_settled<K: ClusterKind>(
    harness: &Harness,
    phase: &'static str,
    min_reconciles: u64,
    timeout: Duration,
    done: impl Fn() -> bool,
) -> Result<Settled, BenchError> {
    let started = Instant::now();
    let mut seen = (harness.reconciles(), harness.server.resource_version());
    let mut last_activity = started;
    loop {
        tokio::time::sleep(POLL).await;
        let now = (harness.reconciles(), harness.server.resource_version());
        if now != seen {
            seen = now;
            last_activity = Instant::now();
            continue;
        }
        let quiet = last_activity.elapsed() >= QUIET;
        if quiet && seen.0 >= min_reconciles && done() {
            return Ok(Settled {
                last_activity,
                reconciles: seen.0,
            });
        }
        if started.elapsed() > timeout {
            return Err(BenchError::Timeout {
                phase,
                waited: timeout,
                detail: format!(
                    "{} reconciles of at least {min_reconciles}, {} clusters with status",
                    seen.0,
                    clusters_with_status::<K>(&harness.server)
                ),
            });
        }
    }
}

/// Requests of a phase, counted by `verb resource` (`patch statefulsets.apps`).
#[derive(Clone, Debug, Default)]
pub struct RequestCounts {
    /// Count per verb and qualified resource.
    pub by_kind: BTreeMap<String, usize>,
    /// All requests.
    pub total: usize,
    /// Create, update, patch, delete and deletecollection.
    pub writes: usize,
    /// LIST requests.
    pub lists: usize,
    /// GET requests of one object.
    pub gets: usize,
}

impl RequestCounts {
    /// Counts a request log.
    pub fn of(requests: &[RequestRecord]) -> Self {
        let mut counts = Self::default();
        for request in requests {
            counts.total += 1;
            counts.writes += usize::from(request.verb.is_write());
            counts.lists += usize::from(request.verb == Verb::List);
            counts.gets += usize::from(request.verb == Verb::Get);
            *counts
                .by_kind
                .entry(format!("{} {}", request.verb, request.qualified_resource()))
                .or_default() += 1;
        }
        counts
    }
}

//! Rendered objects, as an operator's `render` prints them, given to a runner: the
//! ConfigMaps, Secrets and Services it serves, and the pods of each StatefulSet and
//! bare Pod. The kinds a node has no part in (PodDisruptionBudgets, RBAC, the custom
//! resources themselves...) are listed back, so a caller can say what was not run.

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret, Service};
use serde_json::Value;

use crate::runner::{PodRunner, RunnerError};
use crate::statefulset;

/// What the runner did with one object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Applied {
    /// Served to the pods (ConfigMap, Secret, Service).
    Served(String),
    /// Pods started (a StatefulSet's, or a Pod).
    Started(Vec<String>),
    /// A kind the runner has no part in, by `kind/name`.
    Ignored(String),
}

fn typed<T: serde::de::DeserializeOwned>(object: &Value, what: &str) -> Result<T, RunnerError> {
    serde_json::from_value(object.clone()).map_err(|error| RunnerError::Unrunnable {
        pod: what.to_owned(),
        reason: format!("not a valid object: {error}"),
    })
}

/// Gives `object` to `runner`.
pub fn apply(runner: &mut PodRunner, object: &Value) -> Result<Applied, RunnerError> {
    let kind = object["kind"].as_str().unwrap_or_default();
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    let what = format!("{kind}/{name}");
    match kind {
        "ConfigMap" => runner
            .apply_config_map(typed::<ConfigMap>(object, &what)?)
            .map(|()| Applied::Served(what)),
        "Secret" => runner
            .apply_secret(typed::<Secret>(object, &what)?)
            .map(|()| Applied::Served(what)),
        "Service" => runner
            .apply_service(typed::<Service>(object, &what)?)
            .map(|()| Applied::Served(what)),
        "StatefulSet" => {
            let pods = statefulset::pods(&typed::<StatefulSet>(object, &what)?);
            let names = pods
                .iter()
                .filter_map(|pod| pod.metadata.name.clone())
                .collect();
            for pod in pods {
                runner.run(pod)?;
            }
            Ok(Applied::Started(names))
        }
        "Pod" => {
            runner.run(typed::<Pod>(object, &what)?)?;
            Ok(Applied::Started(vec![name.to_owned()]))
        }
        _ => Ok(Applied::Ignored(what)),
    }
}

/// Gives every object to `runner`: the ConfigMaps, Secrets and Services first, so that
/// every pod finds its volumes and names.
pub fn apply_all(runner: &mut PodRunner, objects: &[Value]) -> Result<Vec<Applied>, RunnerError> {
    let serves = |object: &&Value| {
        matches!(
            object["kind"].as_str(),
            Some("ConfigMap" | "Secret" | "Service")
        )
    };
    let (first, then): (Vec<&Value>, Vec<&Value>) = objects.iter().partition(serves);
    first
        .into_iter()
        .chain(then)
        .map(|object| apply(runner, object))
        .collect()
}

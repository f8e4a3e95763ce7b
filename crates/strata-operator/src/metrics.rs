//! Prometheus metrics for every controller of an operator.
//!
//! Reconcile counts, durations and errors show whether the operator keeps up;
//! the condition gauge lets alerts fire on a cluster that is not Available
//! without scraping custom resources.

use std::sync::Mutex;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// Labels of per-controller metrics.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ControllerLabels {
    /// The controller, named after the kind it reconciles.
    pub controller: String,
}

/// Labels of reconcile failures.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ErrorLabels {
    /// The controller.
    pub controller: String,
    /// The error's CamelCase reason.
    pub reason: String,
    /// `Transient` or `InvalidSpec`.
    pub kind: String,
}

/// Labels of the condition gauge: one series per object and condition type.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ConditionLabels {
    /// The controller.
    pub controller: String,
    /// The object's namespace.
    pub namespace: String,
    /// The object's name.
    pub name: String,
    /// The condition type, e.g. `Available`.
    pub condition: String,
}

/// All metrics of one operator process.
#[derive(Debug)]
pub struct Metrics {
    registry: Mutex<Registry>,
    reconciles: Family<ControllerLabels, Counter>,
    failures: Family<ErrorLabels, Counter>,
    durations: Family<ControllerLabels, Histogram>,
    conditions: Family<ConditionLabels, Gauge>,
    leader: Gauge,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Registers the metric families under the `strata_` prefix.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("strata");
        let reconciles = Family::<ControllerLabels, Counter>::default();
        let failures = Family::<ErrorLabels, Counter>::default();
        let durations = Family::<ControllerLabels, Histogram>::new_with_constructor(|| {
            Histogram::new([0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 30.0])
        });
        let conditions = Family::<ConditionLabels, Gauge>::default();
        registry.register("reconciles", "Reconciles started", reconciles.clone());
        registry.register(
            "reconcile_failures",
            "Reconciles that failed",
            failures.clone(),
        );
        registry.register(
            "reconcile_duration_seconds",
            "Time spent in one reconcile",
            durations.clone(),
        );
        registry.register(
            "condition",
            "Condition status per object: 1 True, 0 False, -1 Unknown",
            conditions.clone(),
        );
        let leader = Gauge::default();
        registry.register(
            "leader",
            "1 while this instance holds the leader-election Lease and reconciles, 0 on standby",
            leader.clone(),
        );
        Self {
            registry: Mutex::new(registry),
            reconciles,
            failures,
            durations,
            conditions,
            leader,
        }
    }

    /// Records a finished reconcile.
    pub fn observe_reconcile(&self, controller: &str, duration: Duration) {
        let labels = ControllerLabels {
            controller: controller.to_owned(),
        };
        self.reconciles.get_or_create(&labels).inc();
        self.durations
            .get_or_create(&labels)
            .observe(duration.as_secs_f64());
    }

    /// Records a failed reconcile.
    pub fn observe_failure(&self, controller: &str, reason: &str, kind: &str) {
        self.failures
            .get_or_create(&ErrorLabels {
                controller: controller.to_owned(),
                reason: reason.to_owned(),
                kind: kind.to_owned(),
            })
            .inc();
    }

    /// Sets the gauge of one condition of one object.
    pub fn set_condition(&self, labels: ConditionLabels, value: i64) {
        self.conditions.get_or_create(&labels).set(value);
    }

    /// Records whether this instance leads. A standby drops every condition
    /// series, so that alerts see each object once, from the leader.
    pub fn set_leader(&self, leading: bool) {
        self.leader.set(i64::from(leading));
        if !leading {
            self.conditions.clear();
        }
    }

    /// Drops the condition series of a deleted object.
    pub fn forget_object(
        &self,
        controller: &str,
        namespace: &str,
        name: &str,
        condition_types: &[&str],
    ) {
        for condition in condition_types {
            self.conditions.remove(&ConditionLabels {
                controller: controller.to_owned(),
                namespace: namespace.to_owned(),
                name: name.to_owned(),
                condition: (*condition).to_owned(),
            });
        }
    }

    /// The OpenMetrics text exposition.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        let registry = match self.registry.lock() {
            Ok(registry) => registry,
            Err(poisoned) => poisoned.into_inner(),
        };
        if prometheus_client::encoding::text::encode(&mut out, &registry).is_err() {
            out.clear();
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reconciles_failures_and_conditions_are_exposed() {
        let metrics = Metrics::new();
        metrics.observe_reconcile("zookeepercluster", Duration::from_millis(3));
        metrics.observe_failure("zookeepercluster", "ApplyFailed", "Transient");
        metrics.set_condition(
            ConditionLabels {
                controller: "zookeepercluster".into(),
                namespace: "ns".into(),
                name: "zk".into(),
                condition: "Available".into(),
            },
            1,
        );
        let text = metrics.encode();
        assert!(
            text.contains("strata_reconciles_total{controller=\"zookeepercluster\"} 1"),
            "{text}"
        );
        assert!(text.contains("reason=\"ApplyFailed\""), "{text}");
        assert!(text.contains("strata_condition{"), "{text}");
        metrics.forget_object("zookeepercluster", "ns", "zk", &["Available"]);
        assert!(!metrics.encode().contains("name=\"zk\""));
    }
}

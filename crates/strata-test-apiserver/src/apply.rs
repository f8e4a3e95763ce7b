//! Simplified server-side apply: field ownership per manager, conflicts and field removal.
//!
//! Rules (see the crate README for how this differs from the real structured-merge-diff):
//! - Every write records which manager set which leaf field ([`crate::fields::leaves`]).
//! - An apply by manager M conflicts when it sets a field to a value different from the
//!   current one and another manager owns that field. `force` takes the field over instead.
//! - Fields M applied last time but not now lose M as owner, and are removed from the object
//!   once nobody owns them.
//! - The applied configuration is then deep-merged into the object.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::fields::{FieldPath, deep_merge, leaves, remove_at, value_at};

/// Which part of an object a write addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Part {
    /// The main resource: `.status` is preserved when the kind has a status subresource.
    Main,
    /// The `/status` subresource: only `.status` changes.
    Status,
    /// Direct test access: the whole object, status included.
    Whole,
}

/// Metadata fields users own; everything else in `metadata` is system-managed.
const USER_METADATA: [&str; 4] = ["labels", "annotations", "finalizers", "ownerReferences"];

/// Whether a path is a field that managers can own.
fn tracked(path: &FieldPath) -> bool {
    use crate::fields::Segment;
    match path.0.as_slice() {
        [] => false,
        [Segment::Field(root), ..] if root == "apiVersion" || root == "kind" => false,
        [Segment::Field(root), Segment::Field(field), ..] if root == "metadata" => {
            USER_METADATA.contains(&field.as_str())
        }
        [Segment::Field(root)] if root == "metadata" => false,
        _ => true,
    }
}

fn tracked_leaves(value: &Value) -> BTreeMap<FieldPath, Value> {
    leaves(value)
        .into_iter()
        .filter(|(path, _)| tracked(path))
        .collect()
}

/// Field ownership of one object, kept for its whole lifetime (keyed by uid in the store).
#[derive(Clone, Debug, Default)]
pub(crate) struct Ownership {
    owners: BTreeMap<FieldPath, BTreeSet<String>>,
    applied: BTreeMap<(String, Part), BTreeSet<FieldPath>>,
}

/// A non-forced apply that would overwrite fields owned by other managers.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct ApplyConflicts(pub(crate) Vec<(FieldPath, Vec<String>)>);

impl ApplyConflicts {
    /// The message the real server uses, so logs read the same.
    pub(crate) fn message(&self) -> String {
        let details: Vec<String> = self
            .0
            .iter()
            .map(|(path, managers)| format!("conflict with {managers:?}: {path}"))
            .collect();
        format!(
            "Apply failed with {} conflict{}: {}",
            self.0.len(),
            if self.0.len() == 1 { "" } else { "s" },
            details.join(", ")
        )
    }
}

impl Ownership {
    /// Applies `config` as `manager` to `current` and returns the resulting object.
    ///
    /// `config` must already be limited to the addressed part (no `.status` for the main
    /// resource of a kind with a status subresource, only `.status` for `/status`).
    /// Ownership is only updated when the apply succeeds.
    pub(crate) fn apply(
        &mut self,
        current: &Value,
        manager: &str,
        force: bool,
        target: Part,
        config: &Value,
    ) -> Result<Value, ApplyConflicts> {
        let applied_leaves = tracked_leaves(config);
        if !force {
            let conflicts = self.conflicts(current, manager, &applied_leaves);
            if !conflicts.is_empty() {
                return Err(ApplyConflicts(conflicts));
            }
        }

        let mut result = current.clone();
        let key = (manager.to_owned(), target);
        let previous = self.applied.remove(&key).unwrap_or_default();
        for dropped in previous.iter().filter(|p| !applied_leaves.contains_key(*p)) {
            let Some(owners) = self.owners.get_mut(dropped) else {
                continue;
            };
            if owners.remove(manager) && owners.is_empty() {
                self.owners.remove(dropped);
                remove_at(&mut result, dropped);
            }
        }

        for (path, value) in &applied_leaves {
            let unchanged = value_at(current, path) == Some(value);
            let owners = self.owners.entry(path.clone()).or_default();
            if force || !unchanged {
                owners.clear();
            }
            owners.insert(manager.to_owned());
        }
        self.applied
            .insert(key, applied_leaves.keys().cloned().collect());

        deep_merge(&mut result, config);
        Ok(result)
    }

    fn conflicts(
        &self,
        current: &Value,
        manager: &str,
        applied_leaves: &BTreeMap<FieldPath, Value>,
    ) -> Vec<(FieldPath, Vec<String>)> {
        applied_leaves
            .iter()
            .filter(|(path, value)| value_at(current, path).is_some_and(|cur| cur != *value))
            .filter_map(|(path, _)| {
                let others: Vec<String> = self
                    .owners
                    .get(path)?
                    .iter()
                    .filter(|owner| owner.as_str() != manager)
                    .cloned()
                    .collect();
                (!others.is_empty()).then(|| (path.clone(), others))
            })
            .collect()
    }

    /// Records a non-apply write (create, update, patch): `manager` takes every changed field.
    pub(crate) fn record_update(&mut self, manager: &str, old: &Value, new: &Value) {
        let before = tracked_leaves(old);
        let after = tracked_leaves(new);
        for path in before.keys().filter(|p| !after.contains_key(*p)) {
            self.owners.remove(path);
        }
        for (path, value) in &after {
            if before.get(path) != Some(value) {
                self.owners
                    .insert(path.clone(), BTreeSet::from([manager.to_owned()]));
            }
        }
    }

    /// Current owners per field, for tests that check which manager wrote what.
    pub(crate) fn owners(&self) -> &BTreeMap<FieldPath, BTreeSet<String>> {
        &self.owners
    }
}

/// Limits an apply configuration to the part of the object the request addresses.
pub(crate) fn scoped_config(config: &Value, target: Part, status_subresource: bool) -> Value {
    let Value::Object(map) = config else {
        return config.clone();
    };
    let keep = |key: &str| match target {
        Part::Status => key == "status",
        Part::Main => !(status_subresource && key == "status"),
        Part::Whole => true,
    };
    Value::Object(
        map.iter()
            .filter(|(k, _)| keep(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn apply(
        own: &mut Ownership,
        current: &Value,
        manager: &str,
        force: bool,
        config: Value,
    ) -> Result<Value, ApplyConflicts> {
        own.apply(current, manager, force, Part::Main, &config)
    }

    #[test]
    fn reapply_without_a_field_removes_it() {
        let mut own = Ownership::default();
        let v1 = apply(
            &mut own,
            &json!({}),
            "op",
            false,
            json!({"spec": {"a": 1, "b": 2}}),
        );
        let v1 = v1.unwrap_or_default();
        let v2 = apply(&mut own, &v1, "op", false, json!({"spec": {"a": 1}}));
        assert_eq!(v2, Ok(json!({"spec": {"a": 1}})));
    }

    #[test]
    fn field_shared_with_another_manager_survives_removal() {
        let mut own = Ownership::default();
        let v1 =
            apply(&mut own, &json!({}), "op", false, json!({"spec": {"a": 1}})).unwrap_or_default();
        let v2 =
            apply(&mut own, &v1, "other", false, json!({"spec": {"a": 1}})).unwrap_or_default();
        let v3 = apply(&mut own, &v2, "op", false, json!({"spec": {}}));
        assert_eq!(v3, Ok(json!({"spec": {"a": 1}})));
    }

    #[test]
    fn changing_a_field_owned_by_another_manager_conflicts_unless_forced() {
        let mut own = Ownership::default();
        let v1 =
            apply(&mut own, &json!({}), "op", false, json!({"spec": {"a": 1}})).unwrap_or_default();
        let conflict = apply(&mut own, &v1, "other", false, json!({"spec": {"a": 2}}));
        assert_eq!(
            conflict.map_err(|c| c.message()),
            Err("Apply failed with 1 conflict: conflict with [\"op\"]: .spec.a".to_owned())
        );
        let forced =
            apply(&mut own, &v1, "other", true, json!({"spec": {"a": 2}})).unwrap_or_default();
        assert_eq!(forced, json!({"spec": {"a": 2}}));
        // op lost the field, so dropping it from op's config must not delete it.
        let v3 = apply(&mut own, &forced, "op", false, json!({"spec": {}}));
        assert_eq!(v3, Ok(json!({"spec": {"a": 2}})));
    }

    #[test]
    fn update_takes_ownership_of_changed_fields() {
        let mut own = Ownership::default();
        let v1 =
            apply(&mut own, &json!({}), "op", false, json!({"spec": {"a": 1}})).unwrap_or_default();
        let edited = json!({"spec": {"a": 5}});
        own.record_update("kubectl-edit", &v1, &edited);
        assert!(apply(&mut own, &edited, "op", false, json!({"spec": {"a": 1}})).is_err());
    }

    #[test]
    fn system_metadata_is_not_owned() {
        let mut own = Ownership::default();
        let config = json!({"metadata": {"name": "x", "labels": {"a": "b"}}, "apiVersion": "v1"});
        let _ = apply(&mut own, &json!({}), "op", false, config);
        let owned: Vec<String> = own.owners().keys().map(ToString::to_string).collect();
        assert_eq!(owned, vec![".metadata.labels.a"]);
    }

    #[test]
    fn scoped_config_splits_status() {
        let config = json!({"spec": 1, "status": 2, "metadata": {}});
        assert_eq!(
            scoped_config(&config, Part::Main, true),
            json!({"spec": 1, "metadata": {}})
        );
        assert_eq!(scoped_config(&config, Part::Main, false), config);
        assert_eq!(
            scoped_config(&config, Part::Status, true),
            json!({"status": 2})
        );
    }
}

//! Finalizer-aware deletion and owner-reference garbage collection.
//!
//! The real garbage collector is an asynchronous controller. Here collection runs
//! synchronously, inside the request that finally removes an owner, with background
//! semantics: dependents whose owners are all gone are deleted (respecting their own
//! finalizers, cascading further), dependents that still have a live owner only lose the
//! dangling reference.

use serde_json::{Value, json};

use crate::{
    kinds::ResourceKey,
    object::{self, has_finalizers, is_terminating, now_timestamp, owner_uids, set_meta},
    store::{State, object_id},
};

/// What happens to dependents when their owner goes away.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Propagation {
    /// Delete dependents without live owners (`Background`; `Foreground` is treated the same).
    Cascade,
    /// Keep dependents and drop their reference to the owner (`Orphan`).
    Orphan,
}

/// Deletes an object the way the API server does.
///
/// With finalizers the object only gets `deletionTimestamp` (and a generation bump) and stays
/// until the finalizers are removed. Without, it is removed and its dependents are collected.
/// Returns the object as it is after the request and whether it was removed.
pub(crate) fn delete(
    state: &mut State,
    key: &ResourceKey,
    current: Value,
    propagation: Propagation,
) -> (Value, bool) {
    if has_finalizers(&current) {
        if is_terminating(&current) {
            return (current, false);
        }
        let mut marked = current.clone();
        set_meta(&mut marked, "deletionTimestamp", Some(now_timestamp()));
        set_meta(&mut marked, "deletionGracePeriodSeconds", Some(json!(0)));
        set_meta(
            &mut marked,
            "generation",
            Some(json!(object::generation(&current) + 1)),
        );
        return (state.put(key, marked, Some(current)), false);
    }
    let (namespace, name) = object_id(&current);
    let removed = state.remove(key, &namespace, &name).unwrap_or(current);
    if let Some(uid) = object::meta_str(&removed, "uid") {
        collect(state, uid.to_owned(), propagation);
    }
    (removed, true)
}

/// Whether a write leaves the object terminating with no finalizers, so it must go.
pub(crate) fn is_released(object: &Value) -> bool {
    is_terminating(object) && !has_finalizers(object)
}

/// Removes a released object in its final written state and collects its dependents.
pub(crate) fn remove_released(state: &mut State, key: &ResourceKey, final_state: Value) -> Value {
    let removed = state
        .remove_as(key, final_state.clone())
        .unwrap_or(final_state);
    if let Some(uid) = object::meta_str(&removed, "uid") {
        collect(state, uid.to_owned(), Propagation::Cascade);
    }
    removed
}

/// Deletes every object whose owner references all name objects that do not exist,
/// as the real garbage collector does for a dependent created after its owner went
/// away (an operator's apply racing the owner's deletion). Returns how many went.
pub(crate) fn collect_orphans(state: &mut State) -> usize {
    let live = state.live_uids();
    let orphans: Vec<(ResourceKey, (String, String))> = state
        .all_objects()
        .filter(|(_, obj)| {
            let owners = owner_uids(obj);
            !owners.is_empty() && owners.iter().all(|uid| !live.contains(uid))
        })
        .map(|(key, obj)| (key.clone(), object_id(obj)))
        .collect();
    let mut collected = 0;
    for (key, (namespace, name)) in orphans {
        if let Some(orphan) = state.object(&key, &namespace, &name).cloned() {
            delete(state, &key, orphan, Propagation::Cascade);
            collected += 1;
        }
    }
    collected
}

/// Handles every dependent of the removed owner `owner_uid`.
fn collect(state: &mut State, owner_uid: String, propagation: Propagation) {
    let dependents: Vec<(ResourceKey, (String, String))> = state
        .all_objects()
        .filter(|(_, obj)| owner_uids(obj).contains(&owner_uid))
        .map(|(key, obj)| (key.clone(), object_id(obj)))
        .collect();
    for (key, (namespace, name)) in dependents {
        // Earlier cascades in this loop may have changed or removed the dependent.
        let Some(dependent) = state.object(&key, &namespace, &name).cloned() else {
            continue;
        };
        let live = state.live_uids();
        let has_live_owner = owner_uids(&dependent)
            .iter()
            .any(|uid| *uid != owner_uid && live.contains(uid));
        if propagation == Propagation::Orphan || has_live_owner {
            let pruned =
                without_dead_owner_refs(&dependent, |uid| live.contains(uid) && uid != owner_uid);
            state.put(&key, pruned, Some(dependent));
        } else {
            delete(state, &key, dependent, Propagation::Cascade);
        }
    }
}

/// The object with only the owner references `keep` accepts.
fn without_dead_owner_refs(object: &Value, keep: impl Fn(&str) -> bool) -> Value {
    let mut pruned = object.clone();
    let refs: Vec<Value> = object
        .get("metadata")
        .and_then(|m| m.get("ownerReferences"))
        .and_then(Value::as_array)
        .map(|refs| {
            refs.iter()
                .filter(|r| r.get("uid").and_then(Value::as_str).is_some_and(&keep))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    set_meta(
        &mut pruned,
        "ownerReferences",
        (!refs.is_empty()).then_some(Value::Array(refs)),
    );
    pruned
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(name: &str, uid: &str, owners: &[&str], finalizers: &[&str]) -> Value {
        let refs: Vec<Value> = owners
            .iter()
            .map(|o| json!({"uid": o, "name": o, "kind": "X", "apiVersion": "v1"}))
            .collect();
        let mut v = json!({"metadata": {"name": name, "namespace": "ns", "uid": uid}});
        if !refs.is_empty() {
            set_meta(&mut v, "ownerReferences", Some(Value::Array(refs)));
        }
        if !finalizers.is_empty() {
            set_meta(&mut v, "finalizers", Some(json!(finalizers)));
        }
        v
    }

    fn names(state: &State, key: &ResourceKey) -> Vec<String> {
        state
            .store(key)
            .map(|s| s.objects.keys().map(|(_, n)| n.clone()).collect())
            .unwrap_or_default()
    }

    #[test]
    fn cascade_deletes_chain_but_keeps_objects_with_other_live_owners() {
        let mut state = State::new();
        let key = ResourceKey::new("", "configmaps");
        let owner = state.put(&key, obj("owner", "u1", &[], &[]), None);
        state.put(&key, obj("child", "u2", &["u1"], &[]), None);
        state.put(&key, obj("grandchild", "u3", &["u2"], &[]), None);
        state.put(&key, obj("other", "u4", &[], &[]), None);
        state.put(&key, obj("shared", "u5", &["u1", "u4"], &[]), None);
        state.put(&key, obj("guarded", "u6", &["u1"], &["keep"]), None);

        let (_, removed) = delete(&mut state, &key, owner, Propagation::Cascade);
        assert!(removed);
        assert_eq!(names(&state, &key), vec!["guarded", "other", "shared"]);
        let shared = state
            .object(&key, "ns", "shared")
            .cloned()
            .unwrap_or_default();
        assert_eq!(owner_uids(&shared), vec!["u4"]);
        let guarded = state
            .object(&key, "ns", "guarded")
            .cloned()
            .unwrap_or_default();
        assert!(is_terminating(&guarded));
    }

    #[test]
    fn orphan_keeps_dependents_without_the_reference() {
        let mut state = State::new();
        let key = ResourceKey::new("", "configmaps");
        let owner = state.put(&key, obj("owner", "u1", &[], &[]), None);
        state.put(&key, obj("child", "u2", &["u1"], &[]), None);
        delete(&mut state, &key, owner, Propagation::Orphan);
        let child = state
            .object(&key, "ns", "child")
            .cloned()
            .unwrap_or_default();
        assert!(owner_uids(&child).is_empty());
    }

    #[test]
    fn finalizers_delay_removal_until_released() {
        let mut state = State::new();
        let key = ResourceKey::new("", "configmaps");
        let held = state.put(&key, obj("held", "u1", &[], &["f"]), None);
        let (marked, removed) = delete(&mut state, &key, held, Propagation::Cascade);
        assert!(!removed && is_terminating(&marked));
        assert!(!is_released(&marked));
        let mut released = marked.clone();
        set_meta(&mut released, "finalizers", None);
        assert!(is_released(&released));
        let gone = remove_released(&mut state, &key, released);
        assert_eq!(object::meta_str(&gone, "finalizers"), None);
        let history: Vec<crate::store::Change> = state
            .store(&key)
            .map(|s| s.history.iter().map(|e| e.change).collect())
            .unwrap_or_default();
        use crate::store::Change::{Added, Deleted, Modified};
        assert_eq!(history, vec![Added, Modified, Deleted]);
        assert!(names(&state, &key).is_empty());
    }
}

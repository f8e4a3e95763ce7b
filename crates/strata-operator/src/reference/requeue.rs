//! Which referenced objects requeue their owners, event by event: what changed (by
//! labels, or by the part the owners depend on), what was deleted, and after a relist
//! only once the reflector's store holds the new list.

use std::collections::{BTreeMap, HashMap, HashSet};

use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use kube::runtime::watcher;

use crate::guard::Guarded;

/// What the requeue remembers of one referenced object: its labels, to requeue the
/// owners that selected it before a relabel, and the hash of what its owners depend
/// on.
struct Seen {
    labels: BTreeMap<String, String>,
    significant: Option<u64>,
}

/// A referenced object's key: namespace and name.
type ObjectKey = (String, String);

/// A relist in progress: the keys listed so far, and the objects whose owners to
/// requeue once the reflector's store holds the new list.
struct Relist<T> {
    keys: HashSet<ObjectKey>,
    pending: Vec<T>,
}

/// What the requeue of one referenced kind remembers between watch events.
struct RequeueState<T> {
    /// Every object seen, by (namespace, name).
    seen: HashMap<(String, String), Seen>,
    /// During a relist (`Init` to `InitDone`).
    relist: Option<Relist<T>>,
    /// Any object of the kind, to stand in for one deleted while the watch was down:
    /// the requeue reads only namespace, name and labels.
    template: Option<T>,
}

impl<T> Default for RequeueState<T> {
    fn default() -> Self {
        Self {
            seen: HashMap::new(),
            relist: None,
            template: None,
        }
    }
}

fn object_key<T: Resource>(object: &T) -> (String, String) {
    (
        object.meta().namespace.clone().unwrap_or_default(),
        object.meta().name.clone().unwrap_or_default(),
    )
}

/// The objects whose owners to requeue for one watch event:
/// - every applied object whose significant part or labels changed (or every applied
///   object, without a significance function), with a copy under its previous labels
///   when they changed, so the owners that selected it before a relabel hear of it too;
/// - every deleted object;
/// - after a relist, only once it is done (the reflector's store holds the new list
///   only then): the changed objects, and a stand-in for each object deleted while the
///   watch was down, which no Delete event reports.
fn requeue_objects<T: Resource + Clone>(
    state: &mut RequeueState<T>,
    event: watcher::Event<T>,
    significance: Option<fn(&T) -> u64>,
) -> Vec<T> {
    match event {
        watcher::Event::Init => {
            state.relist = Some(Relist {
                keys: HashSet::new(),
                pending: Vec::new(),
            });
            Vec::new()
        }
        watcher::Event::InitApply(object) => {
            let key = object_key(&object);
            let changed = applied(state, object, significance);
            match &mut state.relist {
                Some(relist) => {
                    relist.keys.insert(key);
                    relist.pending.extend(changed);
                    Vec::new()
                }
                None => changed,
            }
        }
        watcher::Event::InitDone => {
            let Some(Relist { keys, mut pending }) = state.relist.take() else {
                return Vec::new();
            };
            let missed: Vec<(String, String)> = state
                .seen
                .keys()
                .filter(|key| !keys.contains(*key))
                .cloned()
                .collect();
            for key in missed {
                let Some(gone) = state.seen.remove(&key) else {
                    continue;
                };
                if let Some(mut stand_in) = state.template.clone() {
                    let meta = stand_in.meta_mut();
                    meta.namespace = Some(key.0);
                    meta.name = Some(key.1);
                    meta.labels = Some(gone.labels);
                    pending.push(stand_in);
                }
            }
            pending
        }
        watcher::Event::Apply(object) => applied(state, object, significance),
        watcher::Event::Delete(object) => {
            state.seen.remove(&object_key(&object));
            vec![object]
        }
    }
}

/// Records an applied object and returns what of it requeues owners.
fn applied<T: Resource + Clone>(
    state: &mut RequeueState<T>,
    object: T,
    significance: Option<fn(&T) -> u64>,
) -> Vec<T> {
    if state.template.is_none() {
        state.template = Some(object.clone());
    }
    let labels = object.meta().labels.clone().unwrap_or_default();
    let significant = significance.map(|hash| hash(&object));
    let previous = state.seen.insert(
        object_key(&object),
        Seen {
            labels: labels.clone(),
            significant,
        },
    );
    match previous {
        Some(previous) if previous.labels != labels => {
            let mut before = object.clone();
            before.meta_mut().labels = Some(previous.labels);
            vec![before, object]
        }
        Some(previous) if significant.is_some() && previous.significant == significant => {
            Vec::new()
        }
        _ => vec![object],
    }
}

/// A watch event of `Guarded` objects as one of readable objects. An object the
/// operator cannot read is left out: its owners see its last readable version, or
/// none, and the owner that reads it reports the missing or stale object as usual.
///
/// The deletion of an unreadable object is the exception: it becomes the deletion of
/// its last readable version (`last_readable`, the reflector's store), so that version
/// leaves the cache and its owners are requeued, instead of lingering until a relist.
pub(super) fn readable<R: Clone>(
    event: watcher::Event<Guarded<R>>,
    last_readable: impl Fn(&ObjectMeta) -> Option<R>,
) -> Option<watcher::Event<R>> {
    match event {
        watcher::Event::Apply(Guarded(object)) => object.ok().map(watcher::Event::Apply),
        watcher::Event::InitApply(Guarded(object)) => object.ok().map(watcher::Event::InitApply),
        watcher::Event::Delete(Guarded(object)) => object
            .or_else(|unreadable| last_readable(&unreadable.metadata).ok_or(()))
            .ok()
            .map(watcher::Event::Delete),
        watcher::Event::Init => Some(watcher::Event::Init),
        watcher::Event::InitDone => Some(watcher::Event::InitDone),
    }
}

/// The reflected `events` as the objects whose owners to requeue
/// ([`requeue_objects`]).
pub(super) fn requeue_stream<T, S>(
    events: S,
    significance: Option<fn(&T) -> u64>,
) -> futures::stream::BoxStream<'static, Result<T, watcher::Error>>
where
    T: Resource + Clone + Send + 'static,
    S: futures::Stream<Item = Result<watcher::Event<T>, watcher::Error>> + Send + 'static,
{
    let mut state = RequeueState::default();
    events
        .flat_map(move |result| {
            let objects: Vec<Result<T, watcher::Error>> = match result {
                Ok(event) => requeue_objects(&mut state, event, significance)
                    .into_iter()
                    .map(Ok)
                    .collect(),
                Err(error) => vec![Err(error)],
            };
            futures::stream::iter(objects)
        })
        .boxed()
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use rstest::rstest;

    use super::*;

    fn pairs(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn config_map(labels: &[(&str, &str)], data: &str) -> ConfigMap {
        ConfigMap {
            metadata: kube::api::ObjectMeta {
                name: Some("catalog".to_owned()),
                namespace: Some("default".to_owned()),
                labels: Some(pairs(labels)),
                ..kube::api::ObjectMeta::default()
            },
            data: Some(pairs(&[("value", data)])),
            ..ConfigMap::default()
        }
    }

    fn value_hash(config_map: &ConfigMap) -> u64 {
        config_map
            .data
            .as_ref()
            .and_then(|data| data.get("value"))
            .map_or(0, |value| value.len() as u64)
    }

    /// `(labels of each requeued copy)` after `first` then `second`.
    fn requeued_after(
        first: ConfigMap,
        second: watcher::Event<ConfigMap>,
        significance: Option<fn(&ConfigMap) -> u64>,
    ) -> Vec<BTreeMap<String, String>> {
        let mut state = RequeueState::default();
        let first = requeue_objects(&mut state, watcher::Event::Apply(first), significance);
        assert_eq!(first.len(), 1, "a new object always requeues its owners");
        requeue_objects(&mut state, second, significance)
            .into_iter()
            .map(|object| object.metadata.labels.unwrap_or_default())
            .collect()
    }

    #[rstest]
    #[case::any_change_without_significance(None, &[("a", "1")], "xx", vec![pairs(&[("a", "1")])])]
    #[case::insignificant_change(Some(value_hash as fn(&ConfigMap) -> u64), &[("a", "1")], "y", vec![])]
    #[case::significant_change(Some(value_hash as fn(&ConfigMap) -> u64), &[("a", "1")], "yy", vec![pairs(&[("a", "1")])])]
    #[case::relabel_requeues_old_and_new_owners(Some(value_hash as fn(&ConfigMap) -> u64), &[("a", "2")], "x", vec![pairs(&[("a", "1")]), pairs(&[("a", "2")])])]
    fn an_update_requeues_owners_when_it_matters(
        #[case] significance: Option<fn(&ConfigMap) -> u64>,
        #[case] labels: &[(&str, &str)],
        #[case] data: &str,
        #[case] expected: Vec<BTreeMap<String, String>>,
    ) {
        let requeued = requeued_after(
            config_map(&[("a", "1")], "x"),
            watcher::Event::Apply(config_map(labels, data)),
            significance,
        );
        assert_eq!(requeued, expected);
    }

    #[test]
    fn a_deletion_requeues_the_owners() {
        let requeued = requeued_after(
            config_map(&[("a", "1")], "x"),
            watcher::Event::Delete(config_map(&[("a", "1")], "x")),
            Some(value_hash),
        );
        assert_eq!(requeued, vec![pairs(&[("a", "1")])]);
    }

    #[test]
    fn a_relist_requeues_once_it_is_done_and_names_objects_deleted_while_the_watch_was_down() {
        let mut state = RequeueState::default();
        let significance = Some(value_hash as fn(&ConfigMap) -> u64);
        let mut other = config_map(&[("b", "2")], "x");
        other.metadata.name = Some("other".to_owned());
        for object in [config_map(&[("a", "1")], "x"), other] {
            requeue_objects(&mut state, watcher::Event::Apply(object), significance);
        }
        assert!(requeue_objects(&mut state, watcher::Event::Init, significance).is_empty());
        let changed = config_map(&[("a", "1")], "changed while down");
        assert!(
            requeue_objects(&mut state, watcher::Event::InitApply(changed), significance)
                .is_empty(),
            "nothing is requeued before the store holds the new list"
        );
        let requeued: Vec<(Option<String>, BTreeMap<String, String>)> =
            requeue_objects(&mut state, watcher::Event::InitDone, significance)
                .into_iter()
                .map(|object| {
                    (
                        object.metadata.name,
                        object.metadata.labels.unwrap_or_default(),
                    )
                })
                .collect();
        assert_eq!(
            requeued,
            [
                (Some("catalog".to_owned()), pairs(&[("a", "1")])),
                (Some("other".to_owned()), pairs(&[("b", "2")])),
            ],
            "the changed object, then a stand-in for the one deleted while the watch was down"
        );
        assert!(
            !state
                .seen
                .contains_key(&("default".to_owned(), "other".to_owned()))
        );
    }

    fn unreadable() -> Guarded<ConfigMap> {
        Guarded(Err(crate::guard::Unreadable {
            metadata: config_map(&[], "").metadata,
            error: "data: invalid type".to_owned(),
            conditions: Vec::new(),
        }))
    }

    /// What [`readable`] makes of `event` when the cache holds `cached`: `None` when
    /// the event is left out, else the event's kind and the object's `value`.
    fn readable_of(
        event: watcher::Event<Guarded<ConfigMap>>,
        cached: Option<ConfigMap>,
    ) -> Option<(&'static str, String)> {
        let value = |object: ConfigMap| {
            object
                .data
                .and_then(|data| data.get("value").cloned())
                .unwrap_or_default()
        };
        readable(event, |_| cached.clone()).map(|event| match event {
            watcher::Event::Apply(object) => ("Apply", value(object)),
            watcher::Event::InitApply(object) => ("InitApply", value(object)),
            watcher::Event::Delete(object) => ("Delete", value(object)),
            watcher::Event::Init => ("Init", String::new()),
            watcher::Event::InitDone => ("InitDone", String::new()),
        })
    }

    #[rstest]
    #[case::a_readable_update_passes(
        watcher::Event::Apply(Guarded(Ok(config_map(&[], "new")))), Some("old"), Some(("Apply", "new")))]
    #[case::an_unreadable_update_keeps_the_last_readable_version(
        watcher::Event::Apply(unreadable()),
        Some("old"),
        None
    )]
    #[case::an_unreadable_object_in_a_relist_is_left_out(
        watcher::Event::InitApply(unreadable()),
        None,
        None
    )]
    #[case::a_readable_deletion_passes(
        watcher::Event::Delete(Guarded(Ok(config_map(&[], "new")))), Some("old"), Some(("Delete", "new")))]
    #[case::an_unreadable_deletion_removes_the_last_readable_version(
        watcher::Event::Delete(unreadable()), Some("old"), Some(("Delete", "old")))]
    #[case::an_unreadable_deletion_of_an_object_never_read_is_left_out(
        watcher::Event::Delete(unreadable()),
        None,
        None
    )]
    fn unreadable_objects_leave_the_cache_when_deleted(
        #[case] event: watcher::Event<Guarded<ConfigMap>>,
        #[case] cached: Option<&str>,
        #[case] expected: Option<(&str, &str)>,
    ) {
        let cached = cached.map(|value| config_map(&[], value));
        let actual = readable_of(event, cached);
        assert_eq!(
            actual.as_ref().map(|(kind, value)| (*kind, value.as_str())),
            expected
        );
    }
}

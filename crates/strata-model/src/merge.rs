//! Field-by-field merging of configuration fragments.
//!
//! Users may set the same setting at role and at role group level, and the product has a
//! default for it. [`Merge`] combines such layers so the most specific layer wins for each
//! field on its own, not for the whole struct: a role group that only sets `tickTime`
//! still inherits `initLimit` from its role.
//!
//! Rules:
//! - `Option<T>`: a `Some` in the higher-priority layer is kept as is; only `None` is
//!   filled from the lower layer. Values inside an `Option` are atomic.
//! - Atomic values (`String`, numbers, `bool`): the higher-priority value always wins.
//! - `BTreeMap<K, V>`: the union of both maps; for a key present in both, the values are
//!   merged with `V`'s own rule, so maps of maps merge per inner key.
//! - `PodTemplateSpec`: Kubernetes' strategic deep merge (containers merge by name, ...)
//!   with the higher-priority template winning.
//! - Structs: [`merge_struct!`](crate::merge_struct) merges each listed field. To merge a
//!   nested fragment deeply, make it a plain field (with `#[serde(default)]`) rather than
//!   an `Option`, because an `Option` replaces its content as a whole.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::PodTemplateSpec;

/// A configuration layer that can be completed from a lower-priority layer.
///
/// `merge_from` mutates `self`, the higher-priority layer, in place; calling it again with
/// an even lower layer extends the precedence chain:
///
/// ```
/// use strata_model::merge::Merge;
///
/// #[derive(Clone, Debug, Default, PartialEq)]
/// struct ServerConfig {
///     tick_time_ms: Option<u32>,
///     init_limit: Option<u32>,
/// }
/// strata_model::merge_struct!(ServerConfig { tick_time_ms, init_limit });
///
/// let product_default = ServerConfig { tick_time_ms: Some(3000), init_limit: Some(5) };
/// let role = ServerConfig { tick_time_ms: None, init_limit: Some(10) };
/// let mut role_group = ServerConfig { tick_time_ms: Some(2000), init_limit: None };
///
/// role_group.merge_from(&role);
/// role_group.merge_from(&product_default);
/// assert_eq!(role_group, ServerConfig { tick_time_ms: Some(2000), init_limit: Some(10) });
/// ```
/// A merged field that the product's default set leaves empty: the defaults are
/// incomplete, which is the operator's bug, not the user's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field} has no value although the product defaults must set it; this is an operator bug")]
pub struct MissingDefault {
    /// The field, as users write it.
    pub field: &'static str,
}

/// The value of a merged field that the product defaults guarantee. Validation reads
/// every field through this, so a default exists in exactly one place: the product's
/// default set, never again as a fallback at the place of use.
pub fn defaulted<T: Clone>(field: &'static str, value: &Option<T>) -> Result<T, MissingDefault> {
    value.clone().ok_or(MissingDefault { field })
}

pub trait Merge {
    /// Fills whatever `self` leaves unset from `lower_priority`; `self` wins conflicts.
    fn merge_from(&mut self, lower_priority: &Self);
}

impl<T: Clone> Merge for Option<T> {
    fn merge_from(&mut self, lower_priority: &Self) {
        if self.is_none() {
            self.clone_from(lower_priority);
        }
    }
}

impl<K: Ord + Clone, V: Merge + Clone> Merge for BTreeMap<K, V> {
    fn merge_from(&mut self, lower_priority: &Self) {
        for (key, lower_value) in lower_priority {
            match self.get_mut(key) {
                Some(value) => value.merge_from(lower_value),
                None => {
                    self.insert(key.clone(), lower_value.clone());
                }
            }
        }
    }
}

impl Merge for PodTemplateSpec {
    fn merge_from(&mut self, lower_priority: &Self) {
        let mut merged = lower_priority.clone();
        k8s_openapi::DeepMerge::merge_from(&mut merged, std::mem::take(self));
        *self = merged;
    }
}

/// Implements [`Merge`] for types whose value is indivisible: the higher layer wins.
macro_rules! atomic_merge {
    ($($ty:ty),* $(,)?) => {
        $(
            impl Merge for $ty {
                /// Atomic: the higher-priority value is kept unchanged.
                fn merge_from(&mut self, _lower_priority: &Self) {}
            }
        )*
    };
}

atomic_merge!(String, bool, u8, u16, u32, u64, i8, i16, i32, i64, f32, f64);

/// Implements [`Merge`] for a struct by merging each listed field.
///
/// Every field must implement [`Merge`] itself (an `Option`, a map, or another merged
/// struct). List every field: a field left out would silently keep only the highest
/// layer's value, so prefer listing all of them.
///
/// ```
/// use std::collections::BTreeMap;
/// use strata_model::merge::Merge;
///
/// #[derive(Clone, Debug, Default, PartialEq)]
/// struct Resources { cpu: Option<String>, memory: Option<String> }
/// strata_model::merge_struct!(Resources { cpu, memory });
///
/// #[derive(Clone, Debug, Default, PartialEq)]
/// struct Config { resources: Resources, jvm_args: Option<Vec<String>> }
/// strata_model::merge_struct!(Config { resources, jvm_args });
///
/// let role = Config { resources: Resources { cpu: Some("1".into()), memory: Some("2Gi".into()) }, jvm_args: None };
/// let mut group = Config { resources: Resources { cpu: Some("4".into()), memory: None }, jvm_args: None };
/// group.merge_from(&role);
/// assert_eq!(group.resources, Resources { cpu: Some("4".into()), memory: Some("2Gi".into()) });
/// ```
#[macro_export]
macro_rules! merge_struct {
    ($ty:ty { $($field:ident),* $(,)? }) => {
        impl $crate::merge::Merge for $ty {
            fn merge_from(&mut self, lower_priority: &Self) {
                $( $crate::merge::Merge::merge_from(&mut self.$field, &lower_priority.$field); )*
            }
        }
    };
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use k8s_openapi::api::core::v1::{Container, PodSpec};
    use rstest::rstest;

    use super::*;

    #[derive(Clone, Debug, Default, PartialEq)]
    struct Fragment {
        a: Option<u32>,
        b: Option<String>,
        nested: Nested,
    }

    #[derive(Clone, Debug, Default, PartialEq)]
    struct Nested {
        c: Option<bool>,
    }

    crate::merge_struct!(Fragment { a, b, nested });
    crate::merge_struct!(Nested { c });

    fn fragment(a: Option<u32>, b: Option<&str>, c: Option<bool>) -> Fragment {
        Fragment {
            a,
            b: b.map(str::to_owned),
            nested: Nested { c },
        }
    }

    /// Merges `role_group <- role <- default` and returns the result.
    fn chain<T: Merge + Clone>(role_group: &T, role: &T, default: &T) -> T {
        let mut merged = role_group.clone();
        merged.merge_from(role);
        merged.merge_from(default);
        merged
    }

    #[rstest]
    #[case::only_default(
        fragment(None, None, None),
        fragment(None, None, None),
        fragment(Some(1), Some("d"), Some(true)),
        fragment(Some(1), Some("d"), Some(true))
    )]
    #[case::role_beats_default(
        fragment(None, None, None),
        fragment(Some(2), Some("r"), Some(false)),
        fragment(Some(1), Some("d"), Some(true)),
        fragment(Some(2), Some("r"), Some(false))
    )]
    #[case::role_group_beats_role_and_default(
        fragment(Some(3), Some("g"), Some(true)),
        fragment(Some(2), Some("r"), Some(false)),
        fragment(Some(1), Some("d"), None),
        fragment(Some(3), Some("g"), Some(true))
    )]
    #[case::field_by_field_mix(
        fragment(Some(3), None, None),
        fragment(None, Some("r"), None),
        fragment(Some(1), Some("d"), Some(false)),
        fragment(Some(3), Some("r"), Some(false))
    )]
    #[case::nested_field_from_role(
        fragment(Some(3), None, None),
        fragment(None, None, Some(true)),
        fragment(None, None, Some(false)),
        fragment(Some(3), None, Some(true))
    )]
    #[case::nothing_anywhere(
        fragment(None, None, None),
        fragment(None, None, None),
        fragment(None, None, None),
        fragment(None, None, None)
    )]
    fn struct_precedence(
        #[case] role_group: Fragment,
        #[case] role: Fragment,
        #[case] default: Fragment,
        #[case] expected: Fragment,
    ) {
        assert_eq!(chain(&role_group, &role, &default), expected);
    }

    #[rstest]
    #[case::some_is_kept(Some(vec![1]), Some(vec![2, 3]), Some(vec![1]))]
    #[case::none_is_filled(None, Some(vec![2, 3]), Some(vec![2, 3]))]
    #[case::empty_vec_is_a_value(Some(vec![]), Some(vec![2]), Some(vec![]))]
    #[case::both_none(None, None, None)]
    fn option_is_atomic(
        #[case] mut higher: Option<Vec<u8>>,
        #[case] lower: Option<Vec<u8>>,
        #[case] expected: Option<Vec<u8>>,
    ) {
        higher.merge_from(&lower);
        assert_eq!(higher, expected);
    }

    fn map(entries: &[(&str, &str)]) -> BTreeMap<String, String> {
        entries
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[rstest]
    #[case::union_of_disjoint_keys(map(&[("a", "1")]), map(&[("b", "2")]), map(&[("a", "1"), ("b", "2")]))]
    #[case::higher_wins_per_key(map(&[("a", "1")]), map(&[("a", "9"), ("b", "2")]), map(&[("a", "1"), ("b", "2")]))]
    #[case::empty_higher_takes_all(map(&[]), map(&[("a", "9")]), map(&[("a", "9")]))]
    #[case::empty_lower_changes_nothing(map(&[("a", "1")]), map(&[]), map(&[("a", "1")]))]
    #[case::empty_string_is_a_value(map(&[("a", "")]), map(&[("a", "9")]), map(&[("a", "")]))]
    fn flat_map_precedence(
        #[case] mut higher: BTreeMap<String, String>,
        #[case] lower: BTreeMap<String, String>,
        #[case] expected: BTreeMap<String, String>,
    ) {
        higher.merge_from(&lower);
        assert_eq!(higher, expected);
    }

    #[test]
    fn map_of_maps_merges_per_inner_key() {
        let mut role_group = BTreeMap::from([("zoo.cfg".to_owned(), map(&[("tickTime", "2000")]))]);
        let role = BTreeMap::from([
            (
                "zoo.cfg".to_owned(),
                map(&[("tickTime", "3000"), ("initLimit", "10")]),
            ),
            (
                "log4j.properties".to_owned(),
                map(&[("rootLogger", "INFO")]),
            ),
        ]);
        role_group.merge_from(&role);
        assert_eq!(
            role_group,
            BTreeMap::from([
                (
                    "log4j.properties".to_owned(),
                    map(&[("rootLogger", "INFO")])
                ),
                (
                    "zoo.cfg".to_owned(),
                    map(&[("initLimit", "10"), ("tickTime", "2000")])
                ),
            ])
        );
    }

    fn template(containers: Vec<Container>, service_account: Option<&str>) -> PodTemplateSpec {
        PodTemplateSpec {
            metadata: None,
            spec: Some(PodSpec {
                containers,
                service_account_name: service_account.map(str::to_owned),
                ..PodSpec::default()
            }),
        }
    }

    fn container(name: &str, image: Option<&str>, args: Option<Vec<&str>>) -> Container {
        Container {
            name: name.to_owned(),
            image: image.map(str::to_owned),
            args: args.map(|args| args.into_iter().map(str::to_owned).collect()),
            ..Container::default()
        }
    }

    #[test]
    fn pod_template_higher_layer_wins_and_containers_merge_by_name() {
        let mut role_group = template(vec![container("main", Some("group:1"), None)], None);
        let role = template(
            vec![
                container("main", Some("role:1"), Some(vec!["--verbose"])),
                container("sidecar", Some("side:1"), None),
            ],
            Some("role-sa"),
        );
        role_group.merge_from(&role);
        let spec = role_group.spec.unwrap();
        assert_eq!(spec.service_account_name.as_deref(), Some("role-sa"));
        assert_eq!(
            spec.containers,
            vec![
                container("main", Some("group:1"), Some(vec!["--verbose"])),
                container("sidecar", Some("side:1"), None),
            ]
        );
    }

    #[test]
    fn empty_pod_template_takes_lower_layer() {
        let mut higher = PodTemplateSpec::default();
        let lower = template(vec![container("main", Some("x"), None)], Some("sa"));
        higher.merge_from(&lower);
        assert_eq!(higher, lower);
    }
}

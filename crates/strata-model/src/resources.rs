//! `config.resources` of every role: CPU, memory and the product's volumes, as users
//! write them (every field optional, merged role group over role over product
//! defaults), and validated into values with nothing left optional.
//!
//! The shape is the same in every operator, `{cpu: {min, max}, memory: {limit},
//! storage: {<volume>: {capacity, storageClass}}}`; only the set of volumes is the
//! product's (`S`): ZooKeeper has `data`, HDFS datanodes have several data dirs.
//! Memory is one value, request and limit alike, because a JVM's heap is sized from it
//! and a pod whose memory may be taken back is a pod whose heap may be killed.

use std::fmt::Debug;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};

use crate::merge::Merge;
use crate::merge_struct;
use crate::quantity::{canonical, parse_milli};

const MIB: u128 = 1024 * 1024;

/// CPU, memory and the volumes `S` of one server of a role group.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
#[schemars(bound = "S: JsonSchema + Default + Serialize")]
pub struct Resources<S> {
    /// CPU request (`min`) and limit (`max`).
    #[serde(default, skip_serializing_if = "CpuResources::is_empty")]
    pub cpu: CpuResources,
    /// Memory request and limit; the JVM heap is a share of it.
    #[serde(default, skip_serializing_if = "MemoryResources::is_empty")]
    pub memory: MemoryResources,
    /// Persistent volumes of each server.
    #[serde(default)]
    pub storage: S,
}

impl<S> Resources<S> {
    /// Product defaults: CPU request `cpu_min` and limit `cpu_max`, memory `memory`,
    /// and `storage`; every value a Kubernetes quantity such as `250m` or `1Gi`.
    pub fn defaults(cpu_min: &str, cpu_max: &str, memory: &str, storage: S) -> Self {
        let quantity = |value: &str| Some(Quantity(value.to_owned()));
        Self {
            cpu: CpuResources {
                min: quantity(cpu_min),
                max: quantity(cpu_max),
            },
            memory: MemoryResources {
                limit: quantity(memory),
            },
            storage,
        }
    }
}

impl<S: Merge> Merge for Resources<S> {
    fn merge_from(&mut self, lower_priority: &Self) {
        self.cpu.merge_from(&lower_priority.cpu);
        self.memory.merge_from(&lower_priority.memory);
        self.storage.merge_from(&lower_priority.storage);
    }
}

/// The storage of a product without persistent volumes, such as a stateless web
/// server: `resources.storage` stays an empty object.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
pub struct NoStorage {}

impl Merge for NoStorage {
    fn merge_from(&mut self, _lower_priority: &Self) {}
}

/// CPU of one server.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CpuResources {
    /// CPU the scheduler reserves (the request), such as `250m`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "quantity_schema")]
    pub min: Option<Quantity>,
    /// CPU the server may use at most (the limit), such as `1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "quantity_schema")]
    pub max: Option<Quantity>,
}

merge_struct!(CpuResources { min, max });

impl CpuResources {
    /// Whether nothing is set, so an empty object is left out of serialised specs.
    pub fn is_empty(&self) -> bool {
        self.min.is_none() && self.max.is_none()
    }
}

/// Memory of one server.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct MemoryResources {
    /// Memory request and limit, such as `1Gi`. The JVM heap is a share of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "quantity_schema")]
    pub limit: Option<Quantity>,
}

merge_struct!(MemoryResources { limit });

impl MemoryResources {
    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        self.limit.is_none()
    }
}

/// One PersistentVolumeClaim template.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PvcResources {
    /// Requested size, such as `1Gi`. Kubernetes cannot change it for existing Pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "quantity_schema")]
    pub capacity: Option<Quantity>,
    /// StorageClass of the claim; the cluster's default class when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_class: Option<String>,
}

merge_struct!(PvcResources {
    capacity,
    storage_class
});

impl PvcResources {
    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        self.capacity.is_none() && self.storage_class.is_none()
    }
}

/// Schema of a Kubernetes quantity (`250m`, `1Gi`, `2`): a number or a string, as
/// Kubernetes' own resource fields accept. Shorter than k8s-openapi's schema, whose
/// multi-kilobyte description would be repeated for every field.
pub fn quantity_schema(_generator: &mut SchemaGenerator) -> Schema {
    schemars::json_schema!({ "x-kubernetes-int-or-string": true })
}

/// What a product says about memory: how much of it the heap gets, and the least
/// memory its process can start with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeapRule {
    /// Share of the memory limit given to the JVM heap, in percent.
    pub heap_percent: u64,
    /// Smallest memory limit accepted, in MiB.
    pub min_memory_mib: u64,
    /// The least memory left outside the heap, in MiB: what the JVM's metaspace,
    /// code cache, threads, garbage collector and direct buffers take, measured for
    /// the product. Near the smallest limits it caps the heap below `heap_percent`.
    pub non_heap_reserve_mib: u64,
}

/// CPU and memory of one server, checked, in the canonical form the API server
/// stores (so the apply step's comparison sees no difference where there is none).
#[derive(Clone, Debug, PartialEq)]
pub struct ValidatedResources {
    /// CPU request.
    pub cpu_min: Quantity,
    /// CPU limit.
    pub cpu_max: Quantity,
    /// Memory request and limit.
    pub memory_limit: Quantity,
    /// JVM heap in MiB, by the product's [`HeapRule`].
    pub heap_mib: u64,
}

/// One volume, checked and in canonical form.
#[derive(Clone, Debug, PartialEq)]
pub struct ValidatedPvc {
    /// Requested size.
    pub capacity: Quantity,
    /// StorageClass, if set.
    pub storage_class: Option<String>,
}

/// Why resources are invalid; each variant's name is the condition reason.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, strum::IntoStaticStr)]
pub enum ResourceError {
    /// A quantity that does not parse, or a field the defaults should have filled.
    #[error("resources.{field}: {message}")]
    InvalidQuantity {
        /// The field below `resources`.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// The request exceeds the limit.
    #[error("resources.cpu.min ({min}) exceeds resources.cpu.max ({max})")]
    InvalidCpuRange {
        /// The request as written.
        min: String,
        /// The limit as written.
        max: String,
    },
    /// Less memory than the product can start with.
    #[error("resources.memory.limit ({limit}) is below the minimum of {min_mib}Mi")]
    MemoryLimitTooLow {
        /// The limit as written.
        limit: String,
        /// The product's minimum.
        min_mib: u64,
    },
    /// A volume of no size.
    #[error("resources.storage.{volume}.capacity ({capacity}) must be larger than zero")]
    InvalidStorageCapacity {
        /// The volume's name.
        volume: String,
        /// The capacity as written.
        capacity: String,
    },
}

impl ResourceError {
    /// The condition reason: the variant's name.
    pub fn reason(&self) -> &'static str {
        self.into()
    }
}

fn required<'a>(field: &str, value: &'a Option<Quantity>) -> Result<&'a Quantity, ResourceError> {
    value
        .as_ref()
        .ok_or_else(|| ResourceError::InvalidQuantity {
            field: field.to_owned(),
            message: "no value and no product default".to_owned(),
        })
}

fn milli(field: &str, quantity: &Quantity) -> Result<u128, ResourceError> {
    parse_milli(&quantity.0).map_err(|error| ResourceError::InvalidQuantity {
        field: field.to_owned(),
        message: error.to_string(),
    })
}

fn in_canonical_form(field: &str, quantity: &Quantity) -> Result<Quantity, ResourceError> {
    canonical(&quantity.0)
        .map(Quantity)
        .map_err(|error| ResourceError::InvalidQuantity {
            field: field.to_owned(),
            message: error.to_string(),
        })
}

impl<S> Resources<S> {
    /// Checks CPU and memory of merged resources (every field filled by the product
    /// defaults) and derives the heap by `rule`.
    pub fn validate(&self, rule: HeapRule) -> Result<ValidatedResources, ResourceError> {
        let cpu_min = required("cpu.min", &self.cpu.min)?;
        let cpu_max = required("cpu.max", &self.cpu.max)?;
        if milli("cpu.min", cpu_min)? > milli("cpu.max", cpu_max)? {
            return Err(ResourceError::InvalidCpuRange {
                min: cpu_min.0.clone(),
                max: cpu_max.0.clone(),
            });
        }
        let memory_limit = required("memory.limit", &self.memory.limit)?;
        let memory_bytes = milli("memory.limit", memory_limit)? / 1000;
        if memory_bytes < u128::from(rule.min_memory_mib) * MIB {
            return Err(ResourceError::MemoryLimitTooLow {
                limit: memory_limit.0.clone(),
                min_mib: rule.min_memory_mib,
            });
        }
        Ok(ValidatedResources {
            cpu_min: in_canonical_form("cpu.min", cpu_min)?,
            cpu_max: in_canonical_form("cpu.max", cpu_max)?,
            memory_limit: in_canonical_form("memory.limit", memory_limit)?,
            heap_mib: u64::try_from(
                (memory_bytes * u128::from(rule.heap_percent) / 100 / MIB).min(
                    (memory_bytes / MIB).saturating_sub(u128::from(rule.non_heap_reserve_mib)),
                ),
            )
            .unwrap_or(u64::MAX),
        })
    }
}

impl PvcResources {
    /// Checks the volume `volume` (merged over the product default).
    pub fn validate(&self, volume: &str) -> Result<ValidatedPvc, ResourceError> {
        let field = format!("storage.{volume}.capacity");
        let capacity = required(&field, &self.capacity)?;
        if milli(&field, capacity)? < 1000 {
            return Err(ResourceError::InvalidStorageCapacity {
                volume: volume.to_owned(),
                capacity: capacity.0.clone(),
            });
        }
        Ok(ValidatedPvc {
            capacity: in_canonical_form(&field, capacity)?,
            storage_class: self.storage_class.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    const RULE: HeapRule = HeapRule {
        heap_percent: 75,
        min_memory_mib: 128,
        non_heap_reserve_mib: 0,
    };

    #[rstest]
    #[case::the_share_where_it_leaves_more_than_the_reserve("4Gi", 3276)]
    #[case::the_limit_less_the_reserve_near_the_smallest_limits("1280Mi", 832)]
    #[case::the_two_meet("2240Mi", 1792)]
    fn the_heap_is_its_share_of_the_limit_but_leaves_the_non_heap_reserve(
        #[case] memory: &str,
        #[case] heap_mib: u64,
    ) {
        let rule = HeapRule {
            heap_percent: 80,
            min_memory_mib: 1280,
            non_heap_reserve_mib: 448,
        };
        let validated = resources("1", "2", memory)
            .validate(rule)
            .expect("valid resources");
        assert_eq!(validated.heap_mib, heap_mib);
    }

    fn resources(cpu_min: &str, cpu_max: &str, memory: &str) -> Resources<()> {
        Resources::defaults(cpu_min, cpu_max, memory, ())
    }

    #[rstest]
    #[case::one_gibibyte(resources("250m", "1", "1Gi"), 768)]
    #[case::canonical_spelling_of_the_same(resources("250m", "1000m", "1024Mi"), 768)]
    #[case::just_above_the_minimum(resources("100m", "100m", "128Mi"), 96)]
    fn heap_is_a_share_of_the_memory_limit(#[case] resources: Resources<()>, #[case] heap: u64) {
        assert_eq!(resources.validate(RULE).map(|r| r.heap_mib), Ok(heap));
    }

    #[test]
    fn quantities_come_out_canonical() {
        let validated = resources("250m", "1000m", "1024Mi").validate(RULE);
        assert_eq!(
            validated.map(|r| (r.cpu_max.0, r.memory_limit.0)),
            Ok(("1".to_owned(), "1Gi".to_owned()))
        );
    }

    #[rstest]
    #[case::cpu_range(resources("2", "1", "1Gi"), "InvalidCpuRange")]
    #[case::memory_too_low(resources("1", "1", "64Mi"), "MemoryLimitTooLow")]
    #[case::not_a_quantity(resources("lots", "1", "1Gi"), "InvalidQuantity")]
    fn invalid_resources_name_their_reason(#[case] resources: Resources<()>, #[case] reason: &str) {
        assert_eq!(
            resources.validate(RULE).err().map(|error| error.reason()),
            Some(reason)
        );
    }

    #[test]
    fn a_missing_default_is_an_invalid_quantity_not_a_panic() {
        let unset: Resources<()> = Resources::default();
        assert_eq!(
            unset.validate(RULE).err().map(|error| error.reason()),
            Some("InvalidQuantity")
        );
    }

    #[rstest]
    #[case::zero(Some("0"), "InvalidStorageCapacity")]
    #[case::garbage(Some("big"), "InvalidQuantity")]
    #[case::unset(None, "InvalidQuantity")]
    fn invalid_volumes(#[case] capacity: Option<&str>, #[case] reason: &str) {
        let pvc = PvcResources {
            capacity: capacity.map(|value| Quantity(value.to_owned())),
            storage_class: None,
        };
        assert_eq!(
            pvc.validate("data").err().map(|error| error.reason()),
            Some(reason)
        );
    }

    #[test]
    fn role_group_settings_win_field_by_field() {
        let mut group = Resources::<PvcResources> {
            cpu: CpuResources {
                max: Some(Quantity("4".to_owned())),
                ..CpuResources::default()
            },
            ..Resources::default()
        };
        group.merge_from(&Resources {
            cpu: CpuResources {
                min: Some(Quantity("1".to_owned())),
                max: Some(Quantity("2".to_owned())),
            },
            memory: MemoryResources {
                limit: Some(Quantity("2Gi".to_owned())),
            },
            storage: PvcResources {
                capacity: Some(Quantity("5Gi".to_owned())),
                storage_class: None,
            },
        });
        assert_eq!(group.cpu.max, Some(Quantity("4".to_owned())));
        assert_eq!(group.cpu.min, Some(Quantity("1".to_owned())));
        assert_eq!(group.memory.limit, Some(Quantity("2Gi".to_owned())));
        assert_eq!(group.storage.capacity, Some(Quantity("5Gi".to_owned())));
    }
}

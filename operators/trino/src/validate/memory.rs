//! Trino 483's own start-up checks of a node's memory, made before anything is applied,
//! so that a setting the server would refuse becomes a condition instead of pods that
//! crash (issue 20, item 7). Both checks were seen failing on the real 483:
//!
//! - every node (`LocalMemoryManager`): `query.max-memory-per-node` plus
//!   `memory.heap-headroom-per-node` may not exceed the heap: "Invalid memory
//!   configuration. The sum of max query memory per node (…) and heap headroom (…)
//!   cannot be larger than the available heap memory (…)". Each defaults to 30% of
//!   the heap;
//! - the coordinator (`ClusterMemoryManager`): `query.max-memory` may not exceed
//!   `query.max-total-memory`: "maxQueryMemory cannot be greater than
//!   maxQueryTotalMemory". The total defaults to twice `query.max-memory` (20GB).

use std::collections::BTreeMap;

use super::HEAP_HEADROOM_PERCENT;

/// The override key of the heap headroom.
pub const HEAP_HEADROOM_KEY: &str = "memory.heap-headroom-per-node";
/// The override key of the cluster-wide total memory of one query.
pub const MAX_TOTAL_MEMORY_KEY: &str = "query.max-total-memory";
/// Trino's default `query.max-memory`.
const DEFAULT_QUERY_MAX_MEMORY: u128 = 20 << 30;
/// Trino's default share of the heap for `query.max-memory-per-node`.
const DEFAULT_PER_NODE_PERCENT: u128 = 30;

/// A node's memory settings, in bytes; `None` where Trino's default applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeMemory {
    /// The heap (`-Xmx`).
    pub heap: u128,
    /// `query.max-memory-per-node`.
    pub per_node: Option<u128>,
    /// `query.max-memory`, read on the coordinator only.
    pub query_max_memory: Option<u128>,
    /// Whether the node is the coordinator.
    pub coordinator: bool,
}

/// Checks `memory` and the `config.properties` overrides of the memory keys Trino
/// checks at start; on failure the reason and the message.
pub fn check_node_memory(
    memory: NodeMemory,
    overrides: &BTreeMap<String, String>,
) -> Result<(), (&'static str, String)> {
    let headroom = override_size(overrides, HEAP_HEADROOM_KEY)?
        .unwrap_or(memory.heap * HEAP_HEADROOM_PERCENT / 100);
    let per_node = memory
        .per_node
        .unwrap_or(memory.heap * DEFAULT_PER_NODE_PERCENT / 100);
    if per_node + headroom > memory.heap {
        return Err((
            "QueryMemoryExceedsHeap",
            format!(
                "the query memory per node ({} MiB) and the heap headroom ({} MiB, \
                 {HEAP_HEADROOM_KEY}) together exceed the heap ({} MiB), which Trino \
                 refuses at start; lower queryMaxMemoryPerNode or the headroom, or raise \
                 resources.memory.limit (heapPercent helps only where the heap is not \
                 capped by the 512 MiB left outside it)",
                per_node >> 20,
                headroom >> 20,
                memory.heap >> 20
            ),
        ));
    }
    if memory.coordinator {
        let query_max = memory.query_max_memory.unwrap_or(DEFAULT_QUERY_MAX_MEMORY);
        if let Some(total) = override_size(overrides, MAX_TOTAL_MEMORY_KEY)?
            && query_max > total
        {
            return Err((
                "InvalidQueryMemory",
                format!(
                    "queryMaxMemory ({} MiB) is more than {MAX_TOTAL_MEMORY_KEY} ({} MiB), \
                     which Trino refuses at start",
                    query_max >> 20,
                    total >> 20
                ),
            ));
        }
    }
    Ok(())
}

/// The override `key` as bytes, if it is set.
fn override_size(
    overrides: &BTreeMap<String, String>,
    key: &str,
) -> Result<Option<u128>, (&'static str, String)> {
    overrides
        .get(key)
        .map(|value| {
            parse_data_size(value).ok_or_else(|| {
                (
                    "InvalidConfigOverride",
                    format!(
                        "configOverrides config.properties {key}: {value:?} is not a Trino \
                         data size (a number and B, kB, MB, GB, TB or PB)"
                    ),
                )
            })
        })
        .transpose()
}

/// A Trino (airlift) data size, such as `800MB` or `1.5GB`, in bytes; each unit is
/// 1024 times the one before, and the unit is case-sensitive.
pub fn parse_data_size(text: &str) -> Option<u128> {
    let text = text.trim();
    let split = text.find(|c: char| c.is_ascii_alphabetic())?;
    let (number, unit) = (text[..split].trim(), text[split..].trim());
    let shift = match unit {
        "B" => 0,
        "kB" => 10,
        "MB" => 20,
        "GB" => 30,
        "TB" => 40,
        "PB" => 50,
        _ => return None,
    };
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty()
        || !whole
            .bytes()
            .chain(fraction.bytes())
            .all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let scale = 10_u128.checked_pow(u32::try_from(fraction.len()).ok()?)?;
    let digits: u128 = format!("{whole}{fraction}").parse().ok()?;
    Some((digits << shift) / scale)
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    const GIB: u128 = 1 << 30;

    #[rstest]
    #[case::bytes("838860800B", Some(838_860_800))]
    #[case::megabytes("800MB", Some(800 << 20))]
    #[case::a_fraction("1.5GB", Some(3 << 29))]
    #[case::kilobytes("1kB", Some(1024))]
    #[case::lower_case_unit("1gb", None)]
    #[case::no_unit("1024", None)]
    #[case::no_number("GB", None)]
    #[case::a_percentage("30%", None)]
    fn data_sizes_read_as_airlift_does(#[case] text: &str, #[case] expected: Option<u128>) {
        assert_eq!(parse_data_size(text), expected);
    }

    /// The cases seen on the real 483 with a 1 GiB heap, and their neighbours.
    #[rstest]
    #[case::defaults(None, None, &[], Ok(()))]
    #[case::headroom_that_fits(None, None, &[(HEAP_HEADROOM_KEY, "700MB")], Ok(()))]
    #[case::headroom_refused_by_483(None, None, &[(HEAP_HEADROOM_KEY, "800MB")], Err("QueryMemoryExceedsHeap"))]
    #[case::per_node_and_headroom(Some(600 << 20), None, &[(HEAP_HEADROOM_KEY, "500MB")], Err("QueryMemoryExceedsHeap"))]
    #[case::not_a_size(None, None, &[(HEAP_HEADROOM_KEY, "lots")], Err("InvalidConfigOverride"))]
    #[case::total_below_the_default_query_memory(None, None, &[(MAX_TOTAL_MEMORY_KEY, "1GB")], Err("InvalidQueryMemory"))]
    #[case::total_above_query_memory(None, Some(GIB), &[(MAX_TOTAL_MEMORY_KEY, "2GB")], Ok(()))]
    #[case::total_below_query_memory(None, Some(2 * GIB), &[(MAX_TOTAL_MEMORY_KEY, "1GB")], Err("InvalidQueryMemory"))]
    fn a_coordinator_is_refused_what_483_refuses(
        #[case] per_node: Option<u128>,
        #[case] query_max_memory: Option<u128>,
        #[case] overrides: &[(&str, &str)],
        #[case] expected: Result<(), &str>,
    ) {
        let memory = NodeMemory {
            heap: GIB,
            per_node,
            query_max_memory,
            coordinator: true,
        };
        let overrides = overrides
            .iter()
            .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
            .collect();
        assert_eq!(
            check_node_memory(memory, &overrides).map_err(|(reason, _)| reason),
            expected
        );
    }

    #[test]
    fn a_worker_does_not_read_the_total_memory() {
        let memory = NodeMemory {
            heap: GIB,
            per_node: None,
            query_max_memory: None,
            coordinator: false,
        };
        let overrides = BTreeMap::from([(MAX_TOTAL_MEMORY_KEY.to_owned(), "1GB".to_owned())]);
        assert_eq!(check_node_memory(memory, &overrides), Ok(()));
    }
}

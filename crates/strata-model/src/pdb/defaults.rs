//! Product defaults for `maxUnavailable`, one pure function per role.
//!
//! These are the values the Stackable operators ship (ADR030). Quorum-based roles
//! (ZooKeeper servers, HDFS journalnodes) and singletons in HA pairs (namenodes, Trino
//! coordinators) may lose at most one Pod. Roles that scale out compute a budget from
//! their size so large clusters still roll in reasonable time.

/// ZooKeeper servers: one at a time, so a quorum of an odd-sized ensemble survives.
pub const fn zookeeper_servers() -> u16 {
    1
}

/// HDFS namenodes: one at a time, so the standby can take over from the active one.
pub const fn hdfs_namenodes() -> u16 {
    1
}

/// HDFS journalnodes: one at a time, so the edit-log quorum survives.
pub const fn hdfs_journalnodes() -> u16 {
    1
}

/// HDFS datanodes: `max(min(dfsReplication - 2, datanodes - 2), 1)`.
///
/// Taking down `dfsReplication - 1` datanodes could make a block with all replicas on
/// those nodes unavailable; keeping two replicas' worth of headroom avoids that, and the
/// `datanodes - 2` term keeps small clusters from draining most of their nodes. The result
/// is never below 1, because a budget of 0 would block every node drain. Subtraction
/// saturates at 0, so a replication factor or datanode count of 0 or 1 yields 1.
///
/// ```
/// assert_eq!(strata_model::pdb::defaults::hdfs_datanodes(3, 10), 1);
/// assert_eq!(strata_model::pdb::defaults::hdfs_datanodes(5, 10), 3);
/// ```
pub fn hdfs_datanodes(dfs_replication: u16, datanodes: u16) -> u16 {
    dfs_replication
        .saturating_sub(2)
        .min(datanodes.saturating_sub(2))
        .max(1)
}

/// Trino coordinators: one at a time.
pub const fn trino_coordinators() -> u16 {
    1
}

/// Trino workers: a tenth of the workers (rounded down), at least 1.
///
/// Graceful worker shutdown waits for running queries, so a rolling restart of a large
/// fleet one Pod at a time could take hours; ten percent keeps most capacity online while
/// bounding the rollout time.
pub fn trino_workers(workers: u16) -> u16 {
    (workers / 10).max(1)
}

/// Superset nodes: one at a time, so a multi-replica web tier keeps serving.
pub const fn superset_nodes() -> u16 {
    1
}

/// Superset's Celery workers: a tenth of the workers (rounded down), at least 1.
///
/// A worker stops with a warm shutdown, finishing the tasks it runs (reports render for
/// minutes), so one pod at a time would roll a large pool for hours; the rest of the
/// pool keeps taking tasks meanwhile, as Trino's workers keep taking queries.
pub fn superset_workers(workers: u16) -> u16 {
    (workers / 10).max(1)
}

/// Superset's Celery beat: its one pod may go. A budget of 0 would block every drain of
/// its node, and the StatefulSet brings it back on another; the periodic tasks it
/// misses meanwhile are sent at its next tick.
pub const fn superset_beat() -> u16 {
    1
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case::zero_datanodes_replication_3(3, 0, 1)]
    #[case::one_datanode_replication_1(1, 1, 1)]
    #[case::one_datanode_replication_3(3, 1, 1)]
    #[case::two_datanodes_replication_2(2, 2, 1)]
    #[case::three_datanodes_replication_0(0, 3, 1)]
    #[case::three_datanodes_replication_1(1, 3, 1)]
    #[case::three_datanodes_replication_3(3, 3, 1)]
    #[case::four_datanodes_replication_3(3, 4, 1)]
    #[case::five_datanodes_replication_5(5, 5, 3)]
    #[case::ten_datanodes_replication_3(3, 10, 1)]
    #[case::ten_datanodes_replication_4(4, 10, 2)]
    #[case::ten_datanodes_replication_5(5, 10, 3)]
    #[case::four_datanodes_replication_5(5, 4, 2)]
    #[case::three_datanodes_replication_5(5, 3, 1)]
    #[case::hundred_datanodes_replication_10(10, 100, 8)]
    #[case::max_datanodes_max_replication(u16::MAX, u16::MAX, u16::MAX - 2)]
    #[case::max_datanodes_replication_3(3, u16::MAX, 1)]
    fn hdfs_datanodes_default(
        #[case] replication: u16,
        #[case] datanodes: u16,
        #[case] expected: u16,
    ) {
        assert_eq!(hdfs_datanodes(replication, datanodes), expected);
    }

    #[rstest]
    #[case::zero_workers(0, 1)]
    #[case::one_worker(1, 1)]
    #[case::two_workers(2, 1)]
    #[case::nine_workers(9, 1)]
    #[case::ten_workers(10, 1)]
    #[case::nineteen_workers(19, 1)]
    #[case::twenty_workers(20, 2)]
    #[case::fifty_five_workers(55, 5)]
    #[case::hundred_workers(100, 10)]
    #[case::max_workers(u16::MAX, 6553)]
    fn trino_workers_default(#[case] workers: u16, #[case] expected: u16) {
        assert_eq!(trino_workers(workers), expected);
    }

    #[rstest]
    #[case::zero_workers(0, 1)]
    #[case::one_worker(1, 1)]
    #[case::nine_workers(9, 1)]
    #[case::ten_workers(10, 1)]
    #[case::twenty_workers(20, 2)]
    #[case::hundred_workers(100, 10)]
    fn superset_workers_default(#[case] workers: u16, #[case] expected: u16) {
        assert_eq!(superset_workers(workers), expected);
    }

    #[rstest]
    #[case::zookeeper_servers(zookeeper_servers(), 1)]
    #[case::hdfs_namenodes(hdfs_namenodes(), 1)]
    #[case::hdfs_journalnodes(hdfs_journalnodes(), 1)]
    #[case::trino_coordinators(trino_coordinators(), 1)]
    #[case::superset_nodes(superset_nodes(), 1)]
    #[case::superset_beat(superset_beat(), 1)]
    fn fixed_defaults(#[case] actual: u16, #[case] expected: u16) {
        assert_eq!(actual, expected);
    }
}

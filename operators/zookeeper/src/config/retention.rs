//! How much disk ZooKeeper's snapshots and transaction logs can take, and the defaults
//! that keep the default 1 GiB volume from filling up.
//!
//! ZooKeeper writes every change to a transaction log and, after `snapCount / 2` to
//! `snapCount` changes (randomised per server) or once the log holds `snapSizeLimitInKb`,
//! takes a snapshot of its data tree and starts a new log. Logs grow in preallocated
//! blocks of `preAllocSize`. Nothing is deleted until the autopurge runs: every
//! `autopurge.purgeInterval` hours it keeps the newest `autopurge.snapRetainCount`
//! snapshots and the logs they need, and deletes the rest.
//!
//! So just before a purge a server holds the retained snapshot/log pairs, the pair in
//! progress, and one pair per roll since the last purge. [`Retention::worst_case_disk_mib`]
//! adds that up with every roll at its earliest and every log at its largest.
//!
//! ZooKeeper's own sizes (64 MB preallocation, a 4 GB log limit) with the daily purge
//! the operator used before can fill 1 GiB at one write per second of 1 KiB. The
//! operator's defaults purge hourly and cap each log at 64 MiB in 16 MiB blocks, which
//! holds 40 writes per second of 1 KiB with a 32 MiB data tree within 90% of 1 GiB
//! (see the tests).

/// The retention settings the operator writes into `zoo.cfg`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retention {
    /// `autopurge.purgeInterval`: hours between purges.
    pub purge_interval_hours: u32,
    /// `autopurge.snapRetainCount`: snapshots (with their logs) each purge keeps.
    pub snap_retain_count: u32,
    /// `snapCount`: changes after which a server rolls, at the latest.
    pub snap_count: u32,
    /// `preAllocSize` in MiB: the block a log file grows by.
    pub pre_alloc_mib: u32,
    /// `snapSizeLimitInKb` in MiB: log size after which a server rolls.
    pub snap_size_limit_mib: u32,
}

impl Retention {
    /// The operator's defaults.
    pub const DEFAULT: Self = Self {
        purge_interval_hours: 1,
        snap_retain_count: 3,
        snap_count: 100_000,
        pre_alloc_mib: 16,
        snap_size_limit_mib: 64,
    };

    /// `zoo.cfg` entries for these settings.
    pub fn entries(self) -> [(&'static str, String); 5] {
        [
            (
                "autopurge.purgeInterval",
                self.purge_interval_hours.to_string(),
            ),
            (
                "autopurge.snapRetainCount",
                self.snap_retain_count.to_string(),
            ),
            ("snapCount", self.snap_count.to_string()),
            (
                "preAllocSize",
                (u64::from(self.pre_alloc_mib) * 1024).to_string(),
            ),
            (
                "snapSizeLimitInKb",
                (u64::from(self.snap_size_limit_mib) * 1024).to_string(),
            ),
        ]
    }

    /// The most disk one server's snapshots and logs can take under `load`, just
    /// before a purge, in MiB.
    pub fn worst_case_disk_mib(self, load: WriteLoad) -> u64 {
        let txn_kib = u64::from(load.txn_kib.max(1));
        let size_limit_kib = u64::from(self.snap_size_limit_mib) * 1024;
        // A roll comes after snapCount / 2 changes at the earliest, or when the log
        // reaches the size limit, whichever is first.
        let earliest_roll = (u64::from(self.snap_count) / 2)
            .min(size_limit_kib / txn_kib)
            .max(1);
        let largest_log_kib = (u64::from(self.snap_count) * txn_kib).min(size_limit_kib + txn_kib);
        let block_kib = u64::from(self.pre_alloc_mib.max(1)) * 1024;
        let log_mib = largest_log_kib.div_ceil(block_kib) * block_kib / 1024;
        let writes =
            u64::from(load.writes_per_second) * u64::from(self.purge_interval_hours) * 3600;
        let rolls = writes.div_ceil(earliest_roll);
        let pairs = u64::from(self.snap_retain_count) + 1 + rolls;
        pairs * (u64::from(load.data_tree_mib) + log_mib)
    }
}

/// A sustained write load on the ensemble (every server logs every change).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteLoad {
    /// Changes per second.
    pub writes_per_second: u32,
    /// Average size of one change in the log, in KiB.
    pub txn_kib: u32,
    /// Size of the data tree, and so of one snapshot, in MiB.
    pub data_tree_mib: u32,
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    /// The default volume, less a tenth for the file system and `myid`.
    const USABLE_OF_ONE_GIB: u64 = 1024 * 9 / 10;

    /// The previous defaults: ZooKeeper's own sizes and a daily purge.
    const PREVIOUS: Retention = Retention {
        purge_interval_hours: 24,
        snap_retain_count: 3,
        snap_count: 100_000,
        pre_alloc_mib: 64,
        snap_size_limit_mib: 4096,
    };

    fn load(writes_per_second: u32, txn_kib: u32, data_tree_mib: u32) -> WriteLoad {
        WriteLoad {
            writes_per_second,
            txn_kib,
            data_tree_mib,
        }
    }

    #[rstest]
    #[case::idle_with_a_small_tree(Retention::DEFAULT, load(0, 1, 8), true)]
    #[case::ten_writes_per_second(Retention::DEFAULT, load(10, 1, 32), true)]
    #[case::forty_writes_per_second(Retention::DEFAULT, load(40, 1, 32), true)]
    #[case::sixty_writes_per_second_is_too_much(Retention::DEFAULT, load(60, 1, 32), false)]
    #[case::large_changes_roll_by_size(Retention::DEFAULT, load(4, 10, 32), true)]
    #[case::previous_defaults_at_one_write_per_second(PREVIOUS, load(1, 1, 32), false)]
    #[case::previous_defaults_at_ten_writes_per_second(PREVIOUS, load(10, 1, 32), false)]
    fn the_default_volume_holds_the_documented_rate(
        #[case] retention: Retention,
        #[case] load: WriteLoad,
        #[case] fits: bool,
    ) {
        let disk = retention.worst_case_disk_mib(load);
        assert_eq!(
            disk <= USABLE_OF_ONE_GIB,
            fits,
            "{retention:?} under {load:?} takes up to {disk} MiB"
        );
    }

    #[test]
    fn the_settings_are_written_in_zookeepers_units() {
        let entries = Retention::DEFAULT.entries();
        assert!(entries.contains(&("preAllocSize", "16384".to_owned())));
        assert!(entries.contains(&("snapSizeLimitInKb", "65536".to_owned())));
        assert!(entries.contains(&("autopurge.purgeInterval", "1".to_owned())));
    }
}

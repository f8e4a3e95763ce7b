//! Log levels set through `configOverrides`, for every product's logging
//! framework: logback (ZooKeeper), log4j (Hadoop), Trino's `log.properties`
//! and Python's `logging` (Superset) share these six levels.
//!
//! A product's logging file is overridden as a map from logger name to level,
//! with [`ROOT_LOGGER`] for the root logger, e.g.
//! `configOverrides: {"logback.xml": {"ROOT": "WARN", "org.apache.zookeeper.server.quorum": "DEBUG"}}`.

use std::collections::BTreeMap;

/// The key that sets the root logger's level.
pub const ROOT_LOGGER: &str = "ROOT";

/// A log level, ordered from most to least verbose. Parsed case-insensitively;
/// displayed upper-case, as every product's configuration spells it.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    strum::Display,
    strum::EnumString,
    strum::VariantNames,
)]
#[strum(serialize_all = "UPPERCASE", ascii_case_insensitive)]
pub enum LogLevel {
    /// Everything.
    Trace,
    /// Diagnostic detail.
    Debug,
    /// Normal operation; every product's own default.
    #[default]
    Info,
    /// Unexpected but handled situations.
    Warn,
    /// Failures.
    Error,
    /// Nothing at all.
    Off,
}

/// The levels of the root logger and of individual loggers, sorted by name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoggerLevels {
    /// Level of the root logger.
    pub root: LogLevel,
    /// Levels of individual loggers (package, class or module names).
    pub loggers: BTreeMap<String, LogLevel>,
}

/// A level in a logging override that no product understands.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "{file}: logger {logger:?} has level {level:?}; use one of TRACE, DEBUG, INFO, WARN, ERROR or OFF"
)]
pub struct InvalidLogLevel {
    /// The logging file, e.g. `logback.xml`.
    pub file: String,
    /// The logger it was set for.
    pub logger: String,
    /// The level as given.
    pub level: String,
}

impl LoggerLevels {
    /// The levels in the overrides of `file`: [`ROOT_LOGGER`] sets the root
    /// logger, every other key names a logger. Surrounding blanks in a level are
    /// ignored.
    pub fn from_overrides(
        file: &str,
        overrides: &BTreeMap<String, String>,
    ) -> Result<Self, InvalidLogLevel> {
        let mut levels = Self::default();
        for (logger, level) in overrides {
            let parsed = level.trim().parse().map_err(|_| InvalidLogLevel {
                file: file.to_owned(),
                logger: logger.clone(),
                level: level.clone(),
            })?;
            if logger == ROOT_LOGGER {
                levels.root = parsed;
            } else {
                levels.loggers.insert(logger.clone(), parsed);
            }
        }
        Ok(levels)
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case::upper("WARN", LogLevel::Warn)]
    #[case::lower("debug", LogLevel::Debug)]
    #[case::mixed_with_blanks(" Trace ", LogLevel::Trace)]
    #[case::off("off", LogLevel::Off)]
    fn levels_are_read_in_any_case(#[case] given: &str, #[case] expected: LogLevel) {
        let overrides = BTreeMap::from([("com.example".to_owned(), given.to_owned())]);
        let levels = LoggerLevels::from_overrides("logback.xml", &overrides).unwrap();
        assert_eq!(levels.loggers["com.example"], expected);
        assert_eq!(levels.root, LogLevel::Info, "the root keeps the default");
    }

    #[test]
    fn root_sets_the_root_logger_and_is_no_logger_of_its_own() {
        let overrides = BTreeMap::from([("ROOT".to_owned(), "ERROR".to_owned())]);
        let levels = LoggerLevels::from_overrides("log4j.properties", &overrides).unwrap();
        assert_eq!(levels.root, LogLevel::Error);
        assert!(levels.loggers.is_empty());
    }

    #[rstest]
    #[case::unknown_word("VERBOSE")]
    #[case::empty("")]
    #[case::java_util_logging_name("FINE")]
    fn an_unknown_level_names_the_file_the_logger_and_the_choices(#[case] level: &str) {
        let overrides = BTreeMap::from([("org.apache".to_owned(), level.to_owned())]);
        let error = LoggerLevels::from_overrides("logback.xml", &overrides).unwrap_err();
        let message = error.to_string();
        assert!(
            message.contains("logback.xml")
                && message.contains("org.apache")
                && message.contains("TRACE, DEBUG"),
            "{message}"
        );
    }

    #[test]
    fn levels_display_as_the_products_spell_them() {
        assert_eq!(LogLevel::Warn.to_string(), "WARN");
        assert_eq!(LogLevel::Off.to_string(), "OFF");
    }
}

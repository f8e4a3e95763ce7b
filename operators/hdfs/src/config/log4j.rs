//! `log4j.properties` for every HDFS daemon.
//!
//! The config directory is a read-only ConfigMap that replaces the image's, so it must
//! bring its own logging setup. Logs go to the console only: the kubelet collects
//! container output, and a file appender would need a writable volume and rotation.
//! Keys and values go through the shared Java properties writer, so a logger name
//! cannot inject a line.

use strata_model::files::java_properties::{self, PropertiesError};
use strata_model::logging::{LogLevel, LoggerLevels};

/// The namenode's audit logger. Upstream routes it to a null appender unless asked;
/// WARN keeps it quiet on the console by default, and `INFO` turns it on.
pub const AUDIT_LOGGER: &str = "org.apache.hadoop.hdfs.server.namenode.FSNamesystem.audit";

/// Renders `log4j.properties`: one console appender on stderr, the root level, the
/// audit logger at WARN unless overridden, and each overridden logger.
pub fn render_log4j_properties(levels: &LoggerLevels) -> Result<String, PropertiesError> {
    let mut loggers = levels.loggers.clone();
    loggers
        .entry(AUDIT_LOGGER.to_owned())
        .or_insert(LogLevel::Warn);
    let root = format!("{}, console", levels.root);
    let mut entries: Vec<(String, String)> = vec![
        ("log4j.rootLogger".to_owned(), root),
        (
            "log4j.appender.console".to_owned(),
            "org.apache.log4j.ConsoleAppender".to_owned(),
        ),
        (
            "log4j.appender.console.target".to_owned(),
            "System.err".to_owned(),
        ),
        (
            "log4j.appender.console.layout".to_owned(),
            "org.apache.log4j.PatternLayout".to_owned(),
        ),
        (
            "log4j.appender.console.layout.ConversionPattern".to_owned(),
            "%d{ISO8601} %-5p [%t] %c{2}: %m%n".to_owned(),
        ),
    ];
    entries.extend(
        loggers
            .iter()
            .map(|(name, level)| (format!("log4j.logger.{name}"), level.to_string())),
    );
    java_properties::write(
        "Rendered by the Strata HDFS operator; edit the HdfsCluster instead.",
        entries
            .iter()
            .map(|(key, value)| (key.as_str(), value.as_str())),
    )
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn defaults_log_info_to_the_console_and_quiet_the_audit_log() -> Result<(), PropertiesError> {
        let file = render_log4j_properties(&LoggerLevels::default())?;
        assert!(file.contains("log4j.rootLogger=INFO, console\n"), "{file}");
        assert!(
            file.contains(&format!("log4j.logger.{AUDIT_LOGGER}=WARN\n")),
            "{file}"
        );
        Ok(())
    }

    #[test]
    fn overrides_set_the_root_and_named_loggers() -> Result<(), Box<dyn std::error::Error>> {
        let overrides = BTreeMap::from([
            ("ROOT".to_owned(), "WARN".to_owned()),
            (AUDIT_LOGGER.to_owned(), "INFO".to_owned()),
            ("org.apache.hadoop.ha".to_owned(), "DEBUG".to_owned()),
        ]);
        let file = render_log4j_properties(&LoggerLevels::from_overrides(
            "log4j.properties",
            &overrides,
        )?)?;
        let lines: Vec<&str> = file
            .lines()
            .filter(|line| {
                line.starts_with("log4j.rootLogger") || line.starts_with("log4j.logger.")
            })
            .collect();
        assert_eq!(
            lines,
            [
                "log4j.rootLogger=WARN, console",
                "log4j.logger.org.apache.hadoop.ha=DEBUG",
                "log4j.logger.org.apache.hadoop.hdfs.server.namenode.FSNamesystem.audit=INFO",
            ]
        );
        Ok(())
    }
}

//! `log4j.properties` for every HDFS daemon.
//!
//! The config directory is a read-only ConfigMap that replaces the image's, so it must
//! bring its own logging setup. Logs go to the console only: the kubelet collects
//! container output, and a file appender would need a writable volume and rotation.
//! Keys and values go through the shared Java properties writer, so a logger name
//! cannot inject a line.
//!
//! One exception to "console only": the line Hadoop's `ExitUtil` logs when a daemon
//! terminates with an error (`Exiting with status 1: java.lang.NumberFormatException:
//! For input string: "many"`) also goes to the container's termination message, after
//! a reason line. That is the two-line contract of `strata_status::ReportedStop`, so a
//! daemon that stops on a setting Hadoop rejects makes the cluster Degraded with
//! [`EXIT_REASON`] and Hadoop's own words, instead of a bare `CrashLoopBackOff`. The
//! appender truncates the file when the JVM starts, so only the last exit is kept.

use strata_model::files::java_properties::{self, PropertiesError};
use strata_model::logging::{LogLevel, LoggerLevels};

/// The namenode's audit logger. Upstream routes it to a null appender unless asked;
/// WARN keeps it quiet on the console by default, and `INFO` turns it on.
pub const AUDIT_LOGGER: &str = "org.apache.hadoop.hdfs.server.namenode.FSNamesystem.audit";

/// The logger of `terminate` and `halt`, which every Hadoop daemon calls to stop on an
/// error, with the exception's text.
pub const EXIT_LOGGER: &str = "org.apache.hadoop.util.ExitUtil";

/// The reason a daemon's termination message gives when Hadoop terminated it.
pub const EXIT_REASON: &str = "DaemonExited";

/// The kubelet's default `terminationMessagePath`, which the containers keep.
pub const TERMINATION_LOG: &str = "/dev/termination-log";

/// The appender that writes [`EXIT_LOGGER`]'s lines to [`TERMINATION_LOG`].
const TERMINATION_APPENDER: &str = "termination";

/// Renders `log4j.properties`: one console appender on stderr, the root level, the
/// audit logger at WARN unless overridden, the exit logger at INFO (unless overridden)
/// with the termination appender too, and each overridden logger.
pub fn render_log4j_properties(levels: &LoggerLevels) -> Result<String, PropertiesError> {
    let mut loggers = levels.loggers.clone();
    loggers
        .entry(AUDIT_LOGGER.to_owned())
        .or_insert(LogLevel::Warn);
    loggers
        .entry(EXIT_LOGGER.to_owned())
        .or_insert(LogLevel::Info);
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
    let appender = format!("log4j.appender.{TERMINATION_APPENDER}");
    entries.extend([
        (appender.clone(), "org.apache.log4j.FileAppender".to_owned()),
        (format!("{appender}.File"), TERMINATION_LOG.to_owned()),
        (format!("{appender}.Append"), "false".to_owned()),
        (format!("{appender}.Threshold"), "INFO".to_owned()),
        (
            format!("{appender}.layout"),
            "org.apache.log4j.PatternLayout".to_owned(),
        ),
        (
            format!("{appender}.layout.ConversionPattern"),
            format!("{EXIT_REASON}%n%m%n"),
        ),
    ]);
    entries.extend(loggers.iter().map(|(name, level)| {
        let value = if name == EXIT_LOGGER {
            format!("{level}, {TERMINATION_APPENDER}")
        } else {
            level.to_string()
        };
        (format!("log4j.logger.{name}"), value)
    }));
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
                "log4j.logger.org.apache.hadoop.util.ExitUtil=INFO, termination",
            ]
        );
        Ok(())
    }

    #[test]
    fn hadoops_exit_line_becomes_the_termination_message_contract()
    -> Result<(), Box<dyn std::error::Error>> {
        let file = render_log4j_properties(&LoggerLevels::from_overrides(
            "log4j.properties",
            &BTreeMap::from([(EXIT_LOGGER.to_owned(), "WARN".to_owned())]),
        )?)?;
        for line in [
            "log4j.appender.termination=org.apache.log4j.FileAppender",
            "log4j.appender.termination.File=/dev/termination-log",
            "log4j.appender.termination.Append=false",
            "log4j.appender.termination.layout.ConversionPattern=DaemonExited%n%m%n",
            "log4j.logger.org.apache.hadoop.util.ExitUtil=WARN, termination",
        ] {
            assert!(
                file.lines().any(|written| written == line),
                "{line} in {file}"
            );
        }
        Ok(())
    }
}

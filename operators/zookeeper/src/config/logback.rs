//! Rendering of `logback.xml`.
//!
//! The official image puts `/conf` on the classpath and ships the distribution's
//! `logback.xml` there. Our ConfigMap replaces `/conf` as a whole, so without a `logback.xml`
//! of our own ZooKeeper would fall back to logback's defaults (DEBUG for everything). We log
//! to the console only: the kubelet collects container output, and a file appender would need
//! a writable volume and its own rotation.

use strata_model::logging::LoggerLevels;

/// Renders `logback.xml` with one console appender. The pattern carries ZooKeeper's `myid`
/// from the logging context, so interleaved logs of an ensemble stay attributable.
pub fn render_logback_xml(input: &LoggerLevels) -> String {
    let mut out = String::from(concat!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n",
        "<!-- Rendered by the Strata ZooKeeper operator; edit the ZookeeperCluster instead. -->\n",
        "<configuration>\n",
        "  <appender name=\"CONSOLE\" class=\"ch.qos.logback.core.ConsoleAppender\">\n",
        "    <encoder>\n",
        "      <pattern>%d{ISO8601} [myid:%X{myid}] %-5level [%thread] %logger{36} - %msg%n</pattern>\n",
        "    </encoder>\n",
        "  </appender>\n",
    ));
    for (name, level) in &input.loggers {
        out.push_str(&format!(
            "  <logger name=\"{}\" level=\"{}\"/>\n",
            escape_attribute(name),
            level
        ));
    }
    out.push_str(&format!(
        "  <root level=\"{}\">\n    <appender-ref ref=\"CONSOLE\"/>\n  </root>\n</configuration>\n",
        input.root
    ));
    out
}

fn escape_attribute(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use strata_model::logging::LogLevel;

    use super::*;

    #[test]
    fn default_input_logs_info_to_the_console() {
        let expected = r#"<?xml version="1.0" encoding="UTF-8"?>
<!-- Rendered by the Strata ZooKeeper operator; edit the ZookeeperCluster instead. -->
<configuration>
  <appender name="CONSOLE" class="ch.qos.logback.core.ConsoleAppender">
    <encoder>
      <pattern>%d{ISO8601} [myid:%X{myid}] %-5level [%thread] %logger{36} - %msg%n</pattern>
    </encoder>
  </appender>
  <root level="INFO">
    <appender-ref ref="CONSOLE"/>
  </root>
</configuration>
"#;
        assert_eq!(render_logback_xml(&LoggerLevels::default()), expected);
    }

    #[test]
    fn loggers_are_sorted_and_escaped() {
        let input = LoggerLevels {
            root: LogLevel::Warn,
            loggers: [
                ("org.apache.zookeeper.server".to_owned(), LogLevel::Debug),
                ("a\"<b>&'c".to_owned(), LogLevel::Off),
            ]
            .into_iter()
            .collect(),
        };
        let xml = render_logback_xml(&input);
        let logger_lines: Vec<&str> = xml
            .lines()
            .filter(|line| line.trim_start().starts_with("<logger"))
            .collect();
        assert_eq!(
            logger_lines,
            vec![
                "  <logger name=\"a&quot;&lt;b&gt;&amp;&apos;c\" level=\"OFF\"/>",
                "  <logger name=\"org.apache.zookeeper.server\" level=\"DEBUG\"/>",
            ]
        );
        assert!(xml.contains("<root level=\"WARN\">"), "{xml}");
    }
}

//! Writers for the config file formats the products read, each with its escaping and
//! its injection checks written and tested once.
//!
//! - [`java_properties`]: `zoo.cfg`, Trino's `config.properties`, `node.properties`,
//!   `log.properties` and catalogs, Hadoop's `log4j.properties`;
//! - [`hadoop_xml`]: Hadoop's `core-site.xml` and `hdfs-site.xml`;
//! - [`python`]: Superset's `superset_config.py`;
//! - [`overrides`]: the checks of `configOverrides` entries before any writer sees
//!   them (keys the operator owns, entries that are not single lines).
//!
//! Every writer is deterministic (the same entries give the same bytes) and refuses
//! what its format cannot carry safely, naming the key: a value can never end its own
//! entry early and start another.

pub mod hadoop_xml;
pub mod java_properties;
pub mod overrides;
pub mod python;

#[cfg(test)]
mod real_parsers;

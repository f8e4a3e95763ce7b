//! The files HDFS reads: `core-site.xml` and `hdfs-site.xml` of each role group and of
//! the discovery ConfigMap, `log4j.properties`, and the scripts the containers run.
//!
//! Everything here is pure and renders from the validated model, so `render`, the
//! controller and the tests produce the same bytes.

pub mod log4j;
pub mod scripts;
pub mod site;
pub mod topology;
pub mod zookeeper_tls;

pub use self::site::{SiteError, SiteFiles};
pub use self::topology::{NameNodeAddress, Topology};

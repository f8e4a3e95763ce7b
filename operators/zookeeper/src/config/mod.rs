//! Product configuration files, rendered by pure functions so that the controller, the
//! offline `render` command and the tests produce byte-identical output.

pub mod logback;
pub mod myid;
pub mod retention;
pub mod server_ids;
pub mod tls;
pub mod zoo_cfg;

pub use logback::render_logback_xml;
pub use myid::myid_script;
pub use server_ids::{
    Ensemble, MAX_SERVER_ID, MAX_SERVER_ID_WITH_EXTENDED_TYPES, PodDns, RoleGroupServers, Server,
    ServerId, ServerIdError,
};
pub use tls::TlsSettings;
pub use zoo_cfg::{ZooCfg, ZooCfgError, ZooCfgInput};

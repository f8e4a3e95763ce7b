//! The product's files: the server's own (`server`), each catalog's (`catalog`), the
//! scripts the pods run, the unit conversions, and the property names the pinned
//! Trino release knows (`known_properties`), which tests check every generated key
//! against.

pub mod access_control;
pub mod access_rules;
pub mod catalog;
pub mod data_size;
pub mod known_properties;
pub mod password_file;
pub mod scripts;
pub mod security;
pub mod server;

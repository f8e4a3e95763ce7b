//! The files of a Superset pod: `superset_config.py`, the database init script, and the
//! driver wheels.

pub mod packages;
pub mod scripts;
pub mod superset_config;

//! The scripts the pods run, kept as files under `src/scripts/` so they are tested as
//! they ship.

/// The init container: database upgrade, init and the admin user, each step with the
/// Degraded reason it reports on failure.
pub const INIT_DATABASE: &str = include_str!("../scripts/init_database.py");

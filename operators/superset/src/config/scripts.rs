//! The scripts the pods run, kept as files under `src/scripts/` so they are tested as
//! they ship.

/// The init container: database upgrade, init and the admin user, each step with the
/// Degraded reason it reports on failure.
pub const INIT_DATABASE: &str = include_str!("../scripts/init_database.py");

/// The security manager of every login: Superset's, with the login form's rate limit
/// on the login API too.
pub const SECURITY_MANAGER: &str = include_str!("../scripts/strata_security.py");

/// The file of [`SECURITY_MANAGER`] in the config directory (imported as
/// `strata_security`).
pub const SECURITY_MANAGER_FILE: &str = "strata_security.py";

/// The security manager of OIDC login: the user's details from the ID token's claims,
/// which Flask-AppBuilder 5 reads for its named providers only.
pub const OIDC_SECURITY_MANAGER: &str = include_str!("../scripts/strata_oidc.py");

/// The file of [`OIDC_SECURITY_MANAGER`] in the config directory, which is on
/// `PYTHONPATH`, so that `superset_config.py` imports it as `strata_oidc`.
pub const OIDC_SECURITY_MANAGER_FILE: &str = "strata_oidc.py";

/// The metadata database's TLS hook (`superset_config.py` imports it as
/// `strata_database_tls`).
pub const DATABASE_TLS_HOOK: &str = include_str!("../scripts/strata_database_tls.py");

/// The file of [`DATABASE_TLS_HOOK`] in the config directory.
pub const DATABASE_TLS_HOOK_FILE: &str = "strata_database_tls.py";

/// Celery's Redis URLs for `superset_config.py`, and the entry point of the worker and
/// beat containers and of the worker's probe.
pub const CELERY_SCRIPT: &str = include_str!("../scripts/strata_celery.py");

/// The file of [`CELERY_SCRIPT`] in the config directory (imported as `strata_celery`).
pub const CELERY_SCRIPT_FILE: &str = "strata_celery.py";

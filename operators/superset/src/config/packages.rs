//! Python packages the upstream image lacks, shipped by the operator: a pod may neither
//! run as root nor reach the network to install them. Their pure-Python wheels go into
//! a ConfigMap, and each wheel file is on `PYTHONPATH`, from which Python imports it as
//! a zip. See `wheels/README.md` for versions, licences and checksums.
//!
//! - The PostgreSQL driver `pg8000` (with `scramp` and `asn1crypto`): the 6.1.0 image
//!   has no database driver at all. Installed without the rest of their dependencies
//!   (with them, pip would add a `python-dateutil` that shadows the image's).
//! - `authlib`, which Flask-AppBuilder needs for OIDC login and the image does not
//!   have; its one dependency, `cryptography`, is in the image.

use crate::crd::Driver;

/// One wheel: its file name and bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wheel {
    /// The file name, also the ConfigMap key.
    pub file_name: &'static str,
    /// The wheel.
    pub bytes: &'static [u8],
}

/// `pg8000` and its two dependencies.
pub const PG8000_WHEELS: [Wheel; 3] = [
    Wheel {
        file_name: "asn1crypto-1.5.1-py2.py3-none-any.whl",
        bytes: include_bytes!("../../wheels/asn1crypto-1.5.1-py2.py3-none-any.whl"),
    },
    Wheel {
        file_name: "pg8000-1.31.6-py3-none-any.whl",
        bytes: include_bytes!("../../wheels/pg8000-1.31.6-py3-none-any.whl"),
    },
    Wheel {
        file_name: "scramp-1.5.0-py3-none-any.whl",
        bytes: include_bytes!("../../wheels/scramp-1.5.0-py3-none-any.whl"),
    },
];

/// `authlib`, for OIDC login.
pub const AUTHLIB_WHEEL: Wheel = Wheel {
    file_name: "authlib-1.6.5-py2.py3-none-any.whl",
    bytes: include_bytes!("../../wheels/authlib-1.6.5-py2.py3-none-any.whl"),
};

/// Where the packages ConfigMap is mounted.
pub const WHEEL_DIR: &str = "/strata/packages";

/// The wheels a cluster's pods need: the driver's, and `authlib` with OIDC.
pub fn wheels(driver: Driver, oidc: bool) -> Vec<Wheel> {
    let mut wheels = Vec::new();
    if driver == Driver::Pg8000 {
        wheels.extend(PG8000_WHEELS);
    }
    if oidc {
        wheels.push(AUTHLIB_WHEEL);
    }
    wheels
}

/// `PYTHONPATH` entries for `wheels`: one per file.
pub fn python_path_entries(wheels: &[Wheel]) -> Vec<String> {
    wheels
        .iter()
        .map(|wheel| format!("{WHEEL_DIR}/{}", wheel.file_name))
        .collect()
}

//! The PostgreSQL driver the operator ships: the 6.1.0 image has none, and a pod may
//! neither run as root nor reach the network to install one. The three pure-Python
//! wheels of `pg8000` go into a ConfigMap; each wheel file is on `PYTHONPATH`, from
//! which Python imports it as a zip. See `wheels/README.md` for versions, licences and
//! checksums.

/// One wheel: its file name and bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wheel {
    /// The file name, also the ConfigMap key.
    pub file_name: &'static str,
    /// The wheel.
    pub bytes: &'static [u8],
}

/// `pg8000` and its two dependencies, installed without the rest of their
/// dependencies (with them, pip would add a `python-dateutil` that shadows the
/// image's).
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

/// Where the driver ConfigMap is mounted.
pub const WHEEL_DIR: &str = "/strata/wheels";

/// `PYTHONPATH` entries for the wheels: one per file.
pub fn python_path_entries() -> Vec<String> {
    PG8000_WHEELS
        .iter()
        .map(|wheel| format!("{WHEEL_DIR}/{}", wheel.file_name))
        .collect()
}

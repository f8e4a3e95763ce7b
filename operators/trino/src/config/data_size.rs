//! Kubernetes quantities as Trino data sizes.
//!
//! Trino (airlift) reads sizes as a number and a unit of `B`, `kB`, `MB`, `GB`, `TB`
//! or `PB`, each 1024 times the one before. The operator accepts Kubernetes
//! quantities in the spec, like every other size there, and writes the largest unit
//! that states the same number of bytes exactly.

use strata_model::quantity::{QuantityError, parse_milli};

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

const UNITS: [(&str, u128); 5] = [
    ("PB", 1 << 50),
    ("TB", 1 << 40),
    ("GB", 1 << 30),
    ("MB", 1 << 20),
    ("kB", 1 << 10),
];

/// The number of bytes of `quantity`, rounded up to a whole byte.
pub fn bytes(quantity: &Quantity) -> Result<u128, QuantityError> {
    parse_milli(&quantity.0).map(|milli| milli.div_ceil(1000))
}

/// `quantity` as a Trino data size: `1Gi` is `1GB`, `1500Mi` is `1500MB`, `1G` is
/// `1000000000B`.
pub fn trino_data_size(quantity: &Quantity) -> Result<String, QuantityError> {
    let bytes = bytes(quantity)?;
    Ok(UNITS
        .iter()
        .find(|(_, size)| bytes > 0 && bytes % size == 0)
        .map_or_else(
            || format!("{bytes}B"),
            |(unit, size)| format!("{}{unit}", bytes / size),
        ))
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case::gibibytes("1Gi", "1GB")]
    #[case::mebibytes_not_a_whole_gibibyte("1500Mi", "1500MB")]
    #[case::decimal_gigabytes_in_bytes("1G", "1000000000B")]
    #[case::tebibytes("2Ti", "2TB")]
    #[case::kibibytes("3Ki", "3kB")]
    #[case::zero("0", "0B")]
    fn sizes(#[case] quantity: &str, #[case] expected: &str) {
        assert_eq!(
            trino_data_size(&Quantity(quantity.to_owned())).as_deref(),
            Ok(expected)
        );
    }

    #[test]
    fn a_malformed_quantity_is_refused() {
        assert!(trino_data_size(&Quantity("lots".to_owned())).is_err());
    }
}

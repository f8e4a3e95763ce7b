//! The environment contract with the tests, defined once in `strata-testing`.

pub use strata_testing::tools::*;

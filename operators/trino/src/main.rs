//! `trino-operator run | crd | render -f FILE`.

use std::process::ExitCode;

use trino_operator::TrinoOperator;

fn main() -> ExitCode {
    strata_operator::cli::main::<TrinoOperator>()
}

//! `superset-operator run | crd | render -f FILE`.

use std::process::ExitCode;

use superset_operator::SupersetOperator;

fn main() -> ExitCode {
    strata_operator::cli::main::<SupersetOperator>()
}

//! `zookeeper-operator run | crd | render -f FILE`.

use std::process::ExitCode;

use zookeeper_operator::ZookeeperOperator;

fn main() -> ExitCode {
    strata_operator::cli::main::<ZookeeperOperator>()
}

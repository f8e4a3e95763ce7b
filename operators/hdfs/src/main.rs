//! `hdfs-operator run | crd | render -f FILE`.

use std::process::ExitCode;

use hdfs_operator::HdfsOperator;

fn main() -> ExitCode {
    strata_operator::cli::main::<HdfsOperator>()
}

//! Command line of the Strata ZooKeeper operator.

use clap::Parser;

/// Runs the Strata ZooKeeper operator. The controller subcommands (`run`, `crd`, `render`)
/// arrive with the `ZookeeperCluster` types; until then the binary only reports its version.
#[derive(Debug, Parser)]
#[command(name = "zookeeper-operator", version, about)]
struct Cli {}

fn main() {
    let Cli {} = Cli::parse();
}

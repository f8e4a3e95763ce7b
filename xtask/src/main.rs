//! Entry point of `cargo xtask`; all logic lives in the library.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    match xtask::cli::run(xtask::cli::Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

//! The pod runner's helper: `strata-pod-exec launch|enter SPEC.json` starts a container,
//! or runs a command inside a running one (see `strata_pod_runner::launch`). Each mode
//! is two processes: a shim that enters the container's PID namespace, and the helper
//! again inside it (`launch-init`, `enter-inside`), see `strata_pod_runner::shim`.
//! On failure it prints the step that failed and exits 125 (127 for a command not found).

use std::path::Path;
use std::process::ExitCode;

use strata_pod_runner::launch::{COMMAND_NOT_FOUND, Enter, Launch, SETUP_FAILED};
use strata_pod_runner::{isolate, shim};

fn main() -> ExitCode {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    let failure = match arguments.as_slice() {
        [mode, spec] => match mode.as_str() {
            "launch" => {
                read::<Launch>(spec).map(|launch| shim::launch(&launch.netns, Path::new(spec)))
            }
            "enter" => read::<Enter>(spec).map(|enter| shim::enter(enter.pid, Path::new(spec))),
            "launch-init" => read::<Launch>(spec).map(|launch| isolate::launch_init(&launch)),
            "enter-inside" => read::<Enter>(spec).map(|enter| isolate::enter_inside(&enter)),
            _ => Err(USAGE.to_owned()),
        },
        _ => Err(USAGE.to_owned()),
    };
    let (message, code) = match failure {
        Ok(Ok(never)) => match never {},
        Ok(Err(error)) => {
            let code = if error.not_found {
                COMMAND_NOT_FOUND
            } else {
                SETUP_FAILED
            };
            (error.to_string(), code)
        }
        Err(message) => (message, SETUP_FAILED),
    };
    eprintln!("strata-pod-exec: {message}");
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

const USAGE: &str = "usage: strata-pod-exec launch|enter SPEC.json (launch-init and \
     enter-inside are its own second process, inside the container's PID namespace)";

fn read<T: serde::de::DeserializeOwned>(path: &str) -> Result<T, String> {
    let text =
        std::fs::read_to_string(path).map_err(|error| format!("cannot read {path}: {error}"))?;
    serde_json::from_str(&text).map_err(|error| format!("{path} is not a valid spec: {error}"))
}

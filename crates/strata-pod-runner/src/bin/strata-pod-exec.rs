//! The pod runner's helper: `strata-pod-exec launch|enter SPEC.json` becomes a container's
//! process, or runs a command inside a running container (see `strata_pod_runner::launch`).
//! On failure it prints the step that failed and exits 125 (127 for a command not found).

use std::process::ExitCode;

use strata_pod_runner::isolate;
use strata_pod_runner::launch::{COMMAND_NOT_FOUND, Enter, Launch, SETUP_FAILED};

fn main() -> ExitCode {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    let failure = match arguments.as_slice() {
        [mode, spec] if mode == "launch" => read::<Launch>(spec).map(|spec| isolate::launch(&spec)),
        [mode, spec] if mode == "enter" => read::<Enter>(spec).map(|spec| isolate::enter(&spec)),
        _ => Err("usage: strata-pod-exec launch|enter SPEC.json".to_owned()),
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

fn read<T: serde::de::DeserializeOwned>(path: &str) -> Result<T, String> {
    let text =
        std::fs::read_to_string(path).map_err(|error| format!("cannot read {path}: {error}"))?;
    serde_json::from_str(&text).map_err(|error| format!("{path} is not a valid spec: {error}"))
}

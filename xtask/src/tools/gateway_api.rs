//! The Gateway API's CRDs, which the real-control-plane tests install to prove the
//! HTTPRoute the Trino and Superset operators apply (`clusterConfig.httpRoute`), and
//! to create the GatewayClass and Gateway it attaches to.
//!
//! They are files of the Go module `sigs.k8s.io/gateway-api` at
//! [`GATEWAY_API_VERSION`], its standard channel (`config/crd/standard/`), which
//! `go mod download` fetches from the Go module proxy and checks against the Go
//! checksum database, as it does the Prometheus Operator's CRDs
//! ([`super::prometheus`]). Nothing is built from the module, so no `go.mod` pins it:
//! the version here is the pin, and the stamp beside the files records it.

use std::path::{Path, PathBuf};

use super::Outcome;
use super::prometheus::{ModuleFiles, copy_module_files};

/// The Gateway API release whose CRDs the tests install.
pub const GATEWAY_API_VERSION: &str = "v1.4.1";

/// The HTTPRoute and BackendTLSPolicy CRDs, and the GatewayClass and Gateway CRDs a
/// test needs to create the Gateway a route attaches to.
const CRDS: ModuleFiles = ModuleFiles {
    module: "sigs.k8s.io/gateway-api",
    version: GATEWAY_API_VERSION,
    dir: "config/crd/standard",
    files: &[
        "gateway.networking.k8s.io_backendtlspolicies.yaml",
        "gateway.networking.k8s.io_gatewayclasses.yaml",
        "gateway.networking.k8s.io_gateways.yaml",
        "gateway.networking.k8s.io_httproutes.yaml",
    ],
};

/// Copies the CRDs into `tools_dir` when their stamp is not current, and returns the
/// directory that holds them. `go_dir` is `xtask/go`; the download runs in its
/// `prometheus` module, which the Prometheus Operator's CRDs are downloaded in too.
pub fn ensure(go_dir: &Path, tools_dir: &Path) -> anyhow::Result<(PathBuf, Outcome)> {
    let crds = tools_dir.join(format!("gateway-api-crds-{GATEWAY_API_VERSION}"));
    let outcome = copy_module_files(&go_dir.join("prometheus"), &CRDS, &crds)?;
    Ok((crds, outcome))
}

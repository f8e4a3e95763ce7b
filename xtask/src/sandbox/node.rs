//! The sandbox's one real node: the pod runner as its node agent, beside KWOK's nodes.
//!
//! The node is labelled and tainted [`RUNNER_LABEL`]`=true:NoSchedule`, so only pods that
//! ask for it land there: the operators (the charts' `nodeSelector` and `tolerations`,
//! set at `helm install`) and the examples the demo runs for real (their roles'
//! `podOverrides`, [`placement`]). Its pods reach the API server in-cluster, through the
//! `kubernetes` Service's address and projected ServiceAccount tokens
//! ([`strata_pod_runner::agent`]).
//!
//! The image of each operator is a directory whose manifest maps the reference the
//! chart names (`<repository>:`[`OPERATOR_TAG`]) to the binary built from the
//! workspace, at the path the Dockerfile installs it (`/usr/local/bin/operator`), with
//! the Dockerfile's user and entrypoint.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::Context;
use k8s_openapi::api::core::v1::Taint;
use serde_json::{Value, json};
use strata_pod_runner::agent::{NodeAgent, NodeOptions};
use strata_pod_runner::image::{Images, MANIFEST, Manifest};
use strata_pod_runner::runner::{PodRunner, RunnerOptions};
use strata_testing::control_plane::ControlPlane;

use crate::images::{DEFAULT_REGISTRY, repository};
use crate::operators::Operator;
use crate::tools::SandboxTools;

/// The runner's node.
pub(super) const RUNNER_NODE: &str = "strata-runner-0";
/// The label and taint key of the runner's node.
pub(super) const RUNNER_LABEL: &str = "strata.dev/pod-runner";
/// The tag the sandbox installs the operators' images with.
pub(super) const OPERATOR_TAG: &str = "sandbox";
/// Where the operators' Dockerfile installs the binary, and its user.
const OPERATOR_BINARY: &str = "/usr/local/bin/operator";
const OPERATOR_USER: (u32, u32) = (65532, 65532);

/// The pod fields that put a pod on the runner's node: the node selector and the
/// toleration of its taint.
pub(super) fn placement() -> Value {
    json!({
        "nodeSelector": {RUNNER_LABEL: "true"},
        "tolerations": [{"key": RUNNER_LABEL, "operator": "Exists", "effect": "NoSchedule"}]
    })
}

/// The image reference the sandbox installs `operator`'s chart with.
pub(super) fn operator_image(operator: &str) -> (String, String) {
    (
        repository(DEFAULT_REGISTRY, operator),
        OPERATOR_TAG.to_owned(),
    )
}

/// Registers the runner's node and serves it: the product images of `tools` and one
/// image per operator, its binary from `target`.
pub(super) async fn start_runner_node(
    dir: &Path,
    target: &Path,
    tools: &SandboxTools,
    control_plane: &ControlPlane,
    operators: &[Operator],
) -> anyhow::Result<NodeAgent> {
    let mut images = Images::default();
    for product in [
        &tools.images.zookeeper_image,
        &tools.images.hadoop_image,
        &tools.images.trino_image,
    ] {
        images
            .add(product)
            .with_context(|| format!("the image directory {}", product.display()))?;
    }
    for operator in operators {
        let image = operator_image_dir(dir, target, operator.name)?;
        images
            .add(&image)
            .with_context(|| format!("the image directory {}", image.display()))?;
    }
    let runner = PodRunner::new(RunnerOptions::new(images))
        .context("starting the pod runner (it needs root)")?;
    let api_server = control_plane
        .server()
        .trim_start_matches("https://")
        .parse()
        .with_context(|| format!("the API server's address {}", control_plane.server()))?;
    let taint: Taint = serde_json::from_value(
        json!({"key": RUNNER_LABEL, "value": "true", "effect": "NoSchedule"}),
    )?;
    let options = NodeOptions {
        labels: [(RUNNER_LABEL.to_owned(), "true".to_owned())].into(),
        taints: vec![taint],
        api_server: Some(api_server),
    };
    let client = control_plane.client().await?;
    Ok(NodeAgent::start_with(client, RUNNER_NODE, runner, options).await?)
}

/// `dir/images/<operator>`: a manifest and a link from the binary's path in the image
/// to `target/<operator>`.
fn operator_image_dir(dir: &Path, target: &Path, operator: &str) -> anyhow::Result<PathBuf> {
    let root = dir.join("images").join(operator);
    let binary = root.join(OPERATOR_BINARY.trim_start_matches('/'));
    if let Some(parent) = binary.parent() {
        fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    }
    let built = target.join(operator);
    let _ = fs::remove_file(&binary);
    std::os::unix::fs::symlink(&built, &binary)
        .with_context(|| format!("linking {} to {}", binary.display(), built.display()))?;
    let (repository, tag) = operator_image(operator);
    let manifest = Manifest {
        references: vec![format!("{repository}:{tag}")],
        paths: vec![OPERATOR_BINARY.into()],
        env: vec![(
            "PATH".to_owned(),
            "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".to_owned(),
        )],
        working_dir: "/".into(),
        user: OPERATOR_USER,
        // The Dockerfile's ENTRYPOINT; the chart's `args` replace its CMD (`run`).
        entrypoint: vec![OPERATOR_BINARY.to_owned()],
    };
    fs::write(
        root.join(MANIFEST),
        serde_json::to_string_pretty(&manifest)?,
    )
    .with_context(|| format!("writing the manifest of {}", root.display()))?;
    Ok(root)
}

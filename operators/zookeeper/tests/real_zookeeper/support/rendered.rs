//! What `zookeeper-operator render` prints, read back into what the pods of one role group
//! run with: the `zoo.cfg` their config volume holds, the command of the init container
//! that writes `myid`, and the pods' names.
//!
//! Everything is found the way the kubelet and `zkServer.sh` find it (the `ZOOCFGDIR`
//! variable, the volume mounted there, the ConfigMap behind that volume), so a wiring
//! mistake in the rendered StatefulSet fails here instead of passing unnoticed.

use std::path::Path;
use std::process::Command;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::Value;
use zookeeper_operator::build::config_map::ZOO_CFG;
use zookeeper_operator::build::container::{MYID_CONTAINER, ZOOKEEPER_CONTAINER};

use super::server::{HarnessError, io_context};

/// The variable `zkServer.sh` reads to find `zoo.cfg`.
const CONFIG_DIR_ENV: &str = "ZOOCFGDIR";

/// Runs the real `zookeeper-operator render -f manifest` and returns its documents.
pub fn render_manifest(manifest: &Path) -> Result<Vec<Value>, HarnessError> {
    let output = Command::new(env!("CARGO_BIN_EXE_zookeeper-operator"))
        .arg("render")
        .arg("-f")
        .arg(manifest)
        .output()
        .map_err(io_context("running zookeeper-operator render"))?;
    if !output.status.success() {
        return Err(HarnessError::Render {
            manifest: manifest.to_owned(),
            status: output.status,
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        });
    }
    Ok(strata_testing::yaml::documents(&String::from_utf8_lossy(
        &output.stdout,
    ))?)
}

/// The value of `key` in a `key=value` file such as `zoo.cfg`.
pub fn property<'a>(cfg: &'a str, key: &str) -> Option<&'a str> {
    cfg.lines()
        .filter_map(|line| line.split_once('='))
        .find(|(found, _)| found.trim() == key)
        .map(|(_, value)| value.trim())
}

/// A pod of the StatefulSet: `HOSTNAME` inside it, and the name its headless Service
/// publishes in DNS.
#[derive(Clone, Debug)]
pub struct PodIdentity {
    /// `<statefulset>-<ordinal>`.
    pub name: String,
    /// `<pod>.<service>.<namespace>.svc.<cluster domain>`.
    pub fqdn: String,
}

/// One role group as rendered: the inputs of its pods.
#[derive(Clone, Debug)]
pub struct RenderedRoleGroup {
    /// `zoo.cfg` from the ConfigMap mounted where `ZOOCFGDIR` points.
    pub zoo_cfg: String,
    /// Command and arguments of the init container that writes `myid`.
    pub myid_command: Vec<String>,
    /// The pods by ordinal.
    pub pods: Vec<PodIdentity>,
}

impl RenderedRoleGroup {
    /// Reads the only StatefulSet in `documents` and the ConfigMap its main container
    /// mounts as config directory. Pod DNS names use `cluster_domain`, as render does.
    pub fn single(documents: &[Value], cluster_domain: &str) -> Result<Self, HarnessError> {
        let statefulset: StatefulSet = only_of_kind(documents, "StatefulSet")?;
        Self::of(statefulset, documents, cluster_domain)
    }

    /// Like [`RenderedRoleGroup::single`], for the StatefulSet `name` among several.
    pub fn named(
        documents: &[Value],
        name: &str,
        cluster_domain: &str,
    ) -> Result<Self, HarnessError> {
        let document = documents
            .iter()
            .find(|document| {
                document["kind"] == "StatefulSet" && document["metadata"]["name"] == name
            })
            .ok_or_else(|| HarnessError::Rendered(format!("StatefulSet {name} is missing")))?;
        let statefulset: StatefulSet =
            serde_json::from_value(document.clone()).map_err(|source| HarnessError::Typed {
                kind: "StatefulSet",
                source,
            })?;
        Self::of(statefulset, documents, cluster_domain)
    }

    fn of(
        statefulset: StatefulSet,
        documents: &[Value],
        cluster_domain: &str,
    ) -> Result<Self, HarnessError> {
        let name = statefulset.metadata.name.clone().unwrap_or_default();
        let namespace = statefulset
            .metadata
            .namespace
            .clone()
            .ok_or_else(|| missing(&name, "a namespace"))?;
        let spec = statefulset.spec;
        let service = spec
            .service_name
            .ok_or_else(|| missing(&name, "a serviceName"))?;
        let pod_spec = spec
            .template
            .spec
            .ok_or_else(|| missing(&name, "a pod template spec"))?;

        let main = pod_spec
            .containers
            .iter()
            .find(|container| container.name == ZOOKEEPER_CONTAINER)
            .ok_or_else(|| missing(&name, "the zookeeper container"))?;
        let config_dir = main
            .env
            .iter()
            .flatten()
            .find(|var| var.name == CONFIG_DIR_ENV)
            .and_then(|var| var.value.clone())
            .ok_or_else(|| missing(&name, "ZOOCFGDIR in the zookeeper container"))?;
        let volume = main
            .volume_mounts
            .iter()
            .flatten()
            .find(|mount| mount.mount_path == config_dir)
            .ok_or_else(|| missing(&name, "a volume mounted at ZOOCFGDIR"))?;
        let config_map_name = pod_spec
            .volumes
            .iter()
            .flatten()
            .find(|candidate| candidate.name == volume.name)
            .and_then(|found| found.config_map.as_ref())
            .map(|source| source.name.clone())
            .ok_or_else(|| missing(&name, "a ConfigMap volume for ZOOCFGDIR"))?;
        let zoo_cfg = config_map(documents, &namespace, &config_map_name)?
            .data
            .and_then(|mut data| data.remove(ZOO_CFG))
            .ok_or_else(|| missing(&config_map_name, "zoo.cfg"))?;

        let init = pod_spec
            .init_containers
            .iter()
            .flatten()
            .find(|container| container.name == MYID_CONTAINER)
            .ok_or_else(|| missing(&name, "the myid init container"))?;
        let myid_command: Vec<String> = init
            .command
            .iter()
            .flatten()
            .chain(init.args.iter().flatten())
            .cloned()
            .collect();

        let replicas = spec.replicas.unwrap_or(1);
        let pods = (0..replicas)
            .map(|ordinal| {
                let pod = format!("{name}-{ordinal}");
                PodIdentity {
                    fqdn: format!("{pod}.{service}.{namespace}.svc.{cluster_domain}"),
                    name: pod,
                }
            })
            .collect();
        Ok(Self {
            zoo_cfg,
            myid_command,
            pods,
        })
    }
}

fn missing(object: &str, what: &str) -> HarnessError {
    HarnessError::Rendered(format!("{object} has no {what}"))
}

fn only_of_kind<K: serde::de::DeserializeOwned>(
    documents: &[Value],
    kind: &'static str,
) -> Result<K, HarnessError> {
    let found: Vec<&Value> = documents
        .iter()
        .filter(|document| document["kind"] == kind)
        .collect();
    let [document] = found.as_slice() else {
        return Err(HarnessError::Rendered(format!(
            "expected exactly one {kind}, found {}",
            found.len()
        )));
    };
    serde_json::from_value((*document).clone())
        .map_err(|source| HarnessError::Typed { kind, source })
}

fn config_map(documents: &[Value], namespace: &str, name: &str) -> Result<ConfigMap, HarnessError> {
    let document = documents
        .iter()
        .find(|document| {
            document["kind"] == "ConfigMap"
                && document["metadata"]["namespace"] == namespace
                && document["metadata"]["name"] == name
        })
        .ok_or_else(|| {
            HarnessError::Rendered(format!("ConfigMap {namespace}/{name} is missing"))
        })?;
    serde_json::from_value(document.clone()).map_err(|source| HarnessError::Typed {
        kind: "ConfigMap",
        source,
    })
}

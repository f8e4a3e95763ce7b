//! From a rendered container to the helper's [`Launch`]: the user from the security
//! contexts (the container's over the pod's over the image's), the binds (the image's
//! paths, the volume mounts with their `subPath`, then the pod's `/etc/hosts`,
//! `/etc/hostname` and `/etc/resolv.conf`), and the read-only root and no-new-privileges
//! flags. Pure, so the rules are tested without a kernel.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use k8s_openapi::api::core::v1::{Container, Pod};

use crate::image::Image;
use crate::launch::{Bind, Command, Credentials, Launch};

/// The host files every container of a pod shares.
#[derive(Clone, Debug)]
pub struct PodFiles {
    /// The pod's hosts file.
    pub hosts: PathBuf,
    /// The pod's hostname file.
    pub hostname: PathBuf,
    /// The pod's resolver configuration: no name server, so a name that is not in
    /// the hosts file fails at once instead of reaching the host's DNS.
    pub resolv_conf: PathBuf,
    /// The Service rules last applied in the pod's network namespace (never mounted):
    /// the runner compares against it before it runs `nft`.
    pub service_rules: PathBuf,
}

/// The pod's hostname: `spec.hostname`, else its name.
pub fn hostname(pod: &Pod) -> String {
    pod.spec
        .as_ref()
        .and_then(|spec| spec.hostname.clone())
        .or_else(|| pod.metadata.name.clone())
        .unwrap_or_default()
}

/// Who the container runs as.
pub fn credentials(pod: &Pod, container: &Container, image: &Image) -> Credentials {
    let pod_context = pod
        .spec
        .as_ref()
        .and_then(|spec| spec.security_context.as_ref());
    let context = container.security_context.as_ref();
    let id = |value: Option<i64>, fallback: u32| {
        value
            .and_then(|value| u32::try_from(value).ok())
            .unwrap_or(fallback)
    };
    let uid = id(
        context
            .and_then(|context| context.run_as_user)
            .or(pod_context.and_then(|context| context.run_as_user)),
        image.manifest.user.0,
    );
    let gid = id(
        context
            .and_then(|context| context.run_as_group)
            .or(pod_context.and_then(|context| context.run_as_group)),
        image.manifest.user.1,
    );
    let mut groups: Vec<u32> = pod_context
        .and_then(|context| context.fs_group)
        .into_iter()
        .chain(
            pod_context
                .and_then(|context| context.supplemental_groups.clone())
                .into_iter()
                .flatten(),
        )
        .filter_map(|group| u32::try_from(group).ok())
        .collect();
    if !groups.contains(&gid) {
        groups.insert(0, gid);
    }
    Credentials { uid, gid, groups }
}

/// Everything the helper needs to start `container`.
#[allow(clippy::too_many_arguments)]
pub fn launch(
    pod: &Pod,
    container: &Container,
    image: &Image,
    volumes: &BTreeMap<String, PathBuf>,
    command: Command,
    netns: &Path,
    container_dir: &Path,
    files: &PodFiles,
) -> Result<Launch, String> {
    let mut mounts = Vec::new();
    for mount in container.volume_mounts.iter().flatten() {
        let volume = volumes.get(&mount.name).ok_or_else(|| {
            format!(
                "container {}: volumeMount {} names no volume of the pod",
                container.name, mount.name
            )
        })?;
        let sub_path = mount.sub_path.as_deref().unwrap_or_default();
        if !Path::new(sub_path)
            .components()
            .all(|component| matches!(component, Component::Normal(_)))
        {
            return Err(format!(
                "container {}: subPath {sub_path} must stay inside the volume",
                container.name
            ));
        }
        mounts.push(Bind {
            source: volume.join(sub_path),
            target: PathBuf::from(&mount.mount_path),
            read_only: mount.read_only == Some(true),
        });
    }
    // Parents before children, whatever order the mounts were rendered in.
    mounts.sort_by_key(|bind| bind.target.components().count());
    let context = container.security_context.as_ref();
    let binds = image
        .binds()
        .into_iter()
        .chain(mounts)
        .chain([
            Bind {
                source: files.hosts.clone(),
                target: "/etc/hosts".into(),
                read_only: true,
            },
            Bind {
                source: files.hostname.clone(),
                target: "/etc/hostname".into(),
                read_only: true,
            },
            Bind {
                source: files.resolv_conf.clone(),
                target: "/etc/resolv.conf".into(),
                read_only: true,
            },
        ])
        .collect();
    Ok(Launch {
        netns: netns.to_owned(),
        scratch: container_dir.join("scratch"),
        hostname: hostname(pod),
        binds,
        termination_log: container_dir.join("termination-log"),
        read_only_root: context.and_then(|context| context.read_only_root_filesystem) == Some(true),
        user: credentials(pod, container, image),
        no_new_privileges: context.and_then(|context| context.allow_privilege_escalation)
            == Some(false),
        command,
    })
}

//! Who product pods run as: the uid and gid each builder spells out, or none, for
//! platforms that assign them.
//!
//! OpenShift's default Security Context Constraint, `restricted-v2`, refuses a pod
//! whose `runAsUser` or `fsGroup` lies outside the range it gives each namespace, and
//! fills both in from that range when the pod names none. The process then runs as an
//! arbitrary uid with no `/etc/passwd` entry, in group 0, with the namespace's group
//! as `fsGroup`. Every other part of the restricted security context (non-root, no
//! privilege escalation, all capabilities dropped, the runtime's seccomp profile)
//! stays: `restricted-v2` demands exactly those.
//!
//! A uid with no `passwd` entry breaks what asks for the user's name: Hadoop logs in
//! through the JDK's `UnixLoginModule` and exits with `Invalid UID, could not determine
//! effective user`. So under `openshift` each pod also gets a first init container,
//! `platform-user`, that writes a copy of the image's `/etc/passwd` with an entry for the
//! assigned uid, under the name and home of the image's own user (the uid the builder
//! had set), in group 0; every container mounts that copy over `/etc/passwd`. This is
//! what OpenShift asks of images that run as arbitrary users, done without a derived
//! image. A uid that has an entry already keeps the file as it is.
//!
//! The choice is one per operator process, not per custom resource: it is a property
//! of the platform, and the chart's `podSecurity` value sets it. `auto` looks for the
//! `security.openshift.io` API group once, at start.

use k8s_openapi::api::core::v1::{Container, EnvVar, PodSpec, PodTemplateSpec, VolumeMount};
use strata_model::build::memory_volume;

/// The API group only OpenShift serves.
pub const OPENSHIFT_SECURITY_GROUP: &str = "security.openshift.io";
/// The init container that gives the platform's uid a `passwd` entry, and its volume.
pub const PLATFORM_USER: &str = "platform-user";
/// Where the init container writes the `passwd` copy.
const PLATFORM_USER_DIR: &str = "/strata/platform-user";

/// Copies the image's `passwd`, and adds the running uid under the name and home of the
/// image's user (`IMAGE_UID`) when it has no entry. POSIX `sh`, `id`, `grep` and `cut`
/// only: every product image has them.
const PLATFORM_USER_SCRIPT: &str = r#"set -eu
out=/strata/platform-user/passwd
cp /etc/passwd "$out"
uid=$(id -u)
if grep -q "^[^:]*:[^:]*:$uid:" /etc/passwd; then
  echo "uid $uid has a passwd entry already"
  exit 0
fi
entry=$(grep "^[^:]*:[^:]*:$IMAGE_UID:" /etc/passwd | head -n 1 || true)
name=${entry%%:*}
name=${name:-strata}
home=$(printf '%s
' "$entry" | cut -d: -f6)
home=${home:-/tmp}
printf '%s:x:%s:0:%s:%s:/sbin/nologin
' "$name" "$uid" "$name" "$home" >> "$out"
echo "uid $uid runs as $name (home $home) in group 0"
"#;

/// How product pods get their user, as the operator was told.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum, strum::Display)]
#[strum(serialize_all = "lowercase")]
pub enum PodSecuritySetting {
    /// OpenShift's when the cluster serves `security.openshift.io`, else standard.
    #[default]
    Auto,
    /// The fixed uid and gid of each product's image.
    Standard,
    /// No uid, gid or `fsGroup`: the platform assigns them.
    Openshift,
}

/// How product pods get their user, as the operator applies it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum, strum::Display)]
#[strum(serialize_all = "lowercase")]
pub enum PodSecurity {
    /// The builders' uid, gid and `fsGroup`.
    #[default]
    Standard,
    /// None of them.
    Openshift,
}

impl PodSecuritySetting {
    /// The policy for a cluster that serves the API groups `groups`.
    pub fn resolve<'a>(self, groups: impl IntoIterator<Item = &'a str>) -> PodSecurity {
        match self {
            Self::Standard => PodSecurity::Standard,
            Self::Openshift => PodSecurity::Openshift,
            Self::Auto => {
                if groups
                    .into_iter()
                    .any(|group| group == OPENSHIFT_SECURITY_GROUP)
                {
                    PodSecurity::Openshift
                } else {
                    PodSecurity::Standard
                }
            }
        }
    }

    /// The policy for the cluster `client` talks to. Discovery that fails leaves
    /// `auto` at standard, with a warning: a fixed uid that OpenShift refuses shows
    /// up as a clear `FailedCreate` on the StatefulSet, while the reverse would run
    /// pods as root's group on a platform that assigns no user.
    pub async fn detect(self, client: &kube::Client) -> PodSecurity {
        if self != Self::Auto {
            return self.resolve([]);
        }
        match client.list_api_groups().await {
            Ok(list) => self.resolve(list.groups.iter().map(|group| group.name.as_str())),
            Err(error) => {
                tracing::warn!(
                    %error,
                    "could not list the API groups to detect OpenShift; product pods keep their fixed users"
                );
                PodSecurity::Standard
            }
        }
    }
}

impl PodSecurity {
    /// Applies the policy to a workload's pod template.
    pub fn apply_to(self, template: &mut PodTemplateSpec) {
        if self == Self::Standard {
            return;
        }
        let Some(spec) = template.spec.as_mut() else {
            return;
        };
        let image_uid = spec
            .security_context
            .as_ref()
            .and_then(|context| context.run_as_user);
        if let Some(context) = spec.security_context.as_mut() {
            context.run_as_user = None;
            context.run_as_group = None;
            context.fs_group = None;
        }
        let containers = spec.containers.iter_mut();
        for container in containers.chain(spec.init_containers.iter_mut().flatten()) {
            leave_user_to_platform(container);
        }
        if let Some(image_uid) = image_uid {
            add_platform_user(spec, image_uid);
        }
    }
}

/// Adds the `platform-user` init container and volume, and mounts the `passwd` copy in
/// every container.
fn add_platform_user(spec: &mut PodSpec, image_uid: i64) {
    let Some(first) = spec.containers.first() else {
        return;
    };
    let init = Container {
        name: PLATFORM_USER.to_owned(),
        image: first.image.clone(),
        image_pull_policy: first.image_pull_policy.clone(),
        command: Some(vec![
            "sh".to_owned(),
            "-c".to_owned(),
            PLATFORM_USER_SCRIPT.to_owned(),
        ]),
        env: Some(vec![EnvVar {
            name: "IMAGE_UID".to_owned(),
            value: Some(image_uid.to_string()),
            value_from: None,
        }]),
        resources: first.resources.clone(),
        security_context: first.security_context.clone(),
        volume_mounts: Some(vec![VolumeMount {
            name: PLATFORM_USER.to_owned(),
            mount_path: PLATFORM_USER_DIR.to_owned(),
            ..VolumeMount::default()
        }]),
        ..Container::default()
    };
    let passwd = VolumeMount {
        name: PLATFORM_USER.to_owned(),
        mount_path: "/etc/passwd".to_owned(),
        sub_path: Some("passwd".to_owned()),
        read_only: Some(true),
        ..VolumeMount::default()
    };
    let containers = spec.containers.iter_mut();
    for container in containers.chain(spec.init_containers.iter_mut().flatten()) {
        container
            .volume_mounts
            .get_or_insert_default()
            .push(passwd.clone());
    }
    spec.init_containers.get_or_insert_default().insert(0, init);
    spec.volumes
        .get_or_insert_default()
        .push(memory_volume(PLATFORM_USER, "1Mi"));
}

impl PodSecurity {
    /// Applies the policy to a rendered object, if it is a workload with a pod
    /// template (`render --pod-security`).
    pub fn apply_to_value(self, object: &mut serde_json::Value) {
        let Some(template) = object.pointer_mut("/spec/template") else {
            return;
        };
        let Ok(mut typed) = serde_json::from_value::<PodTemplateSpec>(template.clone()) else {
            return;
        };
        self.apply_to(&mut typed);
        if let Ok(value) = serde_json::to_value(typed) {
            *template = value;
        }
    }
}

fn leave_user_to_platform(container: &mut Container) {
    if let Some(context) = container.security_context.as_mut() {
        context.run_as_user = None;
        context.run_as_group = None;
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{PodSecurityContext, PodSpec, SecurityContext};
    use rstest::rstest;
    use serde_json::json;

    use super::*;

    fn template() -> PodTemplateSpec {
        PodTemplateSpec {
            metadata: None,
            spec: Some(PodSpec {
                security_context: Some(PodSecurityContext {
                    run_as_user: Some(1000),
                    run_as_group: Some(1000),
                    fs_group: Some(1000),
                    run_as_non_root: Some(true),
                    ..PodSecurityContext::default()
                }),
                containers: vec![Container {
                    name: "product".to_owned(),
                    security_context: Some(SecurityContext {
                        run_as_user: Some(1000),
                        allow_privilege_escalation: Some(false),
                        ..SecurityContext::default()
                    }),
                    ..Container::default()
                }],
                init_containers: Some(vec![Container {
                    name: "prepare".to_owned(),
                    security_context: Some(SecurityContext {
                        run_as_group: Some(100),
                        ..SecurityContext::default()
                    }),
                    ..Container::default()
                }]),
                ..PodSpec::default()
            }),
        }
    }

    #[rstest]
    #[case::auto_on_openshift(PodSecuritySetting::Auto, &["apps", "security.openshift.io"], PodSecurity::Openshift)]
    #[case::auto_elsewhere(PodSecuritySetting::Auto, &["apps", "policy"], PodSecurity::Standard)]
    #[case::standard_even_on_openshift(PodSecuritySetting::Standard, &["security.openshift.io"], PodSecurity::Standard)]
    #[case::openshift_anywhere(PodSecuritySetting::Openshift, &[], PodSecurity::Openshift)]
    fn the_setting_resolves_against_the_served_groups(
        #[case] setting: PodSecuritySetting,
        #[case] groups: &[&str],
        #[case] expected: PodSecurity,
    ) {
        assert_eq!(setting.resolve(groups.iter().copied()), expected);
    }

    #[test]
    fn a_rendered_workload_gets_the_policy_and_other_objects_are_left_alone() {
        let mut workload = json!({"kind": "StatefulSet", "spec": {"template": template()}});
        PodSecurity::Openshift.apply_to_value(&mut workload);
        assert_eq!(
            workload["spec"]["template"]["spec"]["securityContext"],
            json!({"runAsNonRoot": true})
        );
        let config_map = json!({"kind": "ConfigMap", "data": {"template": "x"}});
        let mut rendered = config_map.clone();
        PodSecurity::Openshift.apply_to_value(&mut rendered);
        assert_eq!(rendered, config_map);
    }

    #[test]
    fn standard_keeps_the_template_as_built() {
        let mut kept = template();
        PodSecurity::Standard.apply_to(&mut kept);
        assert_eq!(kept, template());
    }

    #[test]
    fn openshift_leaves_every_user_and_group_to_the_platform_and_keeps_the_rest() {
        let mut template = template();
        PodSecurity::Openshift.apply_to(&mut template);
        let spec = serde_json::to_value(template.spec).expect("serializes");
        assert_eq!(spec["securityContext"], json!({"runAsNonRoot": true}));
        assert_eq!(
            spec["containers"][0]["securityContext"],
            json!({"allowPrivilegeEscalation": false})
        );
        assert_eq!(spec["initContainers"][1]["name"], "prepare");
        assert_eq!(spec["initContainers"][1]["securityContext"], json!({}));
    }

    #[test]
    fn openshift_gives_the_platform_uid_the_image_users_passwd_entry_in_every_container() {
        let mut template = template();
        PodSecurity::Openshift.apply_to(&mut template);
        let spec = serde_json::to_value(template.spec).expect("serializes");
        let init = &spec["initContainers"][0];
        assert_eq!(init["name"], PLATFORM_USER);
        assert_eq!(init["env"], json!([{"name": "IMAGE_UID", "value": "1000"}]));
        assert_eq!(
            init["securityContext"],
            json!({"allowPrivilegeEscalation": false})
        );
        let passwd = json!({"name": PLATFORM_USER, "mountPath": "/etc/passwd", "subPath": "passwd", "readOnly": true});
        for container in [&spec["containers"][0], &spec["initContainers"][1]] {
            assert_eq!(container["volumeMounts"], json!([passwd]), "{container}");
        }
        assert_eq!(
            spec["volumes"],
            json!([{"name": PLATFORM_USER, "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}}])
        );
    }

    #[test]
    fn the_passwd_script_adds_the_running_uid_under_the_image_users_name() {
        let dir = tempfile::tempdir().expect("a directory");
        let image_passwd = dir.path().join("image-passwd");
        let out = dir.path().join("out");
        std::fs::create_dir(&out).expect("the volume");
        std::fs::write(
            &image_passwd,
            "root:x:0:0:root:/root:/bin/bash\nhadoop:x:4242:100::/opt/hadoop:/bin/bash\n",
        )
        .expect("writes");
        let script = PLATFORM_USER_SCRIPT
            .replace("/etc/passwd", &image_passwd.display().to_string())
            .replace(PLATFORM_USER_DIR, &out.display().to_string())
            .replace("$(id -u)", "1000680000");
        let output = std::process::Command::new("sh")
            .args(["-c", &script])
            .env("IMAGE_UID", "4242")
            .output()
            .expect("sh runs");
        assert!(output.status.success(), "{output:?}");
        let written = std::fs::read_to_string(out.join("passwd")).expect("the copy");
        assert!(written.starts_with("root:x:0:0:"), "{written}");
        assert!(
            written.ends_with("hadoop:x:1000680000:0:hadoop:/opt/hadoop:/sbin/nologin\n"),
            "{written}"
        );
    }
}

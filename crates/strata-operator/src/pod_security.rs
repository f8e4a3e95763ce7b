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
//! The choice is one per operator process, not per custom resource: it is a property
//! of the platform, and the chart's `podSecurity` value sets it. `auto` looks for the
//! `security.openshift.io` API group once, at start.

use k8s_openapi::api::core::v1::{Container, PodTemplateSpec};

/// The API group only OpenShift serves.
pub const OPENSHIFT_SECURITY_GROUP: &str = "security.openshift.io";

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
        if let Some(context) = spec.security_context.as_mut() {
            context.run_as_user = None;
            context.run_as_group = None;
            context.fs_group = None;
        }
        let containers = spec.containers.iter_mut();
        for container in containers.chain(spec.init_containers.iter_mut().flatten()) {
            leave_user_to_platform(container);
        }
    }
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
        assert_eq!(spec["initContainers"][0]["securityContext"], json!({}));
    }
}

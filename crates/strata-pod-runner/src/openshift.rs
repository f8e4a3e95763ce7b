//! OpenShift's default Security Context Constraint, `restricted-v2`, as its admission
//! applies it to a pod of a namespace whose uid range starts at a given uid: the part
//! of OpenShift that decides who a product runs as, which no registry ships.
//!
//! - `runAsUser` (`MustRunAsRange`): a pod or container that names a uid outside the
//!   range is refused; one that names none runs as the range's first uid.
//! - `fsGroup` (`MustRunAs`): the same, with the same first value.
//! - No `runAsGroup` strategy: a pod that names none runs in group 0, as a uid with no
//!   `/etc/passwd` entry does under CRI-O.
//! - Refused outright: privileged containers, privilege escalation, added
//!   capabilities, the host's network, PID or IPC namespaces, and `hostPath` volumes.
//!
//! A pod whose service account may use the `anyuid` SCC (a database a test runs beside
//! the product, as its administrator would grant it) is admitted as written, as
//! OpenShift admits it under the first SCC that fits.
//!
//! The range is 10,000 wide, as OpenShift allocates them (`openshift.io/sa.scc.uid-range`
//! is `<first>/10000`).

use k8s_openapi::api::core::v1::{Container, Pod};

/// The width of a namespace's uid range.
pub const RANGE_WIDTH: u32 = 10_000;

/// A namespace's uid range, as `restricted-v2` enforces it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RestrictedV2 {
    /// The range's first uid, which is also the namespace's `fsGroup`.
    pub first_uid: u32,
    /// The one service account granted `anyuid`, if any.
    pub anyuid_service_account: Option<&'static str>,
}

impl RestrictedV2 {
    /// A range at a random place among those OpenShift allocates (from 1000000000 on),
    /// so a test run shows that nothing depends on one uid.
    pub fn random() -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.subsec_nanos());
        let slot = (nanos ^ std::process::id()) % 10_000;
        Self {
            first_uid: 1_000_000_000 + slot * RANGE_WIDTH,
            anyuid_service_account: None,
        }
    }

    /// The same range, with `service_account` granted `anyuid`.
    pub fn with_anyuid(self, service_account: &'static str) -> Self {
        Self {
            anyuid_service_account: Some(service_account),
            ..self
        }
    }

    fn contains(self, id: i64) -> bool {
        let first = i64::from(self.first_uid);
        (first..first + i64::from(RANGE_WIDTH)).contains(&id)
    }

    fn check_id(self, field: &str, value: Option<i64>) -> Result<(), String> {
        match value {
            Some(id) if !self.contains(id) => Err(format!(
                "{field}: Invalid value: {id}: must be in the ranges: [{}, {}]",
                self.first_uid,
                self.first_uid + RANGE_WIDTH - 1
            )),
            _ => Ok(()),
        }
    }

    /// The pod as admitted, or why `restricted-v2` refuses it.
    pub fn admit(self, mut pod: Pod) -> Result<Pod, String> {
        let refuse = |reason: String| {
            format!(
                "unable to validate against any security context constraint: \
                 [provider \"restricted-v2\": {reason}]"
            )
        };
        let spec = pod.spec.get_or_insert_default();
        if spec.service_account_name.is_some()
            && spec.service_account_name.as_deref() == self.anyuid_service_account
        {
            return Ok(pod);
        }
        for (field, set) in [
            ("hostNetwork", spec.host_network),
            ("hostPID", spec.host_pid),
            ("hostIPC", spec.host_ipc),
        ] {
            if set == Some(true) {
                return Err(refuse(format!(
                    ".spec.{field}: Invalid value: true: Host namespaces are not allowed to be used"
                )));
            }
        }
        if let Some(volume) = spec
            .volumes
            .iter()
            .flatten()
            .find(|volume| volume.host_path.is_some())
        {
            return Err(refuse(format!(
                ".spec.volumes[{}]: Invalid value: \"hostPath\": hostPath volumes are not allowed to be used",
                volume.name
            )));
        }
        let context = spec.security_context.get_or_insert_default();
        self.check_id(".spec.securityContext.runAsUser", context.run_as_user)
            .and_then(|()| self.check_id(".spec.securityContext.fsGroup", context.fs_group))
            .map_err(refuse)?;
        let uid = i64::from(self.first_uid);
        context.run_as_user.get_or_insert(uid);
        context.fs_group.get_or_insert(uid);
        context.run_as_group.get_or_insert(0);
        let containers = spec.containers.iter();
        for container in containers.chain(spec.init_containers.iter().flatten()) {
            self.check_container(container).map_err(refuse)?;
        }
        Ok(pod)
    }

    fn check_container(self, container: &Container) -> Result<(), String> {
        let Some(context) = &container.security_context else {
            return Ok(());
        };
        let field =
            |name: &str| format!("spec.containers[{}].securityContext.{name}", container.name);
        self.check_id(&field("runAsUser"), context.run_as_user)?;
        if context.privileged == Some(true) {
            return Err(format!(
                "{}: Invalid value: true: Privileged containers are not allowed",
                field("privileged")
            ));
        }
        if context.allow_privilege_escalation == Some(true) {
            return Err(format!(
                "{}: Invalid value: true: Allowing privilege escalation for containers is not allowed",
                field("allowPrivilegeEscalation")
            ));
        }
        let added = context
            .capabilities
            .as_ref()
            .and_then(|capabilities| capabilities.add.clone())
            .unwrap_or_default();
        if !added.is_empty() {
            return Err(format!(
                "{}: Invalid value: {added:?}: capability may not be added",
                field("capabilities.add")
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;
    use serde_json::{Value, json};

    use super::*;

    const RANGE: RestrictedV2 = RestrictedV2 {
        first_uid: 1_000_680_000,
        anyuid_service_account: None,
    };

    fn pod(spec: Value) -> Pod {
        serde_json::from_value(json!({"metadata": {"name": "p"}, "spec": spec})).expect("a pod")
    }

    #[test]
    fn a_pod_that_names_no_user_runs_as_the_range_in_group_0() {
        let admitted = RANGE
            .admit(pod(json!({
                "securityContext": {"runAsNonRoot": true},
                "containers": [{"name": "c", "securityContext": {"allowPrivilegeEscalation": false}}]
            })))
            .expect("admitted");
        let context = serde_json::to_value(admitted.spec.and_then(|spec| spec.security_context))
            .expect("serializes");
        assert_eq!(
            context,
            json!({"runAsNonRoot": true, "runAsUser": 1_000_680_000, "runAsGroup": 0, "fsGroup": 1_000_680_000})
        );
    }

    #[test]
    fn ids_inside_the_range_are_kept() {
        let admitted = RANGE
            .admit(pod(json!({
                "securityContext": {"runAsUser": 1_000_680_007, "fsGroup": 1_000_689_999},
                "containers": [{"name": "c"}]
            })))
            .expect("admitted");
        let context = admitted
            .spec
            .and_then(|spec| spec.security_context)
            .expect("a context");
        assert_eq!(context.run_as_user, Some(1_000_680_007));
        assert_eq!(context.fs_group, Some(1_000_689_999));
    }

    #[rstest]
    #[case::a_fixed_pod_uid(json!({"securityContext": {"runAsUser": 1000}, "containers": [{"name": "c"}]}), ".spec.securityContext.runAsUser: Invalid value: 1000")]
    #[case::a_fixed_fs_group(json!({"securityContext": {"fsGroup": 1000}, "containers": [{"name": "c"}]}), ".spec.securityContext.fsGroup: Invalid value: 1000")]
    #[case::a_fixed_container_uid(json!({"containers": [{"name": "c", "securityContext": {"runAsUser": 1_000_690_000}}]}), "spec.containers[c].securityContext.runAsUser")]
    #[case::an_init_container_escalating(json!({"containers": [{"name": "c"}], "initContainers": [{"name": "i", "securityContext": {"allowPrivilegeEscalation": true}}]}), "Allowing privilege escalation")]
    #[case::a_privileged_container(json!({"containers": [{"name": "c", "securityContext": {"privileged": true}}]}), "Privileged containers are not allowed")]
    #[case::an_added_capability(json!({"containers": [{"name": "c", "securityContext": {"capabilities": {"add": ["NET_ADMIN"]}}}]}), "capability may not be added")]
    #[case::the_host_network(json!({"hostNetwork": true, "containers": [{"name": "c"}]}), "Host namespaces")]
    #[case::a_host_path(json!({"containers": [{"name": "c"}], "volumes": [{"name": "h", "hostPath": {"path": "/"}}]}), "hostPath volumes")]
    fn restricted_v2_refuses(#[case] spec: Value, #[case] reason: &str) {
        let refused = RANGE.admit(pod(spec)).expect_err("refused");
        assert!(refused.contains("provider \"restricted-v2\""), "{refused}");
        assert!(refused.contains(reason), "{refused}");
    }

    #[test]
    fn a_service_account_granted_anyuid_keeps_its_fixed_uid() {
        let spec = json!({"serviceAccountName": "postgresql", "securityContext": {"runAsUser": 999}, "containers": [{"name": "c"}]});
        let admitted = RANGE
            .with_anyuid("postgresql")
            .admit(pod(spec.clone()))
            .expect("admitted under anyuid");
        assert_eq!(admitted, pod(spec.clone()));
        let mut other = spec;
        other["serviceAccountName"] = json!("superset");
        assert!(RANGE.with_anyuid("postgresql").admit(pod(other)).is_err());
    }

    #[test]
    fn a_random_range_is_one_openshift_could_allocate() {
        let range = RestrictedV2::random();
        assert!(range.first_uid >= 1_000_000_000);
        assert_eq!(range.first_uid % RANGE_WIDTH, 0);
    }
}

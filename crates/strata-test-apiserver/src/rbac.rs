//! RBAC for ServiceAccount users, as the API server's authorizer does it, so the
//! sandbox can hold an operator process to the Roles and bindings its chart created.
//!
//! When enforcement is on ([`TestApiServer::enforce_rbac`]), a request whose user is
//! `system:serviceaccount:<namespace>:<name>` (the bearer token of an HTTP request) is
//! allowed only when a rule grants it:
//! - a ClusterRoleBinding naming the ServiceAccount grants its ClusterRole's rules in
//!   every namespace and for cluster-scoped kinds;
//! - a RoleBinding in the request's namespace grants its Role's (or ClusterRole's)
//!   rules in that namespace.
//!
//! A rule matches when its API groups, resources (`plural` or `plural/subresource`) and
//! verbs contain the request's or `*`, and, when it names resources, the request names
//! one of them (never for create, list, watch or deletecollection, as in Kubernetes).
//! Anything else is answered 403 and recorded ([`TestApiServer::denied`]). Every other
//! user stays an administrator. Non-resource paths (discovery, OpenAPI, version) are
//! open to everyone, as `system:discovery` makes them on a cluster.

use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, Subject,
};

use crate::requests::RequestRecord;
use crate::server::TestApiServer;
use crate::status::ApiError;

/// The user prefix of ServiceAccount tokens.
pub const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

/// `None` when `request` is allowed, else the 403 to answer.
pub(crate) fn authorize(server: &TestApiServer, request: &RequestRecord) -> Option<ApiError> {
    if !server.rbac_enforced() {
        return None;
    }
    let user = request.user.as_deref()?;
    let (namespace, name) = user.strip_prefix(SERVICE_ACCOUNT_PREFIX)?.split_once(':')?;
    let verb = request.verb.to_string();
    let resource = match &request.subresource {
        Some(sub) => format!("{}/{sub}", request.resource),
        None => request.resource.clone(),
    };
    let subject_matches = |subjects: &Option<Vec<Subject>>| {
        subjects.iter().flatten().any(|subject| {
            subject.kind == "ServiceAccount"
                && subject.name == name
                && subject.namespace.as_deref() == Some(namespace)
        })
    };
    let allows = |rules: &Option<Vec<PolicyRule>>| {
        rules.iter().flatten().any(|rule| {
            rule_allows(
                rule,
                &request.group,
                &resource,
                &verb,
                request.name.as_deref(),
            )
        })
    };
    let cluster_role = |role: &str| {
        server
            .list_typed::<ClusterRole>()
            .into_iter()
            .find(|found| found.metadata.name.as_deref() == Some(role))
    };
    let cluster_wide = server
        .list_typed::<ClusterRoleBinding>()
        .into_iter()
        .filter(|binding| subject_matches(&binding.subjects))
        .filter(|binding| binding.role_ref.kind == "ClusterRole")
        .filter_map(|binding| cluster_role(&binding.role_ref.name))
        .any(|role| allows(&role.rules));
    if cluster_wide {
        return None;
    }
    if let Some(request_namespace) = request.namespace.as_deref() {
        let namespaced = server
            .list_typed::<RoleBinding>()
            .into_iter()
            .filter(|binding| binding.metadata.namespace.as_deref() == Some(request_namespace))
            .filter(|binding| subject_matches(&binding.subjects))
            .any(|binding| match binding.role_ref.kind.as_str() {
                "Role" => server
                    .get_typed::<Role>(request_namespace, &binding.role_ref.name)
                    .is_some_and(|role| allows(&role.rules)),
                "ClusterRole" => {
                    cluster_role(&binding.role_ref.name).is_some_and(|role| allows(&role.rules))
                }
                _ => false,
            });
        if namespaced {
            return None;
        }
    }
    let place = match request.namespace.as_deref() {
        Some(namespace) => format!(" in the namespace \"{namespace}\""),
        None => " at the cluster scope".to_owned(),
    };
    Some(ApiError::new(
        403,
        "Forbidden",
        format!(
            "{resource}{} is forbidden: User \"{user}\" cannot {verb} resource \"{resource}\" in API group \"{}\"{place}",
            request
                .name
                .as_deref()
                .map(|name| format!(" \"{name}\""))
                .unwrap_or_default(),
            request.group,
        ),
    ))
}

fn rule_allows(
    rule: &PolicyRule,
    group: &str,
    resource: &str,
    verb: &str,
    name: Option<&str>,
) -> bool {
    let contains = |values: &Option<Vec<String>>, wanted: &str| {
        values
            .iter()
            .flatten()
            .any(|value| value == wanted || value == "*")
    };
    let names_ok = match rule.resource_names.as_deref() {
        None | Some([]) => true,
        Some(names) => {
            !matches!(verb, "create" | "list" | "watch" | "deletecollection")
                && name.is_some_and(|name| names.iter().any(|allowed| allowed == name))
        }
    };
    contains(&rule.api_groups, group)
        && contains(&rule.resources, resource)
        && rule.verbs.iter().any(|value| value == verb || value == "*")
        && names_ok
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    fn rule(groups: &[&str], resources: &[&str], verbs: &[&str], names: &[&str]) -> PolicyRule {
        let strings = |values: &[&str]| values.iter().map(|value| (*value).to_owned()).collect();
        PolicyRule {
            api_groups: Some(strings(groups)),
            resources: Some(strings(resources)),
            verbs: strings(verbs),
            resource_names: (!names.is_empty()).then(|| strings(names)),
            ..PolicyRule::default()
        }
    }

    #[rstest]
    #[case::exact(rule(&["apps"], &["statefulsets"], &["patch"], &[]), "apps", "statefulsets", "patch", Some("zk"), true)]
    #[case::other_verb(rule(&["apps"], &["statefulsets"], &["get"], &[]), "apps", "statefulsets", "patch", Some("zk"), false)]
    #[case::other_group(rule(&[""], &["statefulsets"], &["patch"], &[]), "apps", "statefulsets", "patch", Some("zk"), false)]
    #[case::subresource_named(rule(&["x"], &["things/status"], &["patch"], &[]), "x", "things/status", "patch", Some("a"), true)]
    #[case::subresource_not_implied(rule(&["x"], &["things"], &["patch"], &[]), "x", "things/status", "patch", Some("a"), false)]
    #[case::wildcards(rule(&["*"], &["*"], &["*"], &[]), "x", "things", "delete", Some("a"), true)]
    #[case::named(rule(&["x"], &["things"], &["get"], &["a"]), "x", "things", "get", Some("a"), true)]
    #[case::other_name(rule(&["x"], &["things"], &["get"], &["a"]), "x", "things", "get", Some("b"), false)]
    #[case::names_never_allow_list(rule(&["x"], &["things"], &["list"], &["a"]), "x", "things", "list", None, false)]
    fn rules_match_as_kubernetes_matches_them(
        #[case] rule: PolicyRule,
        #[case] group: &str,
        #[case] resource: &str,
        #[case] verb: &str,
        #[case] name: Option<&str>,
        #[case] allowed: bool,
    ) {
        assert_eq!(rule_allows(&rule, group, resource, verb, name), allowed);
    }
}

use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Secret};
use rstest::rstest;

use super::*;
use crate::cache::ChildKind;

/// A controller of Deployments (standing in for a custom kind) with the given children.
fn controller(child_kinds: Vec<ChildKind>, watch_pods: bool) -> ControllerRegistration {
    ControllerRegistration::of::<Deployment>(ControllerSpec {
        name: "deployment",
        child_kinds,
        watch_pods,
        restarts_pods: false,
    })
}

fn registration(controllers: Vec<ControllerRegistration>) -> OperatorRegistration {
    OperatorRegistration { controllers }
}

fn verbs(list: &[Verb]) -> BTreeSet<Verb> {
    list.iter().copied().collect()
}

#[rstest]
#[case::primary_is_watched(
    registration(vec![controller(vec![], true)]),
    GroupResource::new("apps", "deployments"),
    verbs(&[Verb::List, Verb::Watch]),
)]
#[case::finalizer_adds_patch_of_the_primary(
    registration(vec![controller(vec![], true).with_finalizer()]),
    GroupResource::new("apps", "deployments"),
    verbs(&[Verb::List, Verb::Watch, Verb::Patch]),
)]
#[case::status_is_applied(
    registration(vec![controller(vec![], true)]),
    GroupResource::new("apps", "deployments/status"),
    verbs(&[Verb::Patch]),
)]
#[case::child_is_watched_applied_and_pruned(
    registration(vec![controller(vec![ChildKind::of::<ConfigMap>()], true)]),
    GroupResource::new("", "configmaps"),
    verbs(&[Verb::Get, Verb::List, Verb::Watch, Verb::Create, Verb::Patch, Verb::Delete]),
)]
#[case::secret_child_gets_only_the_child_verbs(
    registration(vec![controller(vec![ChildKind::of::<Secret>()], true)]),
    GroupResource::new("", "secrets"),
    verbs(&[Verb::Get, Verb::List, Verb::Watch, Verb::Create, Verb::Patch, Verb::Delete]),
)]
#[case::persistent_volume_claims_are_never_deleted(
    registration(vec![controller(vec![ChildKind::of::<PersistentVolumeClaim>()], true)]),
    GroupResource::new("", "persistentvolumeclaims"),
    verbs(&[Verb::Get, Verb::List, Verb::Watch, Verb::Create, Verb::Patch]),
)]
#[case::pods_are_cached_when_they_trigger(
    registration(vec![controller(vec![], true)]),
    GroupResource::new("", "pods"),
    verbs(&[Verb::List, Verb::Watch]),
)]
#[case::pods_are_watched_for_status(
    registration(vec![controller(vec![], true)]),
    GroupResource::new("", "pods"),
    verbs(&[Verb::List, Verb::Watch]),
)]
#[case::pods_of_owned_stateful_sets_may_be_replaced_when_stuck(
    registration(vec![controller(vec![ChildKind::of::<StatefulSet>()], true)]),
    GroupResource::new("", "pods"),
    verbs(&[Verb::List, Verb::Watch, Verb::Delete]),
)]
#[case::extra_watched_kind_is_only_read(
    registration(vec![controller(vec![], false).watching::<Job>()]),
    GroupResource::new("batch", "jobs"),
    verbs(&[Verb::List, Verb::Watch]),
)]
#[case::events_are_created_then_patched(
    registration(vec![controller(vec![], false)]),
    GroupResource::new("events.k8s.io", "events"),
    verbs(&[Verb::Create, Verb::Patch]),
)]
#[case::kinds_shared_by_controllers_get_the_union(
    registration(vec![
        controller(vec![ChildKind::of::<StatefulSet>()], true),
        ControllerRegistration::of::<ConfigMap>(ControllerSpec {
            name: "configmap",
            child_kinds: vec![],
            watch_pods: false,
            restarts_pods: false,
        })
        .watching::<StatefulSet>(),
    ]),
    GroupResource::new("apps", "statefulsets"),
    verbs(&[Verb::Get, Verb::List, Verb::Watch, Verb::Create, Verb::Patch, Verb::Delete]),
)]
fn permissions_follow_the_registration(
    #[case] registration: OperatorRegistration,
    #[case] resource: GroupResource,
    #[case] expected: BTreeSet<Verb>,
) {
    let permissions = permissions(&registration);
    assert_eq!(
        permissions.get(&resource),
        Some(&expected),
        "{permissions:?}"
    );
}

#[test]
fn pods_are_not_granted_to_controllers_that_do_not_watch_them() {
    let permissions = permissions(&registration(vec![controller(vec![], false)]));
    assert_eq!(
        permissions.get(&GroupResource::new("", "pods")),
        None,
        "{permissions:?}"
    );
}

#[test]
fn only_controllers_that_restart_or_replace_pods_may_delete_them() {
    let restarting = ControllerRegistration::of::<Deployment>(ControllerSpec {
        name: "deployment",
        child_kinds: vec![],
        watch_pods: true,
        restarts_pods: true,
    });
    let pods = GroupResource::new("", "pods");
    assert_eq!(
        permissions(&registration(vec![restarting])).get(&pods),
        Some(&verbs(&[Verb::List, Verb::Watch, Verb::Delete]))
    );
    assert_eq!(
        permissions(&registration(vec![controller(vec![], true)])).get(&pods),
        Some(&verbs(&[Verb::List, Verb::Watch]))
    );
}

#[rstest]
#[case::empty_operator_needs_nothing(registration(vec![]), vec![])]
#[case::one_controller_without_children(
    registration(vec![controller(vec![], true)]),
    vec![
        GroupResource::new("", "pods"),
        GroupResource::new("apps", "deployments"),
        GroupResource::new("apps", "deployments/status"),
        GroupResource::new("events.k8s.io", "events"),
    ],
)]
fn permissions_name_nothing_beyond_the_registration(
    #[case] registration: OperatorRegistration,
    #[case] expected: Vec<GroupResource>,
) {
    let resources: Vec<GroupResource> = permissions(&registration).into_keys().collect();
    assert_eq!(resources, expected);
}

#[test]
fn rules_merge_resources_with_the_same_verbs_per_group() {
    let registration = registration(vec![
        controller(
            vec![
                ChildKind::of::<Secret>(),
                ChildKind::of::<ConfigMap>(),
                ChildKind::of::<StatefulSet>(),
            ],
            true,
        )
        .with_finalizer(),
    ]);
    let rules: Vec<(Vec<String>, Vec<String>, Vec<String>)> = rules(&registration)
        .into_iter()
        .map(|rule| {
            (
                rule.api_groups.unwrap_or_default(),
                rule.resources.unwrap_or_default(),
                rule.verbs,
            )
        })
        .collect();
    let strings = |values: &[&str]| values.iter().map(|&v| v.to_owned()).collect::<Vec<_>>();
    assert_eq!(
        rules,
        vec![
            (
                strings(&[""]),
                strings(&["configmaps", "secrets"]),
                strings(&["get", "list", "watch", "create", "patch", "delete"]),
            ),
            (
                strings(&[""]),
                strings(&["pods"]),
                strings(&["list", "watch", "delete"]),
            ),
            (
                strings(&["apps"]),
                strings(&["deployments"]),
                strings(&["list", "watch", "patch"]),
            ),
            (
                strings(&["apps"]),
                strings(&["deployments/status"]),
                strings(&["patch"]),
            ),
            (
                strings(&["apps"]),
                strings(&["statefulsets"]),
                strings(&["get", "list", "watch", "create", "patch", "delete"]),
            ),
            (
                strings(&["events.k8s.io"]),
                strings(&["events"]),
                strings(&["create", "patch"]),
            ),
        ]
    );
}

#[test]
fn rules_have_no_wildcards_and_are_deterministic() {
    let build = || {
        registration(vec![
            controller(vec![ChildKind::of::<ConfigMap>()], true).watching::<Job>(),
        ])
    };
    let first = rules(&build());
    assert_eq!(first, rules(&build()));
    for rule in &first {
        let names = rule
            .api_groups
            .iter()
            .chain(rule.resources.iter())
            .flatten()
            .chain(rule.verbs.iter());
        for name in names {
            assert_ne!(name, "*", "{rule:?}");
        }
    }
}

fn rule(groups: &[&str], resources: &[&str], verbs: &[&str]) -> PolicyRule {
    let strings = |values: &[&str]| Some(values.iter().map(|&v| v.to_owned()).collect());
    PolicyRule {
        api_groups: strings(groups),
        resources: strings(resources),
        verbs: strings(verbs).unwrap_or_default(),
        ..PolicyRule::default()
    }
}

#[rstest]
#[case::exact_match(rule(&["apps"], &["statefulsets"], &["patch"]), "apps", "statefulsets", "patch", true)]
#[case::other_verb(rule(&["apps"], &["statefulsets"], &["patch"]), "apps", "statefulsets", "delete", false)]
#[case::other_group(rule(&["apps"], &["statefulsets"], &["patch"]), "", "statefulsets", "patch", false)]
#[case::resource_does_not_cover_status(
    rule(&["apps"], &["statefulsets"], &["patch"]), "apps", "statefulsets/status", "patch", false
)]
#[case::wildcards_match_anything(rule(&["*"], &["*"], &["*"]), "apps", "statefulsets", "patch", true)]
fn allows_follows_rbac_matching(
    #[case] rule: PolicyRule,
    #[case] group: &str,
    #[case] resource: &str,
    #[case] verb: &str,
    #[case] expected: bool,
) {
    assert_eq!(allows(&[rule], group, resource, verb), expected);
}

#[test]
fn allows_ignores_rules_limited_to_resource_names() {
    let mut limited = rule(&[""], &["configmaps"], &["list"]);
    limited.resource_names = Some(vec!["one".to_owned()]);
    assert!(!allows(&[limited], "", "configmaps", "list"));
}

#[test]
fn verbs_print_as_rbac_spells_them() {
    assert_eq!(Verb::Patch.to_string(), "patch");
    assert_eq!("watch".parse::<Verb>(), Ok(Verb::Watch));
}

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pretty_assertions::assert_eq;
use rstest::rstest;
use serde_json::{Value, json};

use super::*;

fn exposure(value: Value) -> HttpRouteExposure {
    serde_json::from_value(value).expect("an HTTPRoute exposure")
}

/// `count` references to distinct Gateways.
fn gateways(count: usize) -> Value {
    (0..count)
        .map(|index| json!({"name": format!("gateway-{index}")}))
        .collect()
}

/// `count` distinct host names.
fn hostnames(count: usize) -> Value {
    (0..count)
        .map(|index| json!(format!("host-{index}.example.com")))
        .collect()
}

#[rstest]
#[case::one_gateway(json!({"parentRefs": [{"name": "public"}]}))]
#[case::everything(json!({
    "parentRefs": [{"name": "public", "namespace": "infra", "sectionName": "https"}],
    "hostnames": ["trino.example.com", "*.data.example.com"], "path": "/trino",
    "annotations": {"external-dns.alpha.kubernetes.io/ttl": "60"}}))]
#[case::two_listeners_of_one_gateway(json!({"parentRefs": [
    {"name": "public", "sectionName": "http"}, {"name": "public", "sectionName": "https"}]}))]
#[case::one_name_in_two_namespaces(json!({"parentRefs": [{"name": "public"}, {"name": "public", "namespace": "infra"}]}))]
#[case::the_most_gateways(json!({"parentRefs": gateways(32)}))]
#[case::the_most_hostnames(json!({"parentRefs": [{"name": "public"}], "hostnames": hostnames(16)}))]
#[case::an_escaped_space(json!({"parentRefs": [{"name": "public"}], "path": "/a%20b"}))]
#[case::a_path_with_punctuation(json!({"parentRefs": [{"name": "public"}], "path": "/a-b_c.d~e:f@g"}))]
fn accepted(#[case] value: Value) {
    assert_eq!(exposure(value).check("clusterConfig.httpRoute"), Ok(()));
}

#[rstest]
#[case::no_gateway(json!({"parentRefs": []}), "parentRefs: name at least one Gateway")]
#[case::too_many_gateways(json!({"parentRefs": gateways(33)}), "parentRefs: 33 Gateways, at most 32")]
#[case::a_gateway_name_in_capitals(json!({"parentRefs": [{"name": "Public"}]}), "parentRefs[0].name")]
#[case::a_namespace_with_a_dot(json!({"parentRefs": [{"name": "public", "namespace": "infra.prod"}]}), "parentRefs[0].namespace")]
#[case::a_listener_with_an_underscore(json!({"parentRefs": [{"name": "public", "sectionName": "web_ui"}]}), "parentRefs[0].sectionName")]
#[case::one_gateway_twice(json!({"parentRefs": [{"name": "public"}, {"name": "public"}]}), "Gateway public is named more than once")]
#[case::a_listener_and_the_whole_gateway(json!({"parentRefs": [
    {"name": "public", "namespace": "infra"}, {"name": "public", "namespace": "infra", "sectionName": "https"}]}),
    "Gateway infra/public is named more than once")]
#[case::one_listener_twice(json!({"parentRefs": [
    {"name": "public", "sectionName": "https"}, {"name": "public", "sectionName": "https"}]}), "more than once")]
#[case::too_many_hostnames(json!({"parentRefs": [{"name": "public"}], "hostnames": hostnames(17)}), "hostnames: 17 host names, at most 16")]
#[case::a_hostname_in_capitals(json!({"parentRefs": [{"name": "public"}], "hostnames": ["Trino.example.com"]}), "hostnames")]
#[case::an_ip_address(json!({"parentRefs": [{"name": "public"}], "hostnames": ["192.0.2.7"]}), "IP address")]
#[case::a_wildcard_not_first(json!({"parentRefs": [{"name": "public"}], "hostnames": ["a.*.example.com"]}), "hostnames")]
#[case::a_relative_path(json!({"parentRefs": [{"name": "public"}], "path": "ui"}), "path")]
#[case::a_double_slash(json!({"parentRefs": [{"name": "public"}], "path": "/a//b"}), "path")]
#[case::a_dot_segment(json!({"parentRefs": [{"name": "public"}], "path": "/a/./b"}), "path")]
#[case::a_parent_step_at_the_end(json!({"parentRefs": [{"name": "public"}], "path": "/a/.."}), "path")]
#[case::an_encoded_slash(json!({"parentRefs": [{"name": "public"}], "path": "/a%2Fb"}), "path")]
#[case::a_fragment(json!({"parentRefs": [{"name": "public"}], "path": "/a#b"}), "path")]
#[case::a_space(json!({"parentRefs": [{"name": "public"}], "path": "/a b"}), "path")]
#[case::a_broken_escape(json!({"parentRefs": [{"name": "public"}], "path": "/a%2"}), "path")]
#[case::an_annotation_key_with_a_space(json!({"parentRefs": [{"name": "public"}], "annotations": {"a b": "c"}}), "annotations")]
fn refused(#[case] value: Value, #[case] expected: &str) {
    let refused = exposure(value)
        .check("clusterConfig.httpRoute")
        .expect_err("refused");
    assert!(refused.starts_with("clusterConfig.httpRoute."), "{refused}");
    assert!(refused.contains(expected), "{refused}");
}

#[rstest]
#[case::everything(
    json!({"parentRefs": [{"name": "public", "namespace": "infra", "sectionName": "https"}],
        "hostnames": ["trino.example.com"], "path": "/trino",
        "annotations": {"external-dns.alpha.kubernetes.io/ttl": "60"}}),
    json!({
        "metadata": {"name": "simple-trino", "namespace": "prod",
            "labels": {"app.kubernetes.io/instance": "simple-trino"},
            "annotations": {"external-dns.alpha.kubernetes.io/ttl": "60"}},
        "spec": {
            "parentRefs": [{"name": "public", "namespace": "infra", "sectionName": "https"}],
            "hostnames": ["trino.example.com"],
            "rules": [{
                "matches": [{"path": {"type": "PathPrefix", "value": "/trino"}}],
                "backendRefs": [{"name": "simple-trino", "port": 8443}]
            }]
        }
    })
)]
#[case::the_listeners_hostnames_and_every_path(
    json!({"parentRefs": [{"name": "public"}]}),
    json!({
        "metadata": {"name": "simple-trino", "namespace": "prod",
            "labels": {"app.kubernetes.io/instance": "simple-trino"}},
        "spec": {
            "parentRefs": [{"name": "public"}],
            "rules": [{
                "matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
                "backendRefs": [{"name": "simple-trino", "port": 8443}]
            }]
        }
    })
)]
fn the_route_sends_its_hosts_and_path_to_the_service_port(
    #[case] wanted: Value,
    #[case] expected: Value,
) {
    let route = http_route(
        &exposure(wanted),
        "simple-trino",
        "prod",
        BTreeMap::from([(
            "app.kubernetes.io/instance".to_owned(),
            "simple-trino".to_owned(),
        )]),
        "simple-trino",
        8443,
    );
    assert_eq!(serde_json::to_value(&route).expect("serializes"), expected);
}

#[rstest]
#[case::kind(<HttpRoute as kube::Resource>::kind(&()).into_owned(), "HTTPRoute")]
#[case::api_version(<HttpRoute as kube::Resource>::api_version(&()).into_owned(), "gateway.networking.k8s.io/v1")]
#[case::plural(<HttpRoute as kube::Resource>::plural(&()).into_owned(), "httproutes")]
fn the_kind_is_the_gateway_apis(#[case] actual: String, #[case] expected: &str) {
    assert_eq!(actual, expected);
}

/// A condition written for the route's current generation, 2.
fn condition(type_: &str, status: &str, reason: &str, message: &str) -> Value {
    json!({"type": type_, "status": status, "reason": reason, "message": message,
        "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": 2})
}

fn accepted_condition() -> Value {
    condition("Accepted", "True", "Accepted", "Route is accepted")
}

fn resolved_condition() -> Value {
    condition(
        "ResolvedRefs",
        "True",
        "ResolvedRefs",
        "Resolved all the Object references",
    )
}

/// The same condition, written for the route's previous generation.
fn stale(mut condition: Value) -> Value {
    condition["observedGeneration"] = json!(1);
    condition
}

/// One Gateway's entry in a route's status.
fn parent(gateway: Value, conditions: Vec<Value>) -> Value {
    json!({"parentRef": gateway, "controllerName": "example.net/gateway-controller",
        "conditions": conditions})
}

/// The stored route of generation 2, with `parents` in its status (none without).
fn stored(parents: Option<Vec<Value>>) -> HttpRoute {
    let mut route = json!({"metadata": {"name": "simple-trino", "generation": 2}, "spec": {}});
    if let Some(parents) = parents {
        route["status"] = json!({ "parents": parents });
    }
    serde_json::from_value(route).expect("an HTTPRoute")
}

#[rstest]
#[case::not_stored(None, None)]
#[case::no_status_yet(Some(stored(None)), None)]
#[case::no_gateway_saw_it_yet(Some(stored(Some(vec![]))), None)]
#[case::accepted(
    Some(stored(Some(vec![parent(json!({"name": "public"}), vec![accepted_condition(), resolved_condition()])]))),
    None
)]
#[case::not_accepted(
    Some(stored(Some(vec![parent(
        json!({"name": "public", "namespace": "infra", "sectionName": "https"}),
        vec![condition("Accepted", "False", "NotAllowedByListeners", "no listener admits routes from namespace prod")],
    )]))),
    Some("Gateway infra/public (listener https) did not accept the route: NotAllowedByListeners: no listener admits routes from namespace prod")
)]
#[case::backend_not_found(
    Some(stored(Some(vec![parent(
        json!({"name": "public"}),
        vec![accepted_condition(), condition("ResolvedRefs", "False", "BackendNotFound", "Service prod/simple-trino not found")],
    )]))),
    Some("Gateway public could not resolve the route's backend: BackendNotFound: Service prod/simple-trino not found")
)]
#[case::a_refusal_of_the_previous_generation(
    Some(stored(Some(vec![parent(
        json!({"name": "public"}),
        vec![stale(condition("Accepted", "False", "NoMatchingListenerHostname", "no listener for old.example.com"))],
    )]))),
    None
)]
#[case::two_gateways_refuse_in_order_of_name(
    Some(stored(Some(vec![
        parent(json!({"name": "b-internal"}), vec![condition("Accepted", "False", "NotAllowedByListeners", "b")]),
        parent(json!({"name": "a-public"}), vec![condition("Accepted", "False", "NoMatchingParent", "a")]),
    ]))),
    Some("Gateway a-public did not accept the route: NoMatchingParent: a; Gateway b-internal did not accept the route: NotAllowedByListeners: b")
)]
fn a_refusal_by_a_gateway_is_a_problem(
    #[case] stored: Option<HttpRoute>,
    #[case] expected: Option<&str>,
) {
    assert_eq!(
        route_problem(&HttpRoute::default(), stored.as_ref()).as_deref(),
        expected
    );
}

/// The cache holds the route as it was before the last change until the apply step
/// writes the new spec: its Gateways' verdict is about the old hosts, and says nothing.
#[test]
fn a_verdict_on_the_previous_spec_says_nothing_of_the_new_one() {
    let wanted =
        exposure(json!({"parentRefs": [{"name": "public"}], "hostnames": ["new.example.com"]}));
    let desired = http_route(
        &wanted,
        "simple-trino",
        "default",
        BTreeMap::new(),
        "svc",
        8443,
    );
    let old =
        exposure(json!({"parentRefs": [{"name": "public"}], "hostnames": ["old.example.com"]}));
    let mut refused = stored(Some(vec![parent(
        json!({"name": "public"}),
        vec![condition(
            "Accepted",
            "False",
            "NoMatchingListenerHostname",
            "old.example.com",
        )],
    )]));
    refused.spec = http_route(
        &old,
        "simple-trino",
        "default",
        BTreeMap::new(),
        "svc",
        8443,
    )
    .spec;
    assert_eq!(route_problem(&desired, Some(&refused)), None);
    let mut accepted = accepted_by_public();
    accepted.spec = refused.spec.clone();
    assert_eq!(route_host_and_path(&desired, Some(&accepted)), None);
    accepted.spec = desired.spec.clone();
    assert_eq!(
        route_host_and_path(&desired, Some(&accepted)).as_deref(),
        Some("new.example.com/")
    );
}

fn accepted_by_public() -> HttpRoute {
    stored(Some(vec![parent(
        json!({"name": "public"}),
        vec![accepted_condition(), resolved_condition()],
    )]))
}

#[rstest]
#[case::not_asked_for(None, Some(accepted_by_public()), None)]
#[case::not_stored_yet(Some(json!({"hostnames": ["trino.example.com"]})), None, None)]
#[case::no_status_yet(Some(json!({"hostnames": ["trino.example.com"]})), Some(stored(None)), None)]
#[case::accepted(Some(json!({"hostnames": ["trino.example.com"]})), Some(accepted_by_public()), Some("trino.example.com/"))]
#[case::accepted_with_a_path(
    Some(json!({"hostnames": ["trino.example.com"], "path": "/ui"})),
    Some(accepted_by_public()),
    Some("trino.example.com/ui")
)]
#[case::the_first_host_that_is_no_wildcard(
    Some(json!({"hostnames": ["*.example.com", "trino.example.com", "trino.example.net"]})),
    Some(accepted_by_public()),
    Some("trino.example.com/")
)]
#[case::only_wildcards(Some(json!({"hostnames": ["*.example.com"]})), Some(accepted_by_public()), None)]
#[case::the_listeners_hostnames(Some(json!({})), Some(accepted_by_public()), None)]
#[case::refused(
    Some(json!({"hostnames": ["trino.example.com"]})),
    Some(stored(Some(vec![parent(json!({"name": "public"}), vec![condition("Accepted", "False", "NotAllowedByListeners", "")])]))),
    None
)]
#[case::accepted_by_one_of_two(
    Some(json!({"hostnames": ["trino.example.com"]})),
    Some(stored(Some(vec![
        parent(json!({"name": "internal"}), vec![condition("Accepted", "False", "NotAllowedByListeners", "")]),
        parent(json!({"name": "public"}), vec![accepted_condition()]),
    ]))),
    Some("trino.example.com/")
)]
#[case::accepted_without_its_backend(
    Some(json!({"hostnames": ["trino.example.com"]})),
    Some(stored(Some(vec![parent(
        json!({"name": "public"}),
        vec![accepted_condition(), condition("ResolvedRefs", "False", "BackendNotFound", "")],
    )]))),
    None
)]
#[case::accepted_in_the_previous_generation(
    Some(json!({"hostnames": ["trino.example.com"]})),
    Some(stored(Some(vec![parent(json!({"name": "public"}), vec![stale(accepted_condition())])]))),
    None
)]
fn the_host_is_published_once_a_gateway_accepted_the_route(
    #[case] wanted: Option<Value>,
    #[case] stored: Option<HttpRoute>,
    #[case] expected: Option<&str>,
) {
    let desired = wanted.map(|mut value| {
        value["parentRefs"] = json!([{"name": "public"}]);
        http_route(
            &exposure(value),
            "simple-trino",
            "default",
            BTreeMap::new(),
            "svc",
            8443,
        )
    });
    // The stored route is the desired one as applied, with its Gateways' status.
    let stored = stored.map(|mut stored| {
        if let Some(desired) = &desired {
            stored.spec = desired.spec.clone();
        }
        stored
    });
    assert_eq!(
        desired
            .and_then(|desired| route_host_and_path(&desired, stored.as_ref()))
            .as_deref(),
        expected
    );
}

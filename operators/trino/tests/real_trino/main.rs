//! Trino 483 for real (issues 24 and 25): the objects the operator renders for the
//! example (one coordinator, two workers, the `tpch` and `memory` catalogs, HTTPS with
//! the operator's certificates, password, LDAP (a real slapd) and OAuth2 (a real OpenID
//! Connect provider) authentication, and the user's rules), run as
//! rendered by the pod runner on the release's jars and launcher from Maven Central, on
//! Java 25. Needs
//! root and the image directory of `cargo xtask tools`; `cargo xtask test` runs it.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod metrics;
mod oidc;
mod openldap;
mod operated;
mod rotation;
mod support;

use std::time::{Duration, Instant};

use serde_json::json;
use strata_operator::pod_security::PodSecurity;
use strata_pod_runner::manifest::apply_all;
use strata_pod_runner::openshift::RestrictedV2;
use support::{
    CLIENT_POD, COORDINATOR, MEMORY_LIMIT_MIB, NAMESPACE, SHUTDOWN_GRACE, USERS, WORKERS,
    ask_shutdown, client_answer, client_plan, client_pod, example_documents, fqdn, log,
    peak_resident_mib, query, query_error, rendered, resident_mib, runner_on,
};
use trino_operator::config::server::{METRICS_USER, SHUTDOWN_USER};

/// Queries that fill the workers' memory pools together: hash joins and
/// aggregations with many groups over TPC-H sf1.
const LOAD_QUERIES: [&str; 6] = [
    "SELECT count(*) FROM tpch.sf1.orders o JOIN tpch.sf1.lineitem l ON o.orderkey = l.orderkey",
    "SELECT orderkey, sum(extendedprice) FROM tpch.sf1.lineitem GROUP BY orderkey ORDER BY 2 DESC LIMIT 3",
    "SELECT partkey, suppkey, count(*) FROM tpch.sf1.lineitem GROUP BY partkey, suppkey ORDER BY 3 DESC LIMIT 3",
    "SELECT count(*) FROM tpch.sf1.partsupp ps JOIN tpch.sf1.lineitem l ON ps.partkey = l.partkey AND ps.suppkey = l.suppkey",
    "SELECT custkey, count(*) FROM tpch.sf1.orders GROUP BY custkey ORDER BY 2 DESC LIMIT 3",
    "SELECT comment, count(*) FROM tpch.sf1.orders GROUP BY comment ORDER BY 2 DESC LIMIT 3",
];

/// The worker role group whose `configOverrides` holds a key Trino 483 does not know.
const UNKNOWN_KEY_GROUP: &str = "simple-trino-worker-unknown-key";
/// Its pod.
const UNKNOWN_KEY_POD: &str = "simple-trino-worker-unknown-key-0";
/// The rows of `tpch.sf10.lineitem`: a scan of its comments takes the two workers
/// about 45 s here, long enough to be running when the drain begins.
const LINEITEM_ROWS: u64 = 59_986_052;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root and the Trino image directory; run by cargo xtask test"]
async fn the_rendered_example_queries_drains_a_worker_and_refuses_what_483_refuses() {
    // On OpenShift's restricted-v2, with an arbitrary uid in group 0 (issue 26, item 4):
    // the fixed-uid pods are proven by the operated tests.
    let mut runner = runner_on(Some(RestrictedV2::random()));
    let documents = example_documents(json!({
        "unknown-key": {
            "replicas": 1,
            "configOverrides": {"config.properties": {"strata.no-such-property": "1"}}
        }
    }));
    let (mut objects, passwords) = rendered(&documents);
    for object in &mut objects {
        PodSecurity::Openshift.apply_to_value(object);
    }
    // Everything but the example's own StatefulSets first: the shared objects and the
    // group with the unknown key.
    let (example_sets, first): (Vec<_>, Vec<_>) = objects.into_iter().partition(|object| {
        object["kind"] == "StatefulSet" && object["metadata"]["name"] != UNKNOWN_KEY_GROUP
    });
    assert_eq!(
        example_sets.len(),
        2,
        "the coordinator's and workers' StatefulSets"
    );

    // A key 483 does not use: the real server refuses to start and says which.
    apply_all(&mut runner, &first).unwrap_or_else(|error| panic!("{error}"));
    runner
        .wait_until(
            Duration::from_secs(120),
            "the refused server to exit",
            |runner| {
                runner
                    .status(NAMESPACE, UNKNOWN_KEY_POD)
                    .is_some_and(|status| status.containers.iter().any(|c| c.restart_count > 0))
            },
        )
        .await
        .unwrap_or_else(|report| panic!("{report}"));
    let refused = log(&runner, UNKNOWN_KEY_POD, "trino", 0);
    assert!(
        refused.contains("Configuration property 'strata.no-such-property' was not used"),
        "{refused}"
    );
    runner
        .delete(NAMESPACE, UNKNOWN_KEY_POD)
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    // Every node fetches the OpenID Connect provider's discovery document when it
    // starts, and does not start without it.
    runner
        .wait_ready(
            NAMESPACE,
            &[oidc::POD, openldap::POD],
            Duration::from_secs(120),
        )
        .await
        .unwrap_or_else(|report| panic!("{report}"));

    // The example starts: the rendered startup and readiness probes pass against the
    // real /v1/info.
    let example: Vec<_> = example_sets
        .into_iter()
        .chain([client_pod(&[
            USERS[0],
            USERS[1],
            (METRICS_USER, &passwords.metrics),
            (SHUTDOWN_USER, &passwords.shutdown),
        ])])
        .collect();
    apply_all(&mut runner, &example).unwrap_or_else(|error| panic!("{error}"));
    let started = Instant::now();
    runner
        .wait_ready(
            NAMESPACE,
            &[
                COORDINATOR,
                WORKERS[0],
                WORKERS[1],
                CLIENT_POD,
                openldap::POD,
            ],
            Duration::from_secs(300),
        )
        .await
        .unwrap_or_else(|report| panic!("{report}"));
    eprintln!("three Trino nodes Ready in {:?}", started.elapsed());

    // Every node in system.runtime.nodes, by its pod name.
    let every_node = json!([
        [COORDINATOR, true, "active"],
        [WORKERS[0], false, "active"],
        [WORKERS[1], false, "active"]
    ]);
    let nodes_sql = "SELECT node_id, coordinator, state FROM system.runtime.nodes ORDER BY node_id";
    let mut nodes = json!(null);
    for _ in 0..60 {
        nodes = query(&runner, "test", nodes_sql).await;
        if nodes == every_node {
            break;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    assert_eq!(nodes, every_node);

    // Issue 25: the nodes know each other by FQDN over internal TLS (the coordinator
    // lists each worker by the HTTPS address it announced, which its certificate
    // covers); clients speak HTTPS with a password, and plain HTTP is refused.
    let uris = query(
        &runner,
        "test",
        "SELECT node_id, http_uri FROM system.runtime.nodes ORDER BY node_id",
    )
    .await;
    for row in uris.as_array().into_iter().flatten() {
        let pod = row[0].as_str().unwrap_or_default();
        assert_eq!(
            row[1],
            json!(format!("https://{}:8443", fqdn(pod))),
            "{uris}"
        );
    }
    let login = |user: &'static str, password: &'static str| {
        client_answer(client_plan(&runner, &["login", user, password]), "a login")
    };
    assert_eq!(login("test", "test-password").await["status"], 200);
    assert_eq!(login("test", "wrong-password").await["status"], 401);
    assert_eq!(login("nobody", "test-password").await["status"], 401);
    // A directory user logs in over ldaps (the server's certificate checked against
    // the CA of the ConfigMap the cluster names); a wrong password is refused.
    let (ldap_user, ldap_password) = openldap::USER;
    assert_eq!(login(ldap_user, ldap_password).await["status"], 200);
    assert_eq!(login(ldap_user, "wrong-password").await["status"], 401);
    // A client with an access token of the OpenID Connect provider (over HTTPS, its CA
    // from a ConfigMap) for Trino's audience is the token's subject; a token whose
    // signature was tampered with gets 401. A token the provider issued for another
    // audience (client `dave` asking for no scope: `aud` is `default`) gets 401 too
    // (security review, finding 17: through the userinfo endpoint it got 200).
    let issuer = oidc::issuer();
    let oauth2 = |scope: &'static str| {
        let issuer = issuer.clone();
        let runner = &runner;
        async move {
            client_answer(
                client_plan(runner, &["oauth2", &issuer, "dave", scope]),
                "an OAuth2 login",
            )
            .await
        }
    };
    assert_eq!(
        oauth2(oidc::CLIENT_ID).await,
        json!({"valid": {"status": 200, "rows": [["dave"]]}, "tampered": {"status": 401}})
    );
    assert_eq!(
        oauth2("").await,
        json!({"valid": {"status": 401}, "tampered": {"status": 401}}),
        "a token for another audience"
    );
    let coordinator = fqdn(COORDINATOR);
    let plain = client_answer(client_plan(&runner, &["plain", &coordinator]), "plain HTTP").await;
    eprintln!("plain HTTP to the coordinator: {plain}");
    assert_eq!(plain["8080"], "ConnectionRefusedError", "{plain}");
    assert_eq!(plain["https-port"], "BadStatusLine", "{plain}");
    metrics::served_to_the_metrics_user_alone(&runner, &passwords.metrics).await;
    // The user's rules: alice may not use the `limited` catalog, but may use others.
    let denied = query_error(&runner, "alice", "SHOW SCHEMAS FROM limited").await;
    assert!(denied.contains("Access Denied"), "{denied}");
    assert_eq!(
        query(&runner, "alice", "SELECT count(*) FROM tpch.tiny.region").await,
        json!([[5]])
    );

    // Queries through the coordinator Service, on both catalogs.
    assert_eq!(
        query(&runner, "test", "SELECT count(*) FROM tpch.tiny.nation").await,
        json!([[25]])
    );
    query(
        &runner,
        "test",
        "CREATE TABLE memory.default.region AS SELECT * FROM tpch.tiny.region",
    )
    .await;
    assert_eq!(
        query(
            &runner,
            "test",
            "SELECT count(*) FROM memory.default.region"
        )
        .await,
        json!([[5]])
    );

    // A catalog setting from a Secret reaches the real server: the limit it read (1kB,
    // which Trino states in bytes) stops a table larger than that.
    let refused = query_error(
        &runner,
        "test",
        "CREATE TABLE limited.default.orders AS SELECT * FROM tpch.tiny.orders",
    )
    .await;
    assert!(
        refused.contains("Memory limit [1024] for memory connector exceeded"),
        "{refused}"
    );

    // Issue 20, item 10: under concurrent queries that fill the workers' memory pools
    // (hash joins and aggregations over TPC-H sf1), no JVM's peak resident memory comes
    // near its container's limit: what the kernel would count against it, heap,
    // metaspace, code cache, threads and direct buffers together.
    let load: Vec<_> = LOAD_QUERIES
        .iter()
        .map(|sql| {
            let plan = client_plan(&runner, &["query", "test", sql]);
            tokio::spawn(async move { client_answer(plan, "a load query").await })
        })
        .collect();
    let loaded = Instant::now();
    let mut answered = 0;
    for query in load {
        if query.await.is_ok() {
            answered += 1;
        }
    }
    let peaks: Vec<(&str, u64)> = [COORDINATOR, WORKERS[0], WORKERS[1]]
        .iter()
        .map(|pod| (*pod, peak_resident_mib(pod).unwrap_or_default()))
        .collect();
    eprintln!(
        "peak resident memory (MiB, VmHWM) after {} concurrent queries ({answered} answered) \
         in {:?}, limit {MEMORY_LIMIT_MIB} MiB: {peaks:?}",
        LOAD_QUERIES.len(),
        loaded.elapsed()
    );
    for (pod, peak) in &peaks {
        assert!(
            *peak > 0 && *peak <= MEMORY_LIMIT_MIB * 9 / 10,
            "{pod}: peak resident memory {peak} MiB, over 90% of the {MEMORY_LIMIT_MIB} MiB \
             limit: {peaks:?}"
        );
    }

    // Only the shutdown user may drain a worker: a client that only names a user is
    // not authenticated, an authenticated user other than the shutdown user is denied
    // by the rules, and the preStop hook fails visibly when the server refuses; a
    // coordinator never drains.
    let (status, body) = ask_shutdown(&runner, WORKERS[0], "intruder", None).await;
    assert_eq!(status, 401, "{body}");
    let (status, body) = ask_shutdown(&runner, WORKERS[0], "alice", Some("alice-password")).await;
    assert_eq!(status, 403, "{body}");
    let (code, output) = runner
        .exec(
            NAMESPACE,
            WORKERS[0],
            "trino",
            &["bash", "/strata/scripts/graceful-shutdown.sh", "intruder"],
            Duration::from_secs(30),
        )
        .await
        .unwrap_or_else(|error| panic!("{error}"))
        .expect("the hook answers within 30 s");
    assert_eq!(code, 1, "{output}");
    assert!(
        output.contains("the worker refused to shut down: HTTP 401"),
        "{output}"
    );
    let (status, body) = ask_shutdown(
        &runner,
        COORDINATOR,
        "graceful-shutdown",
        Some(&passwords.shutdown),
    )
    .await;
    assert!(
        status >= 400 && body.contains("Cannot shutdown coordinator"),
        "{status} {body}"
    );

    // The drain: a long query runs while the second worker's pod is deleted. Its
    // preStop asks the worker to shut down, the coordinator schedules nothing new on it,
    // the query completes, and the worker exits well within its grace period.
    let long_plan = client_plan(
        &runner,
        &[
            "query",
            "test",
            "SELECT count(*) FROM tpch.sf10.lineitem WHERE comment <> 'x'",
        ],
    );
    let long = tokio::spawn(async move {
        let answer = client_answer(long_plan, "the long query").await;
        (answer, Instant::now())
    });
    tokio::time::sleep(Duration::from_secs(3)).await;
    // Issue 20, item 10: what each JVM holds with its 768 MiB heap while the query runs.
    let resident: Vec<_> = [COORDINATOR, WORKERS[0], WORKERS[1]]
        .iter()
        .map(|pod| (*pod, resident_mib(pod)))
        .collect();
    eprintln!("resident memory (MiB) during the long query, heap 768 MiB: {resident:?}");
    // Finding 18: the rules name no `queries` section, so every user sees and kills
    // only their own queries. The owner finds the long query; alice neither sees it
    // nor kills it.
    let running_sql = "SELECT query_id FROM system.runtime.queries \
        WHERE \"user\" = 'test' AND state = 'RUNNING' AND query LIKE '%sf10.lineitem%' \
        AND query NOT LIKE '%system.runtime%'";
    let running = query(&runner, "test", running_sql).await;
    let long_query_id = running[0][0]
        .as_str()
        .unwrap_or_else(|| panic!("the owner sees the long query: {running}"))
        .to_owned();
    assert_eq!(
        query(&runner, "alice", running_sql).await,
        json!([]),
        "alice sees test's query"
    );
    let kill = format!(
        "CALL system.runtime.kill_query(query_id => '{long_query_id}', message => 'alice was here')"
    );
    let refused = query_error(&runner, "alice", &kill).await;
    assert!(refused.contains("Access Denied"), "{refused}");
    let watch = tokio::spawn(client_answer(
        client_plan(
            &runner,
            &[
                "drain-watch",
                WORKERS[1],
                "SELECT count(*) FROM tpch.tiny.orders",
            ],
        ),
        "the query during the drain",
    ));
    let asked = Instant::now();
    runner
        .delete(NAMESPACE, WORKERS[1])
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    let drained = asked.elapsed();
    let (long, long_ended) = long.await.expect("the long query's task");
    let long_ended = long_ended.saturating_duration_since(asked);
    let watch = watch.await.expect("the watch's task");
    eprintln!(
        "drain: the worker exited after {drained:?}; the long query ended after {long_ended:?}; {watch}"
    );
    assert_eq!(long["rows"], json!([[LINEITEM_ROWS]]));
    assert!(
        long_ended > SHUTDOWN_GRACE,
        "the long query ended {long_ended:?} after the drain began, before the worker \
         stopped taking tasks: it proves nothing"
    );
    assert_eq!(watch["rows"], json!([[15000]]));
    assert!(
        watch["states"]
            .as_array()
            .is_some_and(|states| states.contains(&json!("shutting_down"))),
        "{watch}"
    );
    assert!(
        watch["task_nodes"]
            .as_array()
            .is_some_and(|nodes| !nodes.contains(&json!(WORKERS[1]))),
        "the coordinator sent a draining worker new tasks: {watch}"
    );
    // The worker waits the grace period twice and its tasks; the pod's grace period is
    // 2 × 5 s + 2 m + 45 s = 175 s, which the runner would end with SIGKILL.
    assert!(
        drained >= SHUTDOWN_GRACE * 2 && drained < Duration::from_secs(175),
        "the drain took {drained:?}"
    );

    // The worker has left the cluster.
    let left = Instant::now();
    let two_nodes = json!([[COORDINATOR, true, "active"], [WORKERS[0], false, "active"]]);
    for _ in 0..60 {
        nodes = query(&runner, "test", nodes_sql).await;
        if nodes == two_nodes {
            break;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    assert_eq!(nodes, two_nodes);
    eprintln!(
        "the coordinator forgot the worker {:?} after it exited",
        left.elapsed()
    );
    runner.shutdown().await;
}

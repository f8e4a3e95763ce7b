//! Trino 483 through the pod runner: the objects the operator renders for the example,
//! run as rendered on the image directory of `cargo xtask tools` (the release's jars
//! and launcher from Maven Central), and a client pod that speaks Trino's client
//! protocol through the coordinator Service's name.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use k8s_openapi::api::core::v1::Secret;
use strata_operator::certificates::{StoredSecrets, plan_certificates};
use strata_operator::tls::DEFAULT_CERTIFICATE_LIFETIME;
use trino_operator::build::certificates::certificate_request;
use trino_operator::build::security::{fill_graceful_shutdown_secret, fill_metrics_secret};
use trino_operator::config::password_file::password_file;
use trino_operator::config::server::OPERATOR_USERS;
use trino_operator::crd::{TrinoCatalog, TrinoCluster};
use trino_operator::validate::{DEFAULT_CLUSTER_DOMAIN, ValidatedCluster};

use serde_json::{Value, json};
use strata_pod_runner::image::Images;
use strata_pod_runner::openshift::RestrictedV2;
use strata_pod_runner::pod::Backoff;
use strata_pod_runner::runner::{ExecPlan, PodRunner, RunnerOptions};
use strata_testing::tools::{self, TRINO_IMAGE};

/// Every object lives here.
pub const NAMESPACE: &str = "default";
/// The pods of the example.
pub const COORDINATOR: &str = "simple-trino-coordinator-default-0";
/// The example's workers.
pub const WORKERS: [&str; 2] = [
    "simple-trino-worker-default-0",
    "simple-trino-worker-default-1",
];
/// The pod the client runs in.
pub const CLIENT_POD: &str = "trino-client";
/// The client, run by the host's python3 inside the client pod.
const CLIENT: &str = include_str!("trino_client.py");
/// The internal shared secret the operator would generate once (`render` shows none).
const SHARED_SECRET: &str = "c3RyYXRhLXJlYWwtdHJpbm8tc2hhcmVkLXNlY3JldC0wMTIzNDU2Nzg5YWJjZGVm";
/// The user's Secret the `limited` catalog reads its data limit from.
const LIMIT_SECRET: &str = "trino-memory-limit";
/// `1kB`, base64.
const MEMORY_LIMIT_BASE64: &str = "MWtC";
/// A worker's `shutdownGracePeriod` in the test: short, so that a drain takes seconds.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// The users Secret of the example's password authentication (the example also logs
/// users in against an LDAP directory, `openldap.rs`).
const USERS_SECRET: &str = "trino-users";
/// The users and their passwords.
pub const USERS: [(&str, &str); 2] = [("test", "test-password"), ("alice", "alice-password")];
/// The rules ConfigMap: alice may not use the `limited` catalog; everything else is
/// allowed.
const RULES_CONFIG_MAP: &str = "trino-rules";
/// The rules. Carol's rule, for a user no test is, uses what only Java's regexes have
/// (a look-ahead, a possessive quantifier) and an access mode in capitals: the
/// operator's check of each rule takes it, and so does the real Trino, which would
/// not start otherwise (security review, finding 19).
const RULES: &str = r#"{"catalogs": [{"user": "alice", "catalog": "limited", "allow": "none"}, {"user": "carol(?!-admin).*+", "catalog": "tpch|memory", "allow": "READ-ONLY"}, {"allow": "all"}]}"#;

/// A runner with the Trino image directory. A missing tool fails the test with the
/// variable to set, never skips it.
pub fn runner() -> PodRunner {
    runner_on(None)
}

/// [`runner`] admitting pods as OpenShift's `restricted-v2` does, when given a
/// namespace's uid range.
pub fn runner_on(openshift: Option<RestrictedV2>) -> PodRunner {
    let mut images = Images::default();
    let dir = tools::required_path(TRINO_IMAGE).unwrap_or_else(|error| panic!("{error}"));
    images.add(&dir).unwrap_or_else(|error| panic!("{error}"));
    let mut options = RunnerOptions::new(images);
    // Shorter than the kubelet's 10 s, so that a test does not wait out a back-off.
    options.backoff = Backoff {
        initial: Duration::from_secs(2),
        max: Duration::from_secs(10),
    };
    options.openshift = openshift;
    PodRunner::new(options).unwrap_or_else(|error| panic!("the pod runner cannot start: {error}"))
}

/// The memory limit each node of the example gets in these tests.
pub const MEMORY_LIMIT_MIB: u64 = 1280;

/// The example's documents, sized for the test machine, with the catalogs Central
/// serves plugins for: the example's `tpch`, `memory` in place of `postgres`
/// (`io.trino:trino-postgresql:483` is not served), and `limited`, a generic `memory`
/// catalog whose data limit comes from a Secret. Each node gets 1280Mi, the least
/// the operator allows, so a 768 MiB heap; the workers drain with a 5 s grace period
/// and wait at most two minutes for their queries. `worker_groups` adds worker role groups
/// (name to role group), such as one with a `configOverrides`.
pub fn example_documents(worker_groups: Value) -> Vec<Value> {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/trino/simple-trino.yaml");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    let mut documents =
        strata_testing::yaml::documents(&text).unwrap_or_else(|error| panic!("{error}"));
    documents.retain(|document| document["metadata"]["name"] != "postgres");
    documents.push(json!({
        "apiVersion": "trino.strata.dev/v1alpha1",
        "kind": "TrinoCatalog",
        "metadata": {"name": "memory", "namespace": NAMESPACE, "labels": {"trino": "simple-trino"}},
        "spec": {"connector": {"memory": {}}}
    }));
    // A catalog whose setting comes from a Secret, as PostgreSQL's credentials would:
    // the memory connector's data limit, so that the real server shows it read it.
    documents.push(json!({
        "apiVersion": "trino.strata.dev/v1alpha1",
        "kind": "TrinoCatalog",
        "metadata": {"name": "limited", "namespace": NAMESPACE, "labels": {"trino": "simple-trino"}},
        "spec": {"connector": {"generic": {
            "connectorName": "memory",
            "secretProperties": {"memory.max-data-per-node": {"name": LIMIT_SECRET, "key": "limit"}}
        }}}
    }));
    documents.push(json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": RULES_CONFIG_MAP, "namespace": NAMESPACE},
        "data": {"rules.json": RULES}
    }));
    let cluster = documents
        .iter_mut()
        .find(|document| document["kind"] == "TrinoCluster")
        .expect("the example's TrinoCluster");
    cluster["spec"]["clusterConfig"]["authentication"] = json!([
        {"password": {"secretName": USERS_SECRET}},
        crate::openldap::authentication(),
        crate::oidc::authentication()
    ]);
    cluster["spec"]["clusterConfig"]["authorization"] = json!({"rulesConfigMap": RULES_CONFIG_MAP});
    let small = json!({"resources": {"memory": {"limit": format!("{MEMORY_LIMIT_MIB}Mi")}}});
    cluster["spec"]["coordinators"]["config"] = small.clone();
    let mut worker_config = small;
    worker_config["shutdownGracePeriod"] = json!(format!("{}s", SHUTDOWN_GRACE.as_secs()));
    worker_config["gracefulShutdownTimeout"] = json!("2m");
    cluster["spec"]["workers"]["config"] = worker_config;
    if let (Some(groups), Some(extra)) = (
        cluster["spec"]["workers"]["roleGroups"].as_object_mut(),
        worker_groups.as_object(),
    ) {
        groups.extend(extra.clone());
    }
    documents
}

/// What the operator renders for `documents`, with what it would make in the cluster:
/// the internal shared secret, the certificates (and the CA in the discovery
/// ConfigMap), the shutdown user's Secret and the users' password file; and the user's
/// Secrets the `limited` catalog and the authentication read. Also the shutdown
/// user's and the metrics user's passwords, which only the pods and the test know.
pub fn rendered(documents: &[Value]) -> (Vec<Value>, OperatorPasswords) {
    let mut objects = trino_operator::render::render(documents)
        .unwrap_or_else(|error| panic!("{error}"))
        .objects;
    let cluster: TrinoCluster = serde_json::from_value(
        documents
            .iter()
            .find(|document| document["kind"] == "TrinoCluster")
            .expect("the example's TrinoCluster")
            .clone(),
    )
    .unwrap_or_else(|error| panic!("{error}"));
    let catalogs: Vec<TrinoCatalog> = Vec::new();
    let validated = ValidatedCluster::new(&cluster, &catalogs, DEFAULT_CLUSTER_DOMAIN)
        .unwrap_or_else(|error| panic!("{error}"));
    let request = certificate_request(&validated, DEFAULT_CERTIFICATE_LIFETIME);
    let certificates = plan_certificates(&request, &StoredSecrets::default(), SystemTime::now())
        .unwrap_or_else(|error| panic!("{error}"));
    let issued: Vec<Value> = certificates
        .sealed_secrets()
        .iter()
        .map(|secret| serde_json::to_value(secret).unwrap_or_else(|error| panic!("{error}")))
        .collect();
    objects.retain(|object| {
        !issued
            .iter()
            .any(|secret| secret["metadata"]["name"] == object["metadata"]["name"])
    });
    objects.extend(issued);
    let mut shutdown = Secret::default();
    fill_graceful_shutdown_secret(&mut shutdown).unwrap_or_else(|error| panic!("{error}"));
    let shutdown = shutdown.string_data.unwrap_or_default();
    let mut metrics = Secret::default();
    fill_metrics_secret(&mut metrics).unwrap_or_else(|error| panic!("{error}"));
    let metrics = metrics.string_data.unwrap_or_default();
    let users: BTreeMap<String, Vec<u8>> = USERS
        .iter()
        .map(|(user, password)| ((*user).to_owned(), password.as_bytes().to_vec()))
        .collect();
    let password_db =
        password_file(&users, &OPERATOR_USERS).unwrap_or_else(|error| panic!("{error}"));
    objects.push(json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": LIMIT_SECRET, "namespace": NAMESPACE},
        "data": {"limit": MEMORY_LIMIT_BASE64}
    }));
    objects.extend(crate::openldap::objects());
    objects.extend(crate::oidc::objects());
    objects.push(json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "simple-trino-password-db", "namespace": NAMESPACE},
        "stringData": {"password.db": password_db.text()}
    }));
    for object in &mut objects {
        let name = object["metadata"]["name"].clone();
        match (object["kind"].as_str(), name.as_str()) {
            (Some("Secret"), Some("simple-trino-internal-secret")) => {
                object["data"] = json!({"sharedSecret": SHARED_SECRET});
            }
            (Some("Secret"), Some("simple-trino-graceful-shutdown")) => {
                object["stringData"] = json!(shutdown);
            }
            (Some("Secret"), Some("simple-trino-metrics")) => {
                object["stringData"] = json!(metrics);
            }
            (Some("ConfigMap"), Some("simple-trino")) => {
                object["data"]["ca.crt"] = json!(certificates.ca_pem);
            }
            _ => {}
        }
    }
    let passwords = OperatorPasswords {
        shutdown: shutdown.get("password").cloned().unwrap_or_default(),
        metrics: metrics.get("password").cloned().unwrap_or_default(),
    };
    (objects, passwords)
}

/// The passwords of the operator's own users in a rendered cluster.
pub struct OperatorPasswords {
    /// The shutdown user's, for the preStop drain.
    pub shutdown: String,
    /// The metrics user's, for a scrape.
    pub metrics: String,
}

/// A pod with the Trino image whose host python3 runs the client. It reads the
/// cluster's discovery ConfigMap as a client in the cluster would: the URL into its
/// environment, the CA as a file. `passwords` are the users who log in with one.
pub fn client_pod(passwords: &[(&str, &str)]) -> Value {
    let passwords: BTreeMap<&str, &str> = passwords.iter().copied().collect();
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": CLIENT_POD, "namespace": NAMESPACE},
        "spec": {
            // `sleep` as PID 1 ignores SIGTERM, as it would in Kubernetes.
            "terminationGracePeriodSeconds": 1,
            "containers": [{
                "name": "client",
                "image": "docker.io/trinodb/trino:483",
                "command": ["sleep", "infinity"],
                "envFrom": [{"configMapRef": {"name": "simple-trino"}}],
                "env": [
                    {"name": "TRINO_CA", "value": "/strata/discovery/ca.crt"},
                    {"name": "TRINO_PASSWORDS", "value": json!(passwords).to_string()}
                ],
                "volumeMounts": [
                    {"name": "discovery", "mountPath": "/strata/discovery", "readOnly": true},
                    {"name": "oidc-ca", "mountPath": "/strata/oidc-ca", "readOnly": true}
                ]
            }],
            "volumes": [
                {"name": "discovery", "configMap": {"name": "simple-trino"}},
                {"name": "oidc-ca", "configMap": {"name": "oidc-ca", "optional": true}}
            ]
        }
    })
}

/// The FQDN of the pod `pod` of the role group `group` of the example.
pub fn fqdn(pod: &str) -> String {
    let group = pod.rsplit_once('-').map_or(pod, |(group, _)| group);
    format!("{pod}.{group}.{NAMESPACE}.svc.cluster.local")
}

/// The client's command line for `args`.
fn client_argv(args: &[&str]) -> Vec<String> {
    ["python3", "-c", CLIENT]
        .iter()
        .chain(args)
        .map(|arg| (*arg).to_owned())
        .collect()
}

/// A client command prepared in the client pod, to run while the runner is busy.
pub fn client_plan(runner: &PodRunner, args: &[&str]) -> ExecPlan {
    let argv = client_argv(args);
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    runner
        .exec_plan(NAMESPACE, CLIENT_POD, "client", &argv)
        .unwrap_or_else(|error| panic!("{error}"))
}

/// Runs a prepared client command; its JSON answer, or the failure with its output.
pub async fn client_answer(plan: ExecPlan, what: &str) -> Value {
    let (code, output) = plan
        .run(Duration::from_secs(180))
        .await
        .unwrap_or_else(|error| panic!("{error}"))
        .unwrap_or_else(|| panic!("{what} overran three minutes"));
    assert_eq!(code, 0, "{what}: {output}");
    let last = output.lines().last().unwrap_or_default();
    serde_json::from_str(last).unwrap_or_else(|error| panic!("{what}: {error} in {output}"))
}

/// Trino's message for `sql`, which must fail, queried as `user`.
pub async fn query_error(runner: &PodRunner, user: &str, sql: &str) -> String {
    let (code, output) = client_plan(runner, &["query", user, sql])
        .run(Duration::from_secs(180))
        .await
        .unwrap_or_else(|error| panic!("{error}"))
        .unwrap_or_else(|| panic!("{sql} overran three minutes"));
    assert_eq!(code, 1, "{sql} should fail: {output}");
    output
}

/// The rows `sql` returns, queried as `user` through the coordinator Service.
pub async fn query(runner: &PodRunner, user: &str, sql: &str) -> Value {
    let answer = client_answer(client_plan(runner, &["query", user, sql]), sql).await;
    answer["rows"].clone()
}

/// `PUT /v1/info/state "SHUTTING_DOWN"` to `pod` as `user` (with `password`, if any),
/// from the client pod over HTTPS; the status and body of the answer.
pub async fn ask_shutdown(
    runner: &PodRunner,
    pod: &str,
    user: &str,
    password: Option<&str>,
) -> (u16, String) {
    let host = fqdn(pod);
    let mut args = vec!["shutdown", host.as_str(), user];
    args.extend(password);
    let answer = client_answer(client_plan(runner, &args), "the shutdown request").await;
    (
        u16::try_from(answer["status"].as_u64().unwrap_or_default()).unwrap_or_default(),
        answer["body"].as_str().unwrap_or_default().to_owned(),
    )
}

/// The whole log of a container's `run`-th run.
pub fn log(runner: &PodRunner, pod: &str, container: &str, run: i32) -> String {
    runner
        .log(NAMESPACE, pod, container, run)
        .and_then(|path| std::fs::read_to_string(path).ok())
        .unwrap_or_default()
}

/// The resident memory, in MiB, of the Trino JVM whose command line names `node_id`
/// (`-Dnode.id=<pod>`), read from `/proc`: what the container's memory limit would
/// have to hold.
pub fn resident_mib(node_id: &str) -> Option<u64> {
    jvm_status_mib(node_id, "VmRSS:")
}

/// The peak resident memory (`VmHWM`), in MiB, of the Trino JVM of `node_id` since it
/// started: the figure a container's memory limit must stay above.
pub fn peak_resident_mib(node_id: &str) -> Option<u64> {
    jvm_status_mib(node_id, "VmHWM:")
}

/// A memory figure of `/proc/<pid>/status` of the JVM of `node_id`, in MiB.
fn jvm_status_mib(node_id: &str, field: &str) -> Option<u64> {
    let wanted = format!("-Dnode.id={node_id}");
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .find_map(|entry| {
            let dir = entry.path();
            let cmdline = std::fs::read(dir.join("cmdline")).ok()?;
            let names_it = cmdline
                .split(|byte| *byte == 0)
                .any(|arg| arg == wanted.as_bytes());
            if !names_it {
                return None;
            }
            let status = std::fs::read_to_string(dir.join("status")).ok()?;
            let kib: u64 = status
                .lines()
                .find_map(|line| line.strip_prefix(field))?
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse()
                .ok()?;
            Some(kib / 1024)
        })
}

//! The example's Superset pod through the pod runner, as rendered: its init container
//! and its gunicorn command on Superset 6.1.0 (the image directory around the PyPI
//! venv), against a real PostgreSQL in a pod of its own (Debian's server programs)
//! behind the Service name the example names, taking TLS connections only, which
//! Superset checks against the CA from a ConfigMap. Nothing is retyped: gunicorn binds
//! `0.0.0.0:8088` in its own network namespace.
//!
//! Ignored by default (it needs root, the Superset image directory and PostgreSQL);
//! `cargo xtask test` provisions them and runs it. Every process is stopped by its PID.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Value, json};
use strata_certificates::authority::{CertificateAuthority, IssuedCertificate, Validity};
use strata_pod_runner::image::Images;
use strata_pod_runner::manifest::apply_all;
use strata_pod_runner::runner::{PodRunner, RunnerOptions};
use strata_pod_runner::status::State;
use strata_testing::tools::{self, POSTGRESQL_BIN, SUPERSET_IMAGE};

const NAMESPACE: &str = "default";
const POD: &str = "simple-superset-node-default-0";
const DATABASE_POD: &str = "postgresql-0";
const DATABASE_PASSWORD: &str = "db pass:wörd";
const ADMIN_PASSWORD: &str = "a dmin:p@ss/wörd";
/// The PostgreSQL pod: a fresh cluster with the example's database and user, listening
/// on the pod network with passwords over TLS only (`hostnossl` rejects), then
/// `exec postgres`. PostgreSQL wants its key readable by its owner alone, so it is
/// copied out of the Secret's volume.
const DATABASE_SCRIPT: &str = r#"set -e
data=/var/lib/postgresql/data/pgdata
initdb -D "$data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 --no-sync --no-instructions
printf 'local all all trust\nhostnossl all all 0.0.0.0/0 reject\nhostssl all all 0.0.0.0/0 scram-sha-256\n' > "$data/pg_hba.conf"
install -m 0600 /tls/tls.key "$data/server.key"
install -m 0644 /tls/tls.crt "$data/server.crt"
postgres --single -c exit_on_error=true -D "$data" postgres <<SQL
CREATE ROLE superset LOGIN PASSWORD '$DATABASE_PASSWORD';
CREATE DATABASE superset OWNER superset;
SQL
exec postgres -D "$data" -k /var/run/postgresql -c listen_addresses='*' \
  -c ssl=on -c ssl_cert_file="$data/server.crt" -c ssl_key_file="$data/server.key"
"#;
/// The database's host name in the example, which its certificate names.
const DATABASE_HOST: &str = "postgresql.default.svc.cluster.local";

/// The uid and gid of the host's `postgres` account (Debian's package creates it),
/// which the database pod runs as: `initdb` needs a user it can look up.
fn postgres_account() -> (u32, u32) {
    let id = |flag: &str| -> u32 {
        let output = Command::new("id")
            .args([flag, "postgres"])
            .output()
            .expect("id runs");
        String::from_utf8_lossy(&output.stdout)
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("no postgres account: {output:?}"))
    };
    (id("-u"), id("-g"))
}

/// A runner with the Superset image directory, and an image directory for PostgreSQL
/// made here: no image paths, Debian's server programs first on `PATH`.
fn runner(scratch: &std::path::Path) -> PodRunner {
    let mut images = Images::default();
    let superset = tools::required_path(SUPERSET_IMAGE).unwrap_or_else(|error| panic!("{error}"));
    images
        .add(&superset)
        .unwrap_or_else(|error| panic!("{error}"));
    let bin = tools::required_path(POSTGRESQL_BIN).unwrap_or_else(|error| panic!("{error}"));
    let (uid, gid) = postgres_account();
    let manifest = json!({
        "references": ["docker.io/library/postgres:15"],
        "paths": [],
        "env": [["PATH", format!("{}:/usr/bin:/bin", bin.display())], ["LANG", "C.UTF-8"]],
        "workingDir": "/",
        "user": [uid, gid]
    });
    std::fs::write(scratch.join("strata-image.json"), manifest.to_string())
        .expect("the PostgreSQL image's manifest");
    images
        .add(scratch)
        .unwrap_or_else(|error| panic!("{error}"));
    PodRunner::new(RunnerOptions::new(images))
        .unwrap_or_else(|error| panic!("the pod runner cannot start: {error}"))
}

/// A Secret with `data` as string values.
fn secret(name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": NAMESPACE}, "stringData": data})
}

/// A CA, and the database server's certificate for the example's host name.
fn database_certificates() -> (String, IssuedCertificate) {
    let validity = Validity::starting(SystemTime::now(), Duration::from_secs(3600));
    let ca = CertificateAuthority::create("postgresql-ca", validity)
        .unwrap_or_else(|error| panic!("{error}"));
    let server = ca
        .issue(&[DATABASE_HOST.to_owned()], validity)
        .unwrap_or_else(|error| panic!("{error}"));
    (ca.certificate_pem().to_owned(), server)
}

/// The ConfigMap Superset reads the database's CA from.
fn ca_config_map(ca_pem: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "postgresql-ca", "namespace": NAMESPACE},
        "data": {"ca.crt": ca_pem}
    })
}

/// Waits until the pod's init container has ended with `reason` in its termination
/// message; the message.
async fn init_failure(runner: &PodRunner, reason: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let message = runner
            .status(NAMESPACE, POD)
            .and_then(|status| status.init_containers.into_iter().next())
            .and_then(|init| match init.state {
                State::Terminated(ended) => ended.message,
                _ => init.last_state.and_then(|ended| ended.message),
            });
        match message {
            Some(message) if message.contains(reason) => return message,
            _ if Instant::now() > deadline => {
                panic!("no {reason} from the init container: {message:?}")
            }
            _ => tokio::time::sleep(Duration::from_secs(1)).await,
        }
    }
}

/// PostgreSQL: its Secrets, pod and Service, and the CA's ConfigMap for Superset; and
/// the CA.
fn database_objects() -> (Vec<Value>, String) {
    let (uid, gid) = postgres_account();
    let (ca, server) = database_certificates();
    let objects = vec![
        secret(
            "superset-db",
            json!({"username": "superset", "password": DATABASE_PASSWORD}),
        ),
        secret(
            "postgresql-tls",
            json!({"tls.crt": server.certificate_pem(), "tls.key": server.key_pem(), "ca.crt": ca}),
        ),
        ca_config_map(&ca),
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": DATABASE_POD, "namespace": NAMESPACE, "labels": {"app": "postgresql"}},
            "spec": {
                "securityContext": {"runAsUser": uid, "runAsGroup": gid, "fsGroup": gid},
                "terminationGracePeriodSeconds": 10,
                "containers": [{
                    "name": "postgresql",
                    "image": "docker.io/library/postgres:15",
                    "command": ["bash", "-c", DATABASE_SCRIPT],
                    "env": [{"name": "DATABASE_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "superset-db", "key": "password"}}}],
                    "readinessProbe": {"exec": {"command": ["pg_isready", "-h", "127.0.0.1"]}, "periodSeconds": 2},
                    "volumeMounts": [
                        {"name": "data", "mountPath": "/var/lib/postgresql/data"},
                        {"name": "run", "mountPath": "/var/run/postgresql"},
                        {"name": "tls", "mountPath": "/tls", "readOnly": true}
                    ]
                }],
                "volumes": [
                    {"name": "data", "emptyDir": {}}, {"name": "run", "emptyDir": {}},
                    {"name": "tls", "secret": {"secretName": "postgresql-tls", "defaultMode": 288}}
                ]
            }
        }),
        json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "postgresql", "namespace": NAMESPACE},
            "spec": {"selector": {"app": "postgresql"}, "ports": [{"name": "postgresql", "port": 5432}]}
        }),
    ];
    (objects, ca)
}

/// The example, one pod with one gunicorn worker, on a database it reaches over TLS
/// with the server's certificate checked (`verify-full`), as the operator renders it,
/// with the admin's Secret and the SECRET_KEY the operator would create once.
fn superset_objects() -> Vec<Value> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/superset/simple-superset.yaml");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    let mut cluster: Value = serde_yaml_ng::from_str(&text).expect("the example parses");
    cluster["spec"]["nodes"]["config"]["workers"] = json!(1);
    cluster["spec"]["clusterConfig"]["metadataDatabase"]["postgresql"]["tls"] =
        json!({"sslMode": "verify-full", "caCertificate": {"configMapName": "postgresql-ca"}});
    cluster["spec"]["nodes"]["roleGroups"]["default"]["replicas"] = json!(1);
    let mut objects = superset_operator::render::render(&[cluster])
        .unwrap_or_else(|error| panic!("{error}"))
        .objects;
    for object in &mut objects {
        if object["kind"] == "Secret" {
            object["stringData"] = json!({"SECRET_KEY": "0123456789abcdef0123456789abcdef"});
        }
    }
    objects.push(secret(
        "superset-admin",
        json!({
            "username": "admin", "firstname": "Ada", "lastname": "Admin",
            "email": "admin@example.com", "password": ADMIN_PASSWORD
        }),
    ));
    objects
}

/// The answer of `sql` in the metadata database, read with `psql` in the database pod.
async fn query(runner: &PodRunner, sql: &str) -> String {
    let (code, output) = runner
        .exec(
            NAMESPACE,
            DATABASE_POD,
            "postgresql",
            &[
                "psql",
                "-h",
                "/var/run/postgresql",
                "-U",
                "postgres",
                "-d",
                "superset",
                "-tAc",
                sql,
            ],
            Duration::from_secs(30),
        )
        .await
        .unwrap_or_else(|error| panic!("{error}"))
        .expect("psql answers");
    assert_eq!(code, 0, "{output}");
    output.trim().to_owned()
}

/// The admin row in the metadata database.
async fn admin_row(runner: &PodRunner) -> String {
    query(runner, "SELECT username, password FROM ab_user").await
}

/// How many of the `superset` user's sessions there are, and whether all are on TLS.
async fn superset_sessions(runner: &PodRunner) -> String {
    query(
        runner,
        "SELECT count(*), bool_and(ssl) FROM pg_stat_ssl JOIN pg_stat_activity USING (pid) \
         WHERE usename = 'superset'",
    )
    .await
}

/// A plaintext login as the `superset` user over the pod network: the exit code and
/// what `psql` said.
async fn plaintext_login(runner: &PodRunner) -> (i32, String) {
    let address = runner
        .address(NAMESPACE, DATABASE_POD)
        .expect("the database's address");
    let target = format!("host={address} user=superset dbname=superset sslmode=disable");
    let command = format!("PGPASSWORD=\"$DATABASE_PASSWORD\" psql '{target}' -tAc 'SELECT 1' 2>&1");
    runner
        .exec(
            NAMESPACE,
            DATABASE_POD,
            "postgresql",
            &["bash", "-c", &command],
            Duration::from_secs(30),
        )
        .await
        .unwrap_or_else(|error| panic!("{error}"))
        .expect("psql answers")
}

/// Logs in through Superset's API from the database pod's network; the answer's status
/// and body.
fn login(runner: &PodRunner) -> (u16, String) {
    let address = format!(
        "{}:8088",
        runner.address(NAMESPACE, POD).expect("the pod's address")
    );
    let body =
        json!({"username": "admin", "password": ADMIN_PASSWORD, "provider": "db", "refresh": true})
            .to_string();
    runner
        .in_pod(NAMESPACE, DATABASE_POD, move || {
            strata_testing::http::request(
                &address,
                "POST",
                "/api/v1/security/login",
                &[("Content-Type", "application/json")],
                Some(&body),
            )
        })
        .unwrap_or_else(|error| panic!("{error}"))
        .map(|response| (response.status, response.body))
        .unwrap_or_else(|error| panic!("{error}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root, the Superset image directory and PostgreSQL; run by cargo xtask test"]
async fn the_rendered_pod_initialises_the_database_serves_logins_and_stops() {
    let scratch = tempfile::tempdir().expect("a scratch directory");
    let mut runner = runner(scratch.path());
    let (database, database_ca) = database_objects();
    apply_all(&mut runner, &database).unwrap_or_else(|error| panic!("{error}"));
    runner
        .wait_ready(NAMESPACE, &[DATABASE_POD], Duration::from_secs(60))
        .await
        .unwrap_or_else(|report| panic!("{report}"));

    // A CA that did not sign the server's certificate: the init container stops
    // before any migration, naming the database.
    let superset = superset_objects();
    let (stranger, _) = database_certificates();
    apply_all(&mut runner, &[ca_config_map(&stranger)]).unwrap_or_else(|error| panic!("{error}"));
    apply_all(&mut runner, &superset).unwrap_or_else(|error| panic!("{error}"));
    let refused = init_failure(&runner, "DatabaseUnreachable").await;
    eprintln!("with another CA, the init container stopped: {refused}");
    runner
        .delete(NAMESPACE, POD)
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    apply_all(&mut runner, &[ca_config_map(&database_ca)])
        .unwrap_or_else(|error| panic!("{error}"));

    // The init container, then gunicorn, as rendered; the probes ask the real /health.
    apply_all(&mut runner, &superset).unwrap_or_else(|error| panic!("{error}"));
    let started = Instant::now();
    runner
        .wait_ready(NAMESPACE, &[POD], Duration::from_secs(300))
        .await
        .unwrap_or_else(|report| panic!("{report}"));
    eprintln!(
        "the Superset pod was Ready {:?} after it was applied",
        started.elapsed()
    );
    let admin_before = admin_row(&runner).await;
    assert!(admin_before.starts_with("admin|"), "{admin_before}");
    let (status, body) = login(&runner);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("access_token"), "{body}");
    // The database takes nothing but TLS, so the migrations and the login went over
    // it; the web server's pooled sessions say so too.
    let (code, refused) = plaintext_login(&runner).await;
    assert!(
        code != 0 && refused.contains("no encryption"),
        "a plaintext login: {code} {refused}"
    );
    let sessions = superset_sessions(&runner).await;
    assert!(
        sessions.ends_with("|t") && !sessions.starts_with("0|"),
        "Superset's sessions (count|all on TLS): {sessions}"
    );

    // gunicorn is the container's PID 1 (`exec`): a deletion ends it on SIGTERM, well
    // within the pod's grace period.
    let asked = Instant::now();
    runner
        .delete(NAMESPACE, POD)
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    let stopped = asked.elapsed();
    eprintln!("the Superset pod stopped {stopped:?} after its deletion");
    assert!(stopped < Duration::from_secs(60), "stopped in {stopped:?}");

    // A second rollout: its init changes nothing, and the admin logs in again.
    apply_all(&mut runner, &superset).unwrap_or_else(|error| panic!("{error}"));
    runner
        .wait_ready(NAMESPACE, &[POD], Duration::from_secs(300))
        .await
        .unwrap_or_else(|report| panic!("{report}"));
    assert_eq!(admin_row(&runner).await, admin_before);
    assert_eq!(login(&runner).0, 200);
    runner.shutdown().await;
}

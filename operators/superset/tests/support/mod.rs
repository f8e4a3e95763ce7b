//! What the Superset suites that run pods share: a real PostgreSQL in a pod of its own
//! (Debian's server programs) that takes TLS connections only, the example cluster as
//! the operator renders it, and reading the metadata database.

#![allow(dead_code, clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Value, json};
use strata_certificates::authority::{CertificateAuthority, IssuedCertificate, Validity};
use strata_pod_runner::image::Images;
use strata_pod_runner::runner::PodRunner;
use strata_pod_runner::status::State;
use strata_testing::tools::{self, POSTGRESQL_BIN};
use superset_operator::build::container::INIT_CONTAINER;

pub const NAMESPACE: &str = "default";
pub const POD: &str = "simple-superset-node-default-0";
pub const DATABASE_POD: &str = "postgresql-0";
pub const DATABASE_PASSWORD: &str = "db pass:wörd";
pub const ADMIN_PASSWORD: &str = "a dmin:p@ss/wörd";
/// The PostgreSQL pod: a fresh cluster with the example's database and user, listening
/// on the pod network with passwords over TLS only (`hostnossl` rejects), then
/// `exec postgres`. PostgreSQL wants its key readable by its owner alone, so it is
/// copied out of the Secret's volume.
pub const DATABASE_SCRIPT: &str = r#"set -e
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
pub const DATABASE_HOST: &str = "postgresql.default.svc.cluster.local";

/// The uid and gid of the host's `postgres` account (Debian's package creates it),
/// which the database pod runs as: `initdb` needs a user it can look up.
pub fn postgres_account() -> (u32, u32) {
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

/// The image directories named by the tool variables `superset_images`, and one for
/// PostgreSQL made in `scratch`: no image paths, Debian's server programs first on
/// `PATH`.
pub fn images(scratch: &std::path::Path, superset_images: &[&str]) -> Images {
    let mut images = Images::default();
    // Every Superset pod has the statsd exporter beside gunicorn.
    for variable in superset_images
        .iter()
        .chain(&[tools::STATSD_EXPORTER_IMAGE])
    {
        let dir = tools::required_path(variable).unwrap_or_else(|error| panic!("{error}"));
        images.add(&dir).unwrap_or_else(|error| panic!("{error}"));
    }
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
    images
}

/// A Secret with `data` as string values.
pub fn secret(name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": NAMESPACE}, "stringData": data})
}

/// A CA, and the database server's certificate for the example's host name.
pub fn database_certificates() -> (String, IssuedCertificate) {
    server_certificates("postgresql-ca", DATABASE_HOST)
}

/// A new CA named `ca_name`, and a server certificate it signed for `host`.
pub fn server_certificates(ca_name: &str, host: &str) -> (String, IssuedCertificate) {
    let validity = Validity::starting(SystemTime::now(), Duration::from_secs(3600));
    let ca =
        CertificateAuthority::create(ca_name, validity).unwrap_or_else(|error| panic!("{error}"));
    let server = ca
        .issue(&[host.to_owned()], validity)
        .unwrap_or_else(|error| panic!("{error}"));
    (ca.certificate_pem().to_owned(), server)
}

/// The ConfigMap Superset reads the database's CA from.
pub fn ca_config_map(ca_pem: &str) -> Value {
    named_ca_config_map("postgresql-ca", ca_pem)
}

/// A ConfigMap `name` with the CA as its key `ca.crt`, as trust-manager writes it.
pub fn named_ca_config_map(name: &str, ca_pem: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "data": {"ca.crt": ca_pem}
    })
}

/// Waits until the pod's init container has ended with `reason` in its termination
/// message; the message.
pub async fn init_failure(runner: &PodRunner, reason: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let message = runner
            .status(NAMESPACE, POD)
            .and_then(|status| {
                status
                    .init_containers
                    .into_iter()
                    .find(|init| init.name == INIT_CONTAINER)
            })
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

/// The database pod's service account: on OpenShift it would run under `anyuid`, as
/// PostgreSQL needs its own fixed uid.
pub const DATABASE_SERVICE_ACCOUNT: &str = "postgresql";

/// PostgreSQL: its Secrets, pod and Service, and the CA's ConfigMap for Superset; and
/// the CA.
pub fn database_objects() -> (Vec<Value>, String) {
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
                // Granted OpenShift's anyuid in the tests that play restricted-v2.
                "serviceAccountName": DATABASE_SERVICE_ACCOUNT,
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
/// with the admin's Secret and the SECRET_KEY the operator would create once; `patch`
/// changes the cluster first.
pub fn superset_objects(patch: impl FnOnce(&mut Value)) -> Vec<Value> {
    example_objects("simple-superset.yaml", patch)
}

/// [`superset_objects`] of the example `file` of `examples/superset`.
pub fn example_objects(file: &str, patch: impl FnOnce(&mut Value)) -> Vec<Value> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/superset")
        .join(file);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    let mut cluster: Value = serde_yaml_ng::from_str(&text).expect("the example parses");
    cluster["spec"]["nodes"]["config"]["workers"] = json!(1);
    cluster["spec"]["clusterConfig"]["metadataDatabase"]["postgresql"]["tls"] =
        json!({"sslMode": "verify-full", "caCertificate": {"configMapName": "postgresql-ca"}});
    cluster["spec"]["nodes"]["roleGroups"]["default"]["replicas"] = json!(1);
    patch(&mut cluster);
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
pub async fn query(runner: &PodRunner, sql: &str) -> String {
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

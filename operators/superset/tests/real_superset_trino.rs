//! A Trino connection built from Trino's discovery ConfigMap, on the real servers:
//! Trino 483 as its operator renders it (a coordinator and a worker, HTTPS with the
//! operator's certificates, password logins), and Superset 6.1.0 on the derived image
//! with the Trino client, as its operator renders it, through the pod runner. The init
//! container registers the connection; Superset's own model then queries Trino over
//! HTTPS as the user of the connection's Secret, checking the CA from discovery.
//!
//! Ignored by default (it needs root and the image directories); `cargo xtask test`
//! provisions them and runs it. Every process is stopped by its PID.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use strata_pod_runner::manifest::apply_all;
use strata_pod_runner::runner::{PodRunner, RunnerOptions};
use strata_testing::tools::{SUPERSET_TRINO_IMAGE, TRINO_IMAGE};

use self::support::{NAMESPACE, POD, database_objects, images, query, secret, superset_objects};

/// The derived image's reference (xtask's `superset_image::TRINO_DERIVED_REFERENCE`).
const DERIVED_IMAGE: &str = "registry.example.com/superset-trino:6.1.0";
const TRINO_PODS: [&str; 2] = [
    "simple-trino-coordinator-default-0",
    "simple-trino-worker-default-0",
];
/// The Trino user Superset logs in as, and its password.
const TRINO_USER: &str = "superset";
const TRINO_PASSWORD: &str = "tr1no:p@ss wörd";

/// A small TrinoCluster with TLS (the default) and password logins, the `tpch`
/// catalog, and its users Secret; rendered, with what its operator makes at run time.
fn trino_objects() -> Vec<Value> {
    let documents = vec![
        json!({
            "apiVersion": "trino.strata.dev/v1alpha1", "kind": "TrinoCluster",
            "metadata": {"name": "simple-trino", "namespace": NAMESPACE},
            "spec": {
                "clusterConfig": {
                    "catalogLabelSelector": {"matchLabels": {"trino": "simple-trino"}},
                    "authentication": [{"password": {"secretName": "trino-users"}}]
                },
                "coordinators": {
                    "config": {"resources": {"memory": {"limit": "1280Mi"}}},
                    "roleGroups": {"default": {"replicas": 1}}
                },
                "workers": {
                    "config": {"resources": {"memory": {"limit": "1280Mi"}}, "shutdownGracePeriod": "5s"},
                    "roleGroups": {"default": {"replicas": 1}}
                }
            }
        }),
        json!({
            "apiVersion": "trino.strata.dev/v1alpha1", "kind": "TrinoCatalog",
            "metadata": {"name": "tpch", "namespace": NAMESPACE, "labels": {"trino": "simple-trino"}},
            "spec": {"connector": {"tpch": {}}}
        }),
        secret("trino-users", json!({ TRINO_USER: TRINO_PASSWORD })),
    ];
    let mut objects = trino_operator::render::render(&documents)
        .unwrap_or_else(|error| panic!("{error}"))
        .objects;
    trino_operator::render::fill::fill_runtime_values(&documents, &mut objects)
        .unwrap_or_else(|error| panic!("{error}"));
    objects.push(documents[2].clone());
    objects
}

/// What Superset's model stored and what Trino answered through it, run in the web
/// server's container with its environment: the connection's URI (its password
/// masked), its `extra`, and the size of `tiny.nation` with the user Trino saw, over
/// the stored connection.
const ASK_THROUGH_SUPERSET: &str = r#"
import json
from superset.app import create_app
app = create_app()
with app.app_context():
    from superset import db
    from superset.models.core import Database
    database = db.session.query(Database).filter_by(database_name="Trino").one()
    with database.get_sqla_engine() as engine:
        with engine.connect() as connection:
            rows = connection.exec_driver_sql("SELECT (SELECT count(*) FROM tiny.nation), current_user").fetchall()
    print(json.dumps({"uri": database.sqlalchemy_uri, "extra": json.loads(database.extra),
                      "rows": [list(row) for row in rows]}))
"#;

async fn ask_through_superset(runner: &PodRunner) -> Result<Value, String> {
    let (code, output) = runner
        .exec(
            NAMESPACE,
            POD,
            "superset",
            &["python", "-c", ASK_THROUGH_SUPERSET],
            Duration::from_secs(120),
        )
        .await
        .map_err(|error| error.to_string())?
        .ok_or("no answer")?;
    let last = output.lines().last().unwrap_or_default();
    match serde_json::from_str(last) {
        Ok(answer) if code == 0 => Ok(answer),
        _ => Err(format!("exit {code}: {output}")),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root and the Trino, Superset and PostgreSQL image directories; run by cargo xtask test"]
async fn superset_queries_trino_through_the_connection_built_from_discovery() {
    let scratch = tempfile::tempdir().expect("a scratch directory");
    let mut runner = PodRunner::new(RunnerOptions::new(images(
        scratch.path(),
        &[SUPERSET_TRINO_IMAGE, TRINO_IMAGE],
    )))
    .unwrap_or_else(|error| panic!("the pod runner cannot start: {error}"));
    let (database, _) = database_objects();
    apply_all(&mut runner, &database).unwrap_or_else(|error| panic!("{error}"));
    apply_all(&mut runner, &trino_objects()).unwrap_or_else(|error| panic!("{error}"));

    let mut superset = superset_objects(|cluster| {
        cluster["spec"]["image"] = json!({"custom": DERIVED_IMAGE, "productVersion": "6.1.0"});
        cluster["spec"]["clusterConfig"]["trinoConnections"] = json!([{
            "name": "Trino", "discoveryConfigMap": "simple-trino", "catalog": "tpch",
            "credentialsSecret": "superset-trino"
        }]);
    });
    superset.push(secret(
        "superset-trino",
        json!({"username": TRINO_USER, "password": TRINO_PASSWORD}),
    ));
    apply_all(&mut runner, &superset).unwrap_or_else(|error| panic!("{error}"));
    let started = Instant::now();
    let mut pods = TRINO_PODS.to_vec();
    pods.extend(["postgresql-0", POD]);
    runner
        .wait_ready(NAMESPACE, &pods, Duration::from_secs(300))
        .await
        .unwrap_or_else(|report| panic!("{report}"));
    eprintln!(
        "Trino and Superset were Ready {:?} after they were applied",
        started.elapsed()
    );

    // The worker may still be announcing itself: ask until Trino has a node to run on.
    let deadline = Instant::now() + Duration::from_secs(90);
    let answer = loop {
        match ask_through_superset(&runner).await {
            Ok(answer) => break answer,
            Err(error) if Instant::now() > deadline => {
                panic!("no answer through Superset: {error}")
            }
            Err(_) => tokio::time::sleep(Duration::from_secs(3)).await,
        }
    };
    eprintln!("through Superset's stored connection: {answer}");
    assert_eq!(answer["rows"], json!([[25, TRINO_USER]]), "{answer}");
    assert_eq!(
        answer["uri"],
        "trino://superset:XXXXXXXXXX@simple-trino-coordinator.default.svc.cluster.local:8443/tpch"
    );
    assert_eq!(
        answer["extra"]["engine_params"]["connect_args"],
        json!({"http_scheme": "https", "verify": "/strata/trino/simple-trino/ca.crt"})
    );
    // The password is stored encrypted with SECRET_KEY, never as it is.
    let stored = query(&runner, "SELECT sqlalchemy_uri || ' ' || password FROM dbs").await;
    assert!(
        !stored.contains(TRINO_PASSWORD) && !stored.contains("p@ss"),
        "{stored}"
    );
    runner.shutdown().await;
}

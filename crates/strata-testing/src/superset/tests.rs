use serde_json::json;

use super::*;
use crate::postgres::{ThrowawayPostgres, free_port};

/// The pg8000 wheels the Superset operator ships to its pods.
const WHEELS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../operators/superset/wheels"
);

/// The smallest hand-written config: the database URI from the environment, CSRF on.
const CONFIG: &str = "\
import os

SQLALCHEMY_DATABASE_URI = os.environ[\"SUPERSET__SQLALCHEMY_DATABASE_URI\"]
WTF_CSRF_ENABLED = True
";

const ADMIN: &str = "admin";
const ADMIN_PASSWORD: &str = "strata-admin-password";

fn create_admin(env: &PodEnv) -> Output {
    run(
        &[
            "fab",
            "create-admin",
            "--username",
            ADMIN,
            "--firstname",
            "Strata",
            "--lastname",
            "Test",
            "--email",
            "admin@example.com",
            "--password",
            ADMIN_PASSWORD,
        ],
        env,
    )
}

/// Runs `step`, records how long it took under `name`, and returns its value.
fn timed<T>(
    timings: &mut Vec<(&'static str, Duration)>,
    name: &'static str,
    step: impl FnOnce() -> T,
) -> T {
    let started = Instant::now();
    let value = step();
    timings.push((name, started.elapsed()));
    value
}

fn assert_success(what: &str, output: &Output) {
    assert!(output.status.success(), "{what}: {}", describe(output));
}

#[test]
#[ignore = "needs Superset and PostgreSQL (STRATA_SUPERSET_VENV, STRATA_POSTGRESQL_BIN); run by cargo xtask test"]
fn the_real_superset_runs_on_a_real_postgresql_with_the_pg8000_wheels() {
    let mut timings = Vec::new();
    // The PostgreSQL driver's wheels; the directory also holds authlib, for OIDC.
    let wheels: Vec<_> = wheels_in(Path::new(WHEELS))
        .into_iter()
        .filter(|wheel| {
            wheel.file_name().is_some_and(|name| {
                ["pg8000-", "scramp-", "asn1crypto-"]
                    .iter()
                    .any(|prefix| name.to_string_lossy().starts_with(prefix))
            })
        })
        .collect();
    assert_eq!(wheels.len(), 3, "pg8000, scramp, asn1crypto in {WHEELS}");
    let postgres = timed(&mut timings, "postgres initdb + start", || {
        ThrowawayPostgres::start("127.0.0.5").expect("PostgreSQL starts")
    });
    let config = tempfile::tempdir().expect("config dir");
    fs::write(config.path().join("superset_config.py"), CONFIG).expect("write config");
    let env = PodEnv::new(config.path(), &wheels)
        .var("SUPERSET_SECRET_KEY", "strata-superset-smoke-test-key")
        .var("SUPERSET__SQLALCHEMY_DATABASE_URI", postgres.url_pg8000());

    let upgrade = timed(&mut timings, "superset db upgrade", || {
        run(&["db", "upgrade"], &env)
    });
    assert_success("db upgrade", &upgrade);
    // Superset imported the config from PYTHONPATH, as from a pod's /app/pythonpath.
    let loaded = format!(
        "Loaded your LOCAL configuration at [{}]",
        config.path().join("superset_config.py").display()
    );
    assert!(
        String::from_utf8_lossy(&upgrade.stdout).contains(&loaded),
        "{}",
        describe(&upgrade)
    );
    // The migrations ran in PostgreSQL, not in a SQLite file under SUPERSET_HOME.
    let head = postgres
        .query("SELECT count(*) FROM alembic_version")
        .expect("alembic_version exists in PostgreSQL");
    assert_eq!(head, "1");
    let init = timed(&mut timings, "superset init", || run(&["init"], &env));
    assert_success("init", &init);
    let created = timed(&mut timings, "superset fab create-admin", || {
        create_admin(&env)
    });
    assert_success("create-admin", &created);
    let user_row = format!("SELECT username, password FROM ab_user WHERE username = '{ADMIN}'");
    let admin_before = postgres.query(&user_row).expect("ab_user");
    assert!(admin_before.starts_with("admin|"), "{admin_before}");

    let address = "127.0.0.6";
    let port = free_port(address).expect("a free port");
    let mut web = timed(&mut timings, "gunicorn start until /health OK", || {
        Gunicorn::start(address, port, &env, &[]).expect("gunicorn serves /health")
    });
    let health = web.get("/health").expect("GET /health");
    assert_eq!((health.status, health.body.trim()), (200, "OK"));

    let login = |password: &str| {
        web.post_json(
            "/api/v1/security/login",
            &json!({"username": ADMIN, "password": password, "provider": "db", "refresh": true}),
        )
        .expect("POST /api/v1/security/login")
    };
    let answer = timed(&mut timings, "POST /api/v1/security/login", || {
        login(ADMIN_PASSWORD)
    });
    assert_eq!(answer.status, 200, "{answer:?}\n{}", web.log_tail());
    let tokens = answer.json().expect("login answers JSON");
    let access = tokens["access_token"].as_str().unwrap_or_default();
    assert!(!access.is_empty(), "no access_token in {tokens}");
    assert!(tokens["refresh_token"].is_string(), "{tokens}");
    let databases = web
        .get_with(
            "/api/v1/database/",
            &[("Authorization", &format!("Bearer {access}"))],
        )
        .expect("GET /api/v1/database/");
    assert_eq!(databases.status, 200, "{databases:?}");
    let refused = login("wrong-password");
    assert_eq!(refused.status, 401, "{refused:?}");

    let stopped = web.stop().expect("gunicorn stops on SIGTERM");
    timings.push(("gunicorn exit after SIGTERM", stopped));
    assert!(stopped < Duration::from_secs(30), "took {stopped:?}");

    let again = timed(&mut timings, "superset fab create-admin again", || {
        create_admin(&env)
    });
    assert_success("second create-admin", &again);
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&again.stdout),
        String::from_utf8_lossy(&again.stderr)
    );
    assert!(printed.contains("already exists"), "{}", describe(&again));
    assert_eq!(postgres.query(&user_row).expect("ab_user"), admin_before);
    assert_eq!(
        postgres
            .query("SELECT count(*) FROM ab_user")
            .expect("ab_user"),
        "1"
    );

    for (step, took) in &timings {
        eprintln!("superset smoke timing: {step}: {:.1}s", took.as_secs_f64());
    }
}

#[test]
fn gunicorn_args_are_run_server_sh_without_statsd() {
    let args = gunicorn_args("127.0.0.1", 8088);
    assert_eq!(args[..2], ["--bind", "127.0.0.1:8088"]);
    assert_eq!(
        args.last().map(String::as_str),
        Some("superset.app:create_app()")
    );
    assert!(!args.iter().any(|arg| arg.contains("statsd")));
}

#[test]
fn responses_are_parsed_plain_and_chunked() {
    let plain =
        parse_response(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nOK").expect("parses");
    assert_eq!(plain.status, 200);
    assert_eq!(plain.body, "OK");
    assert_eq!(
        plain.headers[0],
        ("content-type".to_owned(), "text/plain".to_owned())
    );

    let chunked = parse_response(
        b"HTTP/1.1 401 UNAUTHORIZED\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n{\"a\"\r\n3;x=y\r\n:1}\r\n0\r\n\r\n",
    )
    .expect("parses");
    assert_eq!(chunked.status, 401);
    assert_eq!(chunked.body, "{\"a\":1}");
    assert!(parse_response(b"HTTP/1.1 200 OK\r\n").is_err());

    let after_continue = parse_response(
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nLocation: /f\r\n\r\n",
    )
    .expect("parses");
    assert_eq!(after_continue.status, 201);
    assert_eq!(
        after_continue.headers,
        [("location".to_owned(), "/f".to_owned())]
    );
}

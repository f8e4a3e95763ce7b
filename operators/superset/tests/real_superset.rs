//! The operator's rendered settings read by the real Superset 6.1.0 against a real
//! PostgreSQL: real LDAP and OpenID Connect logins (Debian's slapd, NAV's
//! mock-oauth2-server), `create_app()` with each
//! authentication setting (LDAP, OIDC), after the
//! rendered init script, with the rendered `superset_config.py`, the driver wheels from
//! the operator's ConfigMaps and the StatefulSet containers' environment (each
//! `secretKeyRef` resolved as the kubelet would, pod paths mapped to temporary
//! directories). The pod itself, served and stopped, runs through the pod runner in
//! `real_superset_runner.rs`.
//!
//! Ignored by default (it needs the Superset venv and PostgreSQL); `cargo xtask test`
//! provisions both and runs it. Every process is stopped by its PID.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use k8s_openapi::api::core::v1::Container;
use serde_json::{Value, json};
use strata_certificates::authority::{CertificateAuthority, IssuedCertificate, Validity};
use strata_testing::oidc::{MockOidcProvider, OidcUser};
use strata_testing::postgres::{ThrowawayPostgres, free_port};
use strata_testing::slapd::{BIND_DN, LdapUser, PEOPLE, SlapdTls, ThrowawaySlapd};
use strata_testing::superset::{Gunicorn, PodEnv, describe};
use strata_testing::tools::{PYTHON_LDAP, required_path};
use superset_operator::build::config_map::{packages_config_map, role_group_config_map};
use superset_operator::build::container::PREVIOUS_SECRET_KEY_ENV;
use superset_operator::build::statefulset::stateful_set;
use superset_operator::crd::SupersetCluster;
use superset_operator::validate::{DEFAULT_CLUSTER_DOMAIN, ValidatedCluster};

const DATABASE_ADDRESS: &str = "127.0.0.31";
/// Where the LDAP login test serves Superset, and its slapd.
const SUPERSET_ADDRESS: &str = "127.0.0.32";
const LDAP_ADDRESS: &str = "127.0.0.33";
const OIDC_ADDRESS: &str = "127.0.0.34";
/// A browser's part of an OpenID Connect login, played by `requests` in the venv: every
/// redirect followed with the cookies each host set, then `/api/v1/me/`.
const BROWSER_LOGIN: &str = "import json, sys, requests\n\
base = sys.argv[1]\n\
session = requests.Session()\n\
login = session.get(base + '/login/oidc', timeout=60)\n\
me = session.get(base + '/api/v1/me/', timeout=30)\n\
print(json.dumps({'hops': [r.url for r in login.history] + [login.url], \
'status': me.status_code, 'me': me.text}))\n";
const ADMIN_PASSWORD: &str = "a dmin:p@ss/wörd";
/// The keys of the rotation test, before and after.
const OLD_SECRET_KEY: &str = "old-key-0123456789abcdef01234567";
const NEW_SECRET_KEY: &str = "new-key-0123456789abcdef01234567";
/// The password the rotation test stores in Superset, encrypted with `SECRET_KEY`.
const STORED_PASSWORD: &str = "st0red:p@ss";

/// A cluster on `postgres`, with `extra` merged into `clusterConfig`.
fn cluster(postgres: &ThrowawayPostgres, extra: Value) -> ValidatedCluster {
    let mut config = json!({
        "metadataDatabase": {"postgresql": {
            "host": postgres.host(), "port": postgres.port(),
            "database": postgres.database(), "credentialsSecret": "superset-db"
        }},
        "adminUser": {"secretName": "superset-admin"}
    });
    if let (Some(config), Value::Object(extra)) = (config.as_object_mut(), extra) {
        config.extend(extra);
    }
    // LDAP needs python-ldap, which only a custom image can carry.
    let image = if config.pointer("/authentication/ldap").is_some() {
        json!({"custom": "registry.example.com/superset-ldap:6.1.0", "productVersion": "6.1.0"})
    } else {
        json!({})
    };
    let cluster: SupersetCluster = serde_json::from_value(json!({
        "apiVersion": "superset.strata.dev/v1alpha1",
        "kind": "SupersetCluster",
        "metadata": {"name": "real", "namespace": "default", "uid": "uid-1"},
        "spec": {"image": image, "clusterConfig": config, "nodes": {"roleGroups": {"default": {}}}}
    }))
    .expect("a valid SupersetCluster");
    ValidatedCluster::new(&cluster, DEFAULT_CLUSTER_DOMAIN).expect("the cluster validates")
}

/// The values of the Secrets the pod reads, as the kubelet resolves `secretKeyRef`s.
fn secret_values(postgres: &ThrowawayPostgres) -> BTreeMap<(String, String), String> {
    [
        ("superset-db", "username", postgres.user()),
        ("superset-db", "password", postgres.password()),
        (
            "real-secret-key",
            "SECRET_KEY",
            "0123456789abcdef0123456789abcdef",
        ),
        ("superset-admin", "username", "admin"),
        ("superset-admin", "firstname", "Superset"),
        ("superset-admin", "lastname", "Admin"),
        ("superset-admin", "email", "admin@example.com"),
        ("superset-admin", "password", ADMIN_PASSWORD),
        ("key-before", "SECRET_KEY", OLD_SECRET_KEY),
        ("key-after", "SECRET_KEY", NEW_SECRET_KEY),
        ("ldap-bind", "password", "bind-secret"),
        ("oidc-client", "clientSecret", "client-secret"),
        (
            "mysql-metadata",
            "uri",
            "mysql://superset:secret@127.0.0.31:1/superset",
        ),
    ]
    .into_iter()
    .map(|(secret, key, value)| ((secret.to_owned(), key.to_owned()), value.to_owned()))
    .collect()
}

/// The pod's files on this machine.
struct PodFiles {
    _root: tempfile::TempDir,
    config: PathBuf,
    wheels: PathBuf,
    /// The LDAP server's CA volume.
    ldap_tls: PathBuf,
}

fn pod_files(cluster: &ValidatedCluster) -> PodFiles {
    let root = tempfile::tempdir().expect("a temporary directory");
    let config = root.path().join("config");
    let wheels = root.path().join("wheels");
    let ldap_tls = root.path().join("ldap-tls");
    for dir in [&config, &wheels, &ldap_tls] {
        std::fs::create_dir(dir).expect("a pod directory");
    }
    let group = &cluster.nodes.groups[0];
    for (name, text) in role_group_config_map(cluster, group)
        .data
        .unwrap_or_default()
    {
        std::fs::write(config.join(name), text).expect("a config file");
    }
    for (name, bytes) in packages_config_map(cluster).binary_data.unwrap_or_default() {
        std::fs::write(wheels.join(name), bytes.0).expect("a wheel");
    }
    PodFiles {
        _root: root,
        config,
        wheels,
        ldap_tls,
    }
}

/// `container`'s environment on this machine: pod paths mapped to `files`, Secrets
/// resolved from `secrets`.
fn environment(
    container: &Container,
    files: &PodFiles,
    secrets: &BTreeMap<(String, String), String>,
    termination_log: &Path,
) -> PodEnv {
    let wheel_files: Vec<PathBuf> = std::fs::read_dir(&files.wheels)
        .expect("the wheels")
        .map(|entry| entry.expect("a wheel").path())
        .collect();
    let mut env = PodEnv::new(&files.config, &wheel_files);
    let home = env.home().to_path_buf();
    let local = |value: &str| {
        value
            .split(':')
            .filter(|entry| *entry != "/app/pythonpath")
            .map(|entry| {
                entry
                    .replace("/strata/config", &files.config.to_string_lossy())
                    .replace("/strata/packages", &files.wheels.to_string_lossy())
                    .replace("/strata/ldap-tls", &files.ldap_tls.to_string_lossy())
                    .replace("/app/superset_home", &home.to_string_lossy())
            })
            .collect::<Vec<_>>()
            .join(":")
    };
    for variable in container.env.iter().flatten() {
        let value = match (&variable.value, &variable.value_from) {
            (Some(value), _) => local(value),
            (None, Some(source)) => {
                let reference = source.secret_key_ref.as_ref().expect("a secretKeyRef");
                secrets
                    .get(&(reference.name.clone(), reference.key.clone()))
                    .unwrap_or_else(|| panic!("no value for {reference:?}"))
                    .clone()
            }
            (None, None) => String::new(),
        };
        env = env.var(&variable.name, value);
    }
    env.var("TERMINATION_LOG", termination_log)
}

fn containers(cluster: &ValidatedCluster) -> (Container, Container) {
    let pod = stateful_set(cluster, &cluster.nodes.groups[0], "hash")
        .spec
        .template
        .spec
        .expect("a pod spec");
    (
        pod.init_containers.expect("an init container")[0].clone(),
        pod.containers[0].clone(),
    )
}

/// A pod path on this machine.
fn local_path(files: &PodFiles, arg: &str) -> String {
    arg.replace("/strata/config", &files.config.to_string_lossy())
        .replace("/strata/packages", &files.wheels.to_string_lossy())
}

/// Runs the init container's command to completion.
fn run_init(container: &Container, files: &PodFiles, env: &PodEnv) -> std::process::Output {
    let command: Vec<String> = container
        .command
        .clone()
        .expect("a command")
        .iter()
        .map(|arg| local_path(files, arg))
        .collect();
    env.command(&command[0])
        .args(&command[1..])
        .output()
        .expect("the init script starts")
}

/// Superset starts with each login's rendered settings, and its login API refuses a
/// password guesser (finding 25): the sixth login within the limit's window gets 429,
/// though this process, unlike the `apache/superset` image, has no
/// `SUPERSET_ENV=production`, which Superset's own default needs to turn limits on.
/// Behind an Ingress that serves HTTPS (the database login's cluster here), the
/// session cookie carries `Secure`; without one it does not (finding 24).
#[test]
#[ignore = "needs the Superset venv and PostgreSQL (STRATA_SUPERSET_VENV, STRATA_POSTGRESQL_BIN); run by cargo xtask test"]
fn superset_starts_with_the_rendered_ldap_and_oidc_settings() {
    let postgres = ThrowawayPostgres::start(DATABASE_ADDRESS).expect("PostgreSQL starts");
    let secrets = secret_values(&postgres);
    for (authentication, provider) in [
        (json!(null), "db"),
        (
            json!({"ldap": {
                "serverUri": "ldap://127.0.0.33:389", "bindDn": "cn=superset,dc=example,dc=com",
                "bindPasswordSecret": "ldap-bind", "searchBase": "ou=people,dc=example,dc=com",
                "allowInsecure": true
            }}),
            "ldap",
        ),
        (
            json!({"oidc": {
                "issuerUrl": "https://id.example.com/realms/data", "clientId": "superset",
                "clientSecretSecret": "oidc-client"
            }}),
            "db",
        ),
    ] {
        let behind_https = authentication.is_null();
        let extra = if behind_https {
            json!({"ingress": {"host": "superset.example.com", "tlsSecret": "superset-tls"}})
        } else {
            json!({"authentication": authentication})
        };
        let cluster = cluster(&postgres, extra);
        let files = pod_files(&cluster);
        let (init, web) = containers(&cluster);
        let termination_log = files.config.parent().unwrap().join("termination-log");
        let init_env = environment(&init, &files, &secrets, &termination_log);
        let upgraded = run_init(&init, &files, &init_env);
        assert!(upgraded.status.success(), "{}", describe(&upgraded));
        let env = environment(&web, &files, &secrets, &termination_log);
        assert!(
            env.vars().get("SUPERSET_ENV").is_none(),
            "the test must not have the image's SUPERSET_ENV"
        );
        // Superset's limit, five a second, is read at each request: at five a minute
        // the window holds six logins however slow the machine checks a password. A
        // login the cluster's authentication cannot take (a password with OIDC) is
        // refused with 400, and counts the same.
        let created = env
            .command("python")
            .args([
                "-c",
                &format!(
                    "from superset.app import create_app\n\
                     app = create_app()\n\
                     app.config['AUTH_RATE_LIMIT'] = '5 per minute'\n\
                     client = app.test_client()\n\
                     for n in range(6):\n\
                     \x20   print('status', client.post('/api/v1/security/login', json={{'username': 'mallory', \
                     'password': f'guess {{n}}', 'provider': '{provider}', 'refresh': False}}).status_code)\n\
                     print('cookie', client.get('/login/').headers.get('Set-Cookie'))\n"
                ),
            ])
            .output()
            .expect("python starts");
        assert!(
            created.status.success(),
            "{authentication}: {}",
            describe(&created)
        );
        let statuses: Vec<&str> = std::str::from_utf8(&created.stdout)
            .expect("UTF-8")
            .lines()
            .filter_map(|line| line.strip_prefix("status "))
            .collect();
        let refusal = if authentication.get("oidc").is_some() {
            "400"
        } else {
            "401"
        };
        assert_eq!(
            statuses,
            [refusal, refusal, refusal, refusal, refusal, "429"],
            "{authentication}: the sixth guess within the window must get 429: {}",
            describe(&created)
        );
        let cookie = std::str::from_utf8(&created.stdout)
            .expect("UTF-8")
            .lines()
            .find_map(|line| line.strip_prefix("cookie "))
            .unwrap_or_default()
            .to_owned();
        assert!(cookie.starts_with("session="), "{cookie}");
        assert_eq!(
            cookie.split("; ").any(|attribute| attribute == "Secure"),
            behind_https,
            "{authentication}: {cookie}"
        );
    }
}

/// A URI whose driver the image lacks is named as such, not as an unreachable database.
#[test]
#[ignore = "needs the Superset venv and PostgreSQL (STRATA_SUPERSET_VENV, STRATA_POSTGRESQL_BIN); run by cargo xtask test"]
fn a_metadata_database_driver_missing_from_the_image_is_named() {
    let postgres = ThrowawayPostgres::start(DATABASE_ADDRESS).expect("PostgreSQL starts");
    let secrets = secret_values(&postgres);
    let cluster = cluster(
        &postgres,
        json!({"metadataDatabase": {"generic": {"uriSecret": "mysql-metadata"}}}),
    );
    let files = pod_files(&cluster);
    let (init, _) = containers(&cluster);
    let termination_log = files.config.parent().unwrap().join("termination-log");
    let env = environment(&init, &files, &secrets, &termination_log);
    let init_run = run_init(&init, &files, &env);
    assert!(!init_run.status.success(), "{}", describe(&init_run));
    let stopped = std::fs::read_to_string(&termination_log).unwrap_or_default();
    assert!(
        stopped.starts_with("DatabaseDriverMissing\n") && stopped.contains("MySQLdb"),
        "{stopped}\n{}",
        describe(&init_run)
    );
    assert!(
        !stopped.contains("secret@"),
        "the URI's password leaked: {stopped}"
    );
}

/// Issue 20, item 11: a `SECRET_KEY` rotation keeps a stored database password. The
/// documented manual procedure fails on the real server (`re-encrypt-secrets` ignores a
/// `PREVIOUS_SECRET_KEY` variable); with `previousSecretKeySecret`, the init container
/// re-encrypts the password, the new key reads it, and a second pod's init changes
/// nothing.
#[test]
#[ignore = "needs the Superset venv and PostgreSQL (STRATA_SUPERSET_VENV, STRATA_POSTGRESQL_BIN); run by cargo xtask test"]
fn a_secret_key_rotation_re_encrypts_a_stored_database_password() {
    let postgres = ThrowawayPostgres::start(DATABASE_ADDRESS).expect("PostgreSQL starts");
    let secrets = secret_values(&postgres);
    let before = cluster(&postgres, json!({"secretKeySecret": "key-before"}));
    let files = pod_files(&before);
    let termination_log = files.config.parent().unwrap().join("termination-log");
    let (init, web) = containers(&before);
    let init_env = environment(&init, &files, &secrets, &termination_log);
    let initialised = run_init(&init, &files, &init_env);
    assert!(initialised.status.success(), "{}", describe(&initialised));
    let stored = environment(&web, &files, &secrets, &termination_log)
        .command("python")
        .args([
            "-c",
            &format!(
                "from superset.app import create_app\n\
                 app = create_app()\n\
                 with app.app_context():\n\
                 \x20   from superset import db\n\
                 \x20   from superset.models.core import Database\n\
                 \x20   db.session.add(Database(database_name='sales', \
                 sqlalchemy_uri='postgresql://reader@127.0.0.9/sales', password='{STORED_PASSWORD}'))\n\
                 \x20   db.session.commit()\n"
            ),
        ])
        .output()
        .expect("python starts");
    assert!(stored.status.success(), "{}", describe(&stored));

    let after = cluster(
        &postgres,
        json!({"secretKeySecret": "key-after", "previousSecretKeySecret": "key-before"}),
    );
    let (init, web) = containers(&after);
    let previous_on = |container: &Container| {
        container
            .env
            .iter()
            .flatten()
            .any(|variable| variable.name == PREVIOUS_SECRET_KEY_ENV)
    };
    assert!(previous_on(&init) && !previous_on(&web));

    // What the docs said before: the old key in PREVIOUS_SECRET_KEY, the new one in
    // place, `superset re-encrypt-secrets`. The real 6.1.0 refuses.
    let web_env = environment(&web, &files, &secrets, &termination_log);
    let manual = strata_testing::superset::run(
        &["re-encrypt-secrets"],
        &environment(&web, &files, &secrets, &termination_log)
            .var("PREVIOUS_SECRET_KEY", OLD_SECRET_KEY),
    );
    assert!(
        !manual.status.success()
            && String::from_utf8_lossy(&manual.stderr)
                .contains("A previous secret key must be provided"),
        "{}",
        describe(&manual)
    );

    let read_password = |env: &strata_testing::superset::PodEnv| {
        env.command("python")
            .args([
                "-c",
                "from superset.app import create_app\n\
                 app = create_app()\n\
                 with app.app_context():\n\
                 \x20   from superset import db\n\
                 \x20   from superset.models.core import Database\n\
                 \x20   print(db.session.query(Database).filter_by(database_name='sales').one().password)\n",
            ])
            .output()
            .expect("python starts")
    };
    let unreadable = read_password(&web_env);
    assert!(
        !unreadable.status.success()
            && String::from_utf8_lossy(&unreadable.stderr).contains("Invalid decryption key"),
        "before the rotation, the new key must not read the stored password: {}",
        describe(&unreadable)
    );

    let init_env = environment(&init, &files, &secrets, &termination_log);
    for (pod, rows) in [("first", 1), ("second", 0)] {
        let rotated = run_init(&init, &files, &init_env);
        assert!(
            rotated.status.success(),
            "{pod} pod: {}",
            describe(&rotated)
        );
        let output = String::from_utf8_lossy(&rotated.stdout);
        assert!(
            output.contains(&format!("2/5: re-encrypted {rows} row(s) of ")),
            "{pod} pod: {output}"
        );
    }
    let read = read_password(&web_env);
    assert!(read.status.success(), "{}", describe(&read));
    assert_eq!(
        String::from_utf8_lossy(&read.stdout).lines().last(),
        Some(STORED_PASSWORD),
        "{}",
        describe(&read)
    );
    assert!(
        !String::from_utf8_lossy(&read.stdout).contains(OLD_SECRET_KEY)
            && !std::fs::read_to_string(&termination_log)
                .unwrap_or_default()
                .contains(OLD_SECRET_KEY),
        "a key leaked"
    );
}

/// What slapd serves `ldaps://` with: `server`'s certificate and key.
fn tls(server: &IssuedCertificate) -> SlapdTls<'_> {
    SlapdTls {
        certificate_pem: server.certificate_pem(),
        key_pem: server.key_pem(),
    }
}

/// A pod's web server on loopback, and what it runs with.
struct Served {
    web: Gunicorn,
    env: PodEnv,
    files: PodFiles,
}

/// Renders a cluster on `postgres` with `authentication`, runs its init container, and
/// serves it with gunicorn; `python_path` is added to `PYTHONPATH` (a package a derived
/// image would carry).
fn serve(
    postgres: &ThrowawayPostgres,
    authentication: Value,
    python_path: Option<&Path>,
) -> Served {
    let secrets = secret_values(postgres);
    let cluster = cluster(postgres, json!({ "authentication": authentication }));
    let files = pod_files(&cluster);
    let (init, web) = containers(&cluster);
    let termination_log = files.config.parent().unwrap().join("termination-log");
    let init_env = environment(&init, &files, &secrets, &termination_log);
    let initialised = run_init(&init, &files, &init_env);
    assert!(initialised.status.success(), "{}", describe(&initialised));
    let mut env = environment(&web, &files, &secrets, &termination_log);
    if let Some(extra) = python_path {
        let mut joined = env.vars().get("PYTHONPATH").cloned().unwrap_or_default();
        joined.push(":");
        joined.push(extra);
        env = env.var("PYTHONPATH", joined);
    }
    let port = free_port(SUPERSET_ADDRESS).expect("a free port");
    let web = Gunicorn::start(SUPERSET_ADDRESS, port, &env, &[])
        .unwrap_or_else(|error| panic!("{error}"));
    Served { web, env, files }
}

/// Issue 20, item 4: an LDAP user logs in, against Debian's slapd, with the rendered
/// settings, on an image that carries python-ldap (the derived image of
/// `docs/superset.md`; here the provisioned build of the pinned sdist, on `PYTHONPATH`).
/// The first login registers the user from the directory's entry, with the role the
/// spec names (the default, `Public`, may not even read `/api/v1/me/`); a wrong password
/// is refused. Finding 23: over `ldaps://`, against the private CA of a ConfigMap
/// (`caCertificate`), and a server with another CA's certificate where the directory
/// was gets no password: the login is refused.
#[test]
#[ignore = "needs the Superset venv, PostgreSQL, slapd and python-ldap (STRATA_SUPERSET_VENV, STRATA_POSTGRESQL_BIN, STRATA_SLAPD, STRATA_PYTHON_LDAP); run by cargo xtask test"]
fn an_ldap_user_logs_in_with_the_rendered_settings() {
    let alice = LdapUser::new("alice", "Alice", "Liddell", "d0wn the r@bbit:hole");
    let validity = Validity::starting(SystemTime::now(), Duration::from_secs(3600));
    let issued_by = |ca_name: &str| {
        let ca = CertificateAuthority::create(ca_name, validity)
            .unwrap_or_else(|error| panic!("{error}"));
        let server = ca
            .issue(&[LDAP_ADDRESS.to_owned()], validity)
            .unwrap_or_else(|error| panic!("{error}"));
        (ca.certificate_pem().to_owned(), server)
    };
    let (ca_pem, server) = issued_by("ldap-ca");
    let slapd = ThrowawaySlapd::start_ldaps(
        LDAP_ADDRESS,
        None,
        "bind-secret",
        std::slice::from_ref(&alice),
        tls(&server),
    )
    .unwrap_or_else(|error| panic!("{error}"));
    let postgres = ThrowawayPostgres::start(DATABASE_ADDRESS).expect("PostgreSQL starts");
    let python_ldap = required_path(PYTHON_LDAP).unwrap_or_else(|error| panic!("{error}"));
    let Served { web, files, .. } = serve(
        &postgres,
        json!({
            "ldap": {
                "serverUri": slapd.uri(), "caCertificate": {"configMapName": "ldap-ca"},
                "bindDn": BIND_DN, "bindPasswordSecret": "ldap-bind", "searchBase": PEOPLE
            },
            "userRegistrationRole": "Gamma"
        }),
        Some(&python_ldap),
    );
    // What the kubelet mounts from the ConfigMap; read at each login.
    std::fs::write(files.ldap_tls.join("ca.crt"), &ca_pem).expect("the CA file");
    let login = |password: &str| {
        web.post_json(
            "/api/v1/security/login",
            &json!({"username": alice.uid, "password": password, "provider": "ldap", "refresh": false}),
        )
        .unwrap_or_else(|error| panic!("{error}"))
    };

    let refused = login("not the password");
    assert_eq!(refused.status, 401, "{}\n{}", refused.body, web.log_tail());
    let accepted = login(&alice.password);
    assert_eq!(
        accepted.status,
        200,
        "{}\n{}",
        accepted.body,
        web.log_tail()
    );
    let token = accepted.json().expect("JSON")["access_token"]
        .as_str()
        .expect("an access token")
        .to_owned();
    let me = web
        .get_with(
            "/api/v1/me/",
            &[("Authorization", &format!("Bearer {token}"))],
        )
        .unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(me.status, 200, "{}", me.body);
    let me = me.json().expect("JSON");
    assert_eq!(
        (
            me["result"]["username"].as_str(),
            me["result"]["first_name"].as_str()
        ),
        (Some("alice"), Some("Alice")),
        "{me}"
    );

    // An impostor on the directory's address and port, with a certificate of its own CA
    // for that address, knows alice too: only the certificate check keeps her password.
    let port = slapd.port();
    drop(slapd);
    let (_, impostor_certificate) = issued_by("impostor-ca");
    let _impostor = ThrowawaySlapd::start_ldaps(
        LDAP_ADDRESS,
        Some(port),
        "bind-secret",
        std::slice::from_ref(&alice),
        tls(&impostor_certificate),
    )
    .unwrap_or_else(|error| panic!("{error}"));
    let deceived = login(&alice.password);
    assert_eq!(
        deceived.status,
        401,
        "the impostor's certificate must be refused: {}\n{}",
        deceived.body,
        web.log_tail()
    );
}

/// Issue 20, item 3: a whole OpenID Connect login. Flask-AppBuilder 5 knows no provider
/// named `oidc` (`OAuthProviderUnknown`, "Invalid login"); the operator's security
/// manager reads the ID token's claims instead. Superset sends the browser to the
/// provider's `authorize`, which sends it back with a code; Superset exchanges the code,
/// Authlib checks the ID token, and the user is registered from its claims.
#[test]
#[ignore = "needs the Superset venv, PostgreSQL, Java and mock-oauth2-server (STRATA_SUPERSET_VENV, STRATA_POSTGRESQL_BIN, STRATA_JAVA, STRATA_OIDC_PROVIDER_LIB); run by cargo xtask test"]
fn an_oidc_user_logs_in_through_the_provider() {
    let alice = OidcUser::new("alice", "Alice", "Liddell");
    let provider = MockOidcProvider::start(OIDC_ADDRESS, "superset", &alice)
        .unwrap_or_else(|error| panic!("{error}"));
    let postgres = ThrowawayPostgres::start(DATABASE_ADDRESS).expect("PostgreSQL starts");
    let Served { web, env, .. } = serve(
        &postgres,
        json!({
            "oidc": {
                "issuerUrl": provider.issuer(), "clientId": "superset",
                "clientSecretSecret": "oidc-client"
            },
            "userRegistrationRole": "Gamma"
        }),
        None,
    );

    let browser = env
        .command("python")
        .args(["-c", BROWSER_LOGIN, &format!("http://{}", web.address())])
        .output()
        .expect("python starts");
    assert!(browser.status.success(), "{}", describe(&browser));
    let seen: Value = serde_json::from_slice(&browser.stdout).expect("the browser's JSON");
    let hops: Vec<&str> = seen["hops"]
        .as_array()
        .expect("hops")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let context = || format!("{seen}\n{}\n{}", web.log_tail(), provider.log_tail());
    assert!(
        hops.iter()
            .any(|hop| hop.starts_with(&format!("{}/authorize", provider.issuer())))
            && hops
                .iter()
                .any(|hop| hop.contains("/oauth-authorized/oidc?code=")),
        "{}",
        context()
    );
    assert_eq!(seen["status"], 200, "{}", context());
    let me: Value = serde_json::from_str(seen["me"].as_str().unwrap_or_default()).expect("JSON");
    assert_eq!(
        (
            me["result"]["username"].as_str(),
            me["result"]["last_name"].as_str()
        ),
        (Some("oidc_alice"), Some("Liddell")),
        "{}",
        context()
    );
}

/// Security review, finding 26: a libpq driver (the upstream image's psycopg2) that
/// verifies the metadata database with no CA in the spec gets `sslrootcert=system`,
/// the system trust store, as pg8000's default context does; libpq would otherwise
/// look for `~/.postgresql/root.crt`, which no pod has. The hook runs in the real
/// venv's SQLAlchemy, as a `do_connect` listener on a real engine.
#[test]
#[ignore = "needs the Superset venv (STRATA_SUPERSET_VENV); run by cargo xtask test"]
fn a_libpq_driver_verifies_against_the_system_trust_store_when_no_ca_is_given() {
    let scripts = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/scripts");
    // Imported from the source tree, which must get no `__pycache__`.
    let env = PodEnv::new(&scripts, &[]).var("PYTHONDONTWRITEBYTECODE", "1");
    // The hook's listener, called as SQLAlchemy calls it for a psycopg2 connection; a
    // CA that exists, since the hook also builds pg8000's context from it.
    let ca = "/etc/ssl/certs/ca-certificates.crt";
    let program = format!(
        r#"
import json
from types import SimpleNamespace
import strata_database_tls as hook

listeners = []
hook.event.listen = lambda target, name, listener: listeners.append(listener)
psycopg2 = SimpleNamespace(name="postgresql", driver="psycopg2")
seen = {{}}
for mode, ca in [("verify-full", None), ("verify-ca", None), ("verify-full", "{ca}"), ("require", None), ("disable", None)]:
    hook.secure_metadata_database("db.example", 5432, "superset", mode, ca)
    params = {{"host": "db.example", "port": 5432, "dbname": "superset"}}
    listeners[-1](psycopg2, None, [], params)
    seen[mode + " " + str(ca)] = [params.get("sslmode"), params.get("sslrootcert")]
print(json.dumps(seen))
"#
    );
    let output = env
        .command("python")
        .args(["-c", &program])
        .output()
        .expect("python starts");
    assert!(output.status.success(), "{}", describe(&output));
    let seen: Value = serde_json::from_slice(
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .last()
            .unwrap_or_default()
            .as_bytes(),
    )
    .unwrap_or_else(|error| panic!("{error}: {}", describe(&output)));
    assert_eq!(
        seen,
        json!({
            "verify-full None": ["verify-full", "system"],
            "verify-ca None": ["verify-ca", "system"],
            format!("verify-full {ca}"): ["verify-full", ca],
            "require None": ["require", null],
            "disable None": ["disable", null],
        })
    );
}

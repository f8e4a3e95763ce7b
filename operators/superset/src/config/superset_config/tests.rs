use std::collections::BTreeMap;
use std::io::Write;
use std::process::{Command, Stdio};

use pretty_assertions::assert_eq;
use rstest::rstest;

use super::*;

fn settings(authentication: Option<AuthSetting>) -> SupersetSettings {
    SupersetSettings {
        database: DatabaseSetting::Postgresql {
            host: "postgres.db.svc".to_owned(),
            port: 5432,
            database: "superset".to_owned(),
            driver: Driver::Pg8000,
            tls: None,
        },
        row_limit: 50_000,
        webserver_timeout: 60,
        mapbox_api_key: true,
        authentication,
        celery: None,
        behind_proxy: false,
        ingress_url: None,
    }
}

fn registration() -> Registration {
    Registration {
        enabled: true,
        role: "Gamma".to_owned(),
    }
}

fn ldap() -> AuthSetting {
    ldap_with(Some(LdapTlsSetting {
        start_tls: false,
        ca_file: true,
    }))
}

fn ldap_with(tls: Option<LdapTlsSetting>) -> AuthSetting {
    AuthSetting::Ldap {
        server_uri: "ldaps://ldap.example.com".to_owned(),
        bind_dn: "cn=superset,dc=example,dc=com".to_owned(),
        search_base: "ou=people,dc=example,dc=com".to_owned(),
        user_attribute: "uid".to_owned(),
        group_attribute: "memberOf".to_owned(),
        tls,
        registration: registration(),
    }
}

fn oidc() -> AuthSetting {
    AuthSetting::Oidc {
        issuer_url: "https://id.example.com/realms/data/".to_owned(),
        client_id: "superset".to_owned(),
        scopes: vec!["openid".to_owned(), "email".to_owned()],
        registration: registration(),
    }
}

/// Whether the real Python parses `source` (the operator renders; Python decides).
fn python_parses(source: &str) -> Result<(), String> {
    let mut child = Command::new("python3")
        .args(["-c", "import ast, sys; ast.parse(sys.stdin.read())"])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|error| format!("python3 does not start: {error}"))?;
    child
        .stdin
        .take()
        .ok_or("no stdin")?
        .write_all(source.as_bytes())
        .map_err(|error| error.to_string())?;
    let output = child
        .wait_with_output()
        .map_err(|error| error.to_string())?;
    if output.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&output.stderr).into_owned())
    }
}

#[rstest]
#[case::database_login(None)]
#[case::ldap(Some(ldap()))]
#[case::oidc(Some(oidc()))]
fn the_rendered_file_is_python_and_holds_no_secret(#[case] authentication: Option<AuthSetting>) {
    let file = render(&settings(authentication), &BTreeMap::new()).expect("renders");
    python_parses(&file).expect("Python parses the rendered file");
    for secret_source in [
        "os.environ[\"STRATA_DB_PASSWORD\"]",
        "STRATA_MAPBOX_API_KEY",
    ] {
        assert!(file.contains(secret_source), "{file}");
    }
}

/// Finding 23: over TLS the server's certificate is demanded whatever the image's
/// `ldap.conf` says, against the CA the spec names; StartTLS upgrades `ldap://`.
#[rstest]
#[case::ldaps_with_a_ca(
    Some(LdapTlsSetting { start_tls: false, ca_file: true }),
    &["AUTH_LDAP_TLS_DEMAND = True", "AUTH_LDAP_TLS_CACERTFILE = os.environ[\"STRATA_LDAP_CA_FILE\"]"],
    &["AUTH_LDAP_USE_TLS"]
)]
#[case::start_tls_with_the_system_trust_store(
    Some(LdapTlsSetting { start_tls: true, ca_file: false }),
    &["AUTH_LDAP_TLS_DEMAND = True", "AUTH_LDAP_USE_TLS = True"],
    &["AUTH_LDAP_TLS_CACERTFILE"]
)]
#[case::clear_text_by_choice(None, &[], &["AUTH_LDAP_TLS_", "AUTH_LDAP_USE_TLS"])]
fn ldap_tls_demands_a_certificate_signed_by_the_named_ca(
    #[case] tls: Option<LdapTlsSetting>,
    #[case] present: &[&str],
    #[case] absent: &[&str],
) {
    let file = render(&settings(Some(ldap_with(tls))), &BTreeMap::new()).expect("renders");
    python_parses(&file).expect("Python parses the rendered file");
    for line in present {
        assert!(
            file.lines().any(|candidate| candidate == *line),
            "{line}: {file}"
        );
    }
    for start in absent {
        assert!(!file.contains(start), "{start}: {file}");
    }
}

#[test]
fn the_database_uri_is_built_from_the_environment_with_quoted_credentials() {
    let file = render(&settings(None), &BTreeMap::new()).expect("renders");
    let line = file
        .lines()
        .find(|line| line.starts_with("SQLALCHEMY_DATABASE_URI = "))
        .unwrap_or_default();
    assert_eq!(
        line,
        "SQLALCHEMY_DATABASE_URI = \"postgresql+pg8000://\" + quote(os.environ[\"STRATA_DB_USERNAME\"], safe=\"\") + \":\" + quote(os.environ[\"STRATA_DB_PASSWORD\"], safe=\"\") + \"@postgres.db.svc:5432/superset\""
    );
}

#[test]
fn a_uri_from_a_secret_leaves_the_file_without_one() {
    let mut settings = settings(None);
    settings.database = DatabaseSetting::FromEnvironment;
    let file = render(&settings, &BTreeMap::new()).expect("renders");
    assert!(!file.contains("SQLALCHEMY_DATABASE_URI"), "{file}");
}

#[test]
fn overrides_come_after_the_operators_settings_so_they_win() {
    let overrides = BTreeMap::from([
        ("ROW_LIMIT".to_owned(), "10000".to_owned()),
        (
            "FEATURE_FLAGS".to_owned(),
            "{'ALERT_REPORTS': True}".to_owned(),
        ),
    ]);
    let file = render(&settings(None), &overrides).expect("renders");
    let assignments: Vec<&str> = file
        .lines()
        .filter(|line| line.starts_with("ROW_LIMIT") || line.starts_with("FEATURE_FLAGS"))
        .collect();
    assert_eq!(
        assignments,
        [
            "ROW_LIMIT = 50000",
            "FEATURE_FLAGS = {'ALERT_REPORTS': True}",
            "ROW_LIMIT = 10000"
        ]
    );
    python_parses(&file).expect("Python parses the file with overrides");
}

#[rstest]
#[case::not_an_identifier("row-limit", "1")]
#[case::a_keyword("import", "1")]
#[case::a_second_statement("ROW_LIMIT", "1; import os")]
#[case::an_assignment_behind_it("ROW_LIMIT", "1\nSECRET_KEY = 'x'")]
fn overrides_that_are_not_one_assignment_are_refused(#[case] key: &str, #[case] value: &str) {
    let overrides = BTreeMap::from([(key.to_owned(), value.to_owned())]);
    assert!(render(&settings(None), &overrides).is_err());
}

#[test]
fn oidc_reads_the_issuers_discovery_document() {
    let file = render(&settings(Some(oidc())), &BTreeMap::new()).expect("renders");
    assert!(
        file.contains("\"server_metadata_url\": \"https://id.example.com/realms/data/.well-known/openid-configuration\""),
        "{file}"
    );
    assert!(file.contains("AUTH_TYPE = AUTH_OAUTH"), "{file}");
}

/// Every login goes through the operator's security manager, whose login API has the
/// login form's rate limit; Flask-AppBuilder 5 knows no provider named `oidc`, so OIDC
/// logins use its subclass that reads their users. The limits are on whatever the
/// image's `SUPERSET_ENV`.
#[rstest]
#[case::database_login(
    None,
    "from strata_security import StrataSecurityManager",
    "StrataSecurityManager"
)]
#[case::ldap(
    Some(ldap()),
    "from strata_security import StrataSecurityManager",
    "StrataSecurityManager"
)]
#[case::oidc(
    Some(oidc()),
    "from strata_oidc import OidcSecurityManager",
    "OidcSecurityManager"
)]
fn every_login_goes_through_the_operators_rate_limited_security_manager(
    #[case] authentication: Option<AuthSetting>,
    #[case] import: &str,
    #[case] manager: &str,
) {
    let file = render(&settings(authentication), &BTreeMap::new()).expect("renders");
    assert!(file.contains(&format!("{import}\n")), "{file}");
    assert!(
        file.contains(&format!("CUSTOM_SECURITY_MANAGER = {manager}\n")),
        "{file}"
    );
    assert!(file.contains("RATELIMIT_ENABLED = True\n"), "{file}");
    assert!(!file.contains("RATELIMIT_STORAGE_URI"), "{file}");
    assert!(
        !file.contains("AUTH_RATE_LIMIT"),
        "Superset's own limit stays: {file}"
    );
}

/// Finding 24: behind an Ingress that serves HTTPS, the cookies are never sent in
/// clear; behind a plain one, or none, Superset's defaults stay.
#[rstest]
#[case::an_https_ingress(Some("https://superset.example.com/"), true)]
#[case::a_plain_ingress(Some("http://superset.example.com/"), false)]
#[case::no_ingress(None, false)]
fn behind_an_https_ingress_the_cookies_are_secure(#[case] url: Option<&str>, #[case] secure: bool) {
    let mut behind = settings(None);
    behind.behind_proxy = url.is_some();
    behind.ingress_url = url.map(str::to_owned);
    let file = render(&behind, &BTreeMap::new()).expect("renders");
    for line in [
        "SESSION_COOKIE_SECURE = True\n",
        "REMEMBER_COOKIE_SECURE = True\n",
        "PREFERRED_URL_SCHEME = \"https\"\n",
    ] {
        assert_eq!(file.contains(line), secure, "{line}{file}");
    }
}

#[test]
fn celery_and_the_caches_parse_and_read_redis_from_the_environment() {
    let mut celery = settings(None);
    celery.celery = Some(CelerySetting {
        first_database: 2,
        alerts_reports: true,
        web_server_url: "http://simple-superset.default.svc.cluster.local:8088/".to_owned(),
    });
    let file = render(&celery, &BTreeMap::new()).expect("renders");
    python_parses(&file).expect("Python parses the Celery settings");
    assert!(
        file.contains(
            "from strata_celery import redis_client, redis_options, redis_tls, redis_url"
        )
    );
    // Every web server counts logins in the caches' database, and in memory while
    // Redis does not answer.
    for line in [
        "RATELIMIT_STORAGE_URI = redis_url(4)\n",
        "RATELIMIT_STORAGE_OPTIONS = redis_options()\n",
        "RATELIMIT_IN_MEMORY_FALLBACK_ENABLED = True\n",
    ] {
        assert!(file.contains(line), "{line}{file}");
    }
    assert!(file.contains("\"broker_use_ssl\": redis_tls()"), "{file}");
    assert!(
        file.contains("\"CACHE_OPTIONS\": redis_options()"),
        "{file}"
    );
    assert!(file.contains("\"broker_url\": redis_url(2)"), "{file}");
    assert!(!file.contains("redis://"), "no URL is written: {file}");
}

/// What `prints` (expressions of `strata_celery`) print, one line each, run by Python
/// with the pod's variables.
fn strata_celery_in_python(prints: &[&str], variables: &[(&str, &str)]) -> String {
    let prints: String = prints
        .iter()
        .map(|expression| format!("; print(strata_celery.{expression})"))
        .collect();
    let script = format!(
        "import sys; sys.path.insert(0, {:?}); import strata_celery{prints}",
        concat!(env!("CARGO_MANIFEST_DIR"), "/src/scripts")
    );
    let output = Command::new("python3")
        .args(["-c", &script])
        .env_clear()
        .envs(variables.iter().copied())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("python3 runs");
    assert!(output.status.success(), "{output:?}");
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

/// `strata_celery.py`'s URLs with the pod's variables.
fn redis_url_in_python(variables: &[(&str, &str)]) -> String {
    strata_celery_in_python(&["redis_url(3)", "where()"], variables)
}

#[rstest]
#[case::host_with_a_quoted_password(
    &[("STRATA_REDIS_HOST", "redis.db.svc"), ("STRATA_REDIS_PORT", "6380"), ("STRATA_REDIS_PASSWORD", "p@ss:w/rd")],
    "redis://:p%40ss%3Aw%2Frd@redis.db.svc:6380/3\nredis.db.svc:6380"
)]
#[case::host_without_a_password(
    &[("STRATA_REDIS_HOST", "redis"), ("STRATA_REDIS_PORT", "6379")],
    "redis://redis:6379/3\nredis:6379"
)]
#[case::a_password_from_a_file_with_a_line_break(
    &[("STRATA_REDIS_HOST", "redis"), ("STRATA_REDIS_PORT", "6379"), ("STRATA_REDIS_PASSWORD", "pw\n")],
    "redis://:pw@redis:6379/3\nredis:6379"
)]
#[case::url_from_a_secret(
    &[("STRATA_REDIS_URL", "rediss://app:secret@cache.example.com:6380/\n")],
    "rediss://app:secret@cache.example.com:6380/3\ncache.example.com:6380"
)]
#[case::host_with_tls(
    &[("STRATA_REDIS_HOST", "redis"), ("STRATA_REDIS_PORT", "6379"), ("STRATA_REDIS_PASSWORD", "pw"), ("STRATA_REDIS_TLS", "true")],
    "rediss://:pw@redis:6379/3\nredis:6379"
)]
fn redis_urls_are_built_from_the_pods_variables(
    #[case] variables: &[(&str, &str)],
    #[case] expected: &str,
) {
    assert_eq!(redis_url_in_python(variables), expected);
}

/// `strata_celery.py`'s TLS settings for redis-py and for Celery, with the pod's
/// variables.
fn tls_settings_in_python(variables: &[(&str, &str)]) -> String {
    strata_celery_in_python(&["redis_options()", "redis_tls()"], variables)
}

#[rstest]
#[case::plaintext(
    &[("STRATA_REDIS_HOST", "redis"), ("STRATA_REDIS_PORT", "6379")],
    "{}\nNone"
)]
#[case::tls_with_the_system_trust_store(
    &[("STRATA_REDIS_HOST", "redis"), ("STRATA_REDIS_PORT", "6379"), ("STRATA_REDIS_TLS", "true")],
    "{}\n{'ssl_cert_reqs': <VerifyMode.CERT_REQUIRED: 2>}"
)]
#[case::tls_with_a_ca(
    &[("STRATA_REDIS_HOST", "redis"), ("STRATA_REDIS_PORT", "6379"), ("STRATA_REDIS_TLS", "true"), ("STRATA_REDIS_CA_FILE", "/strata/redis-tls/ca.crt")],
    "{'ssl_ca_certs': '/strata/redis-tls/ca.crt'}\n{'ssl_cert_reqs': <VerifyMode.CERT_REQUIRED: 2>, 'ssl_ca_certs': '/strata/redis-tls/ca.crt'}"
)]
#[case::a_rediss_url_with_a_ca(
    &[("STRATA_REDIS_URL", "rediss://:pw@cache:6380"), ("STRATA_REDIS_TLS", "true"), ("STRATA_REDIS_CA_FILE", "/ca.crt")],
    "{'ssl_ca_certs': '/ca.crt'}\n{'ssl_cert_reqs': <VerifyMode.CERT_REQUIRED: 2>, 'ssl_ca_certs': '/ca.crt'}"
)]
fn the_redis_certificate_is_checked_against_the_ca_when_one_is_named(
    #[case] variables: &[(&str, &str)],
    #[case] expected: &str,
) {
    assert_eq!(tls_settings_in_python(variables), expected);
}

#[rstest]
#[case::a_database_in_the_url("redis://:s3cr3tpw@redis:6379/1", false)]
#[case::a_query("rediss://:s3cr3tpw@redis:6379?ssl_cert_reqs=none", false)]
#[case::an_unencoded_slash_in_the_password("redis://:s3/cr3tpw@redis:6379", false)]
#[case::another_scheme("http://:s3cr3tpw@redis:6379", false)]
#[case::plaintext_while_tls_is_asked_for("redis://:s3cr3tpw@redis:6379", true)]
fn a_bad_url_stops_the_container_without_repeating_it(#[case] url: &str, #[case] tls: bool) {
    let scratch = tempfile::tempdir().expect("a scratch directory");
    let log = scratch.path().join("termination-log");
    let script = format!(
        "import sys; sys.path.insert(0, {:?}); import strata_celery; strata_celery.redis_url(0)",
        concat!(env!("CARGO_MANIFEST_DIR"), "/src/scripts")
    );
    let output = Command::new("python3")
        .args(["-c", &script])
        .env_clear()
        .env("STRATA_REDIS_URL", url)
        .envs(tls.then_some(("STRATA_REDIS_TLS", "true")))
        .env("TERMINATION_LOG", &log)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("python3 runs");
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let message = std::fs::read_to_string(&log).expect("the termination log");
    assert!(message.starts_with("InvalidRedisUrl\n"), "{message}");
    let said = format!(
        "{message}{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(!said.contains("cr3tpw"), "the password leaked: {said}");
}

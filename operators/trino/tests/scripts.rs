//! The pod scripts run by the real bash against a loopback stand-in for Trino's HTTP
//! server: the readiness probe reads `/v1/info`, and the preStop hook sends the
//! shutdown request Trino documents and waits for the server to go away.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use trino_operator::config::scripts::{GRACEFUL_SHUTDOWN, READY, START, TRINO_HTTP};
use trino_operator::config::server::SHUTDOWN_USER;

/// Writes `script` to a file bash reads (never executed as a file itself), with the
/// file it sources beside it, as the scripts volume mounts them.
fn script_file(dir: &tempfile::TempDir, name: &str, script: &str) -> PathBuf {
    std::fs::write(dir.path().join("trino-http.sh"), TRINO_HTTP).expect("write the library");
    let path = dir.path().join(name);
    std::fs::write(&path, script).expect("write the script");
    path
}

/// bash running `script` with `args` against the plain HTTP server on `port`, as a node
/// without TLS does.
fn bash(script: &PathBuf, port: u16, args: &[&str]) -> Command {
    let mut command = Command::new("bash");
    command
        .arg(script)
        .args(args)
        .env("STRATA_TRINO_URL", format!("http://127.0.0.1:{port}"))
        .env_remove("STRATA_TRINO_CA");
    command
}

/// Waits for `child` at most `limit`; kills it by its PID if it is still running.
fn wait(mut child: Child, limit: Duration) -> ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("wait for bash") {
            return status;
        }
        if Instant::now() > deadline {
            child.kill().expect("kill bash");
            child.wait().expect("reap bash");
            panic!("the script did not finish within {limit:?}");
        }
        thread::sleep(Duration::from_millis(50));
    }
}

/// Serves one request with `answer`, sends the raw request back through the channel,
/// and keeps listening (refusing nothing) for `alive` afterwards, as a draining worker
/// does until its JVM exits.
fn serve_once(answer: &'static str, alive: Duration) -> (u16, mpsc::Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port is free");
    let port = listener.local_addr().expect("address").port();
    let (sender, receiver) = mpsc::channel();
    thread::spawn(move || {
        let (mut stream, _) = listener.accept().expect("accept");
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        let mut request = Vec::new();
        let mut buffer = [0_u8; 1024];
        while let Ok(read) = stream.read(&mut buffer) {
            if read == 0 {
                break;
            }
            request.extend_from_slice(&buffer[..read]);
            let text = String::from_utf8_lossy(&request);
            if let Some((head, body)) = text.split_once("\r\n\r\n") {
                let length = head
                    .lines()
                    .find_map(|line| line.strip_prefix("Content-Length: "))
                    .and_then(|value| value.trim().parse::<usize>().ok())
                    .unwrap_or(0);
                if body.len() >= length {
                    break;
                }
            }
        }
        stream.write_all(answer.as_bytes()).expect("answer");
        drop(stream);
        sender
            .send(String::from_utf8_lossy(&request).into_owned())
            .expect("report the request");
        let until = Instant::now() + alive;
        listener.set_nonblocking(true).expect("non-blocking");
        while Instant::now() < until {
            // Accept the hook's "is it still up?" connections and close them.
            let _probe = listener.accept();
            thread::sleep(Duration::from_millis(20));
        }
    });
    (port, receiver)
}

#[test]
fn the_readiness_probe_needs_starting_false() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ready = script_file(&dir, "ready.sh", READY);
    for (answer, ready_expected) in [
        (
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{\"nodeVersion\":{\"version\":\"483\"},\"environment\":\"t\",\"coordinator\":false,\"starting\":false,\"uptime\":\"1m\"}",
            true,
        ),
        (
            "HTTP/1.1 200 OK\r\n\r\n{\"coordinator\":true,\"starting\": false}",
            true,
        ),
        (
            "HTTP/1.1 200 OK\r\n\r\n{\"coordinator\":false,\"starting\":true}",
            false,
        ),
        (
            "HTTP/1.1 503 Service Unavailable\r\n\r\n{\"starting\":false}",
            false,
        ),
    ] {
        let (port, requests) = serve_once(answer, Duration::ZERO);
        let child = bash(&ready, port, &[]).spawn().expect("run bash");
        let status = wait(child, Duration::from_secs(10));
        assert_eq!(status.success(), ready_expected, "{answer}");
        let request = requests.recv().expect("the probe asked");
        assert!(request.starts_with("GET /v1/info HTTP/1."), "{request}");
    }
}

#[test]
fn the_readiness_probe_fails_when_nothing_listens() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ready = script_file(&dir, "ready.sh", READY);
    let port = {
        let listener = TcpListener::bind("127.0.0.1:0").expect("port");
        listener.local_addr().expect("address").port()
    };
    let child = bash(&ready, port, &[])
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("run bash");
    assert!(!wait(child, Duration::from_secs(10)).success());
}

#[test]
fn the_pre_stop_hook_asks_the_worker_to_shut_down_and_waits_for_it_to_exit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let hook = script_file(&dir, "graceful-shutdown.sh", GRACEFUL_SHUTDOWN);
    let draining = Duration::from_secs(3);
    let (port, requests) = serve_once("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", draining);
    let started = Instant::now();
    let child = bash(&hook, port, &[SHUTDOWN_USER])
        .spawn()
        .expect("run bash");
    let status = wait(child, Duration::from_secs(30));
    assert!(status.success());
    assert!(
        started.elapsed() >= draining,
        "the hook returned before the server stopped listening"
    );
    let request = requests.recv().expect("the hook asked");
    let (head, body) = request.split_once("\r\n\r\n").expect("a complete request");
    let mut lines = head.lines();
    assert_eq!(lines.next(), Some("PUT /v1/info/state HTTP/1.1"));
    let headers: Vec<&str> = lines.collect();
    assert!(
        !headers
            .iter()
            .any(|header| header.starts_with("Authorization")),
        "no credentials without a password file: {headers:?}"
    );
    assert!(
        headers.contains(&"X-Trino-User: graceful-shutdown"),
        "{headers:?}"
    );
    assert!(
        headers.contains(&"Content-Type: application/json"),
        "{headers:?}"
    );
    assert_eq!(
        body, "\"SHUTTING_DOWN\"",
        "the body is the JSON string Trino expects"
    );
}

#[test]
fn the_hook_succeeds_at_once_when_the_server_is_already_down() {
    let dir = tempfile::tempdir().expect("tempdir");
    let hook = script_file(&dir, "graceful-shutdown.sh", GRACEFUL_SHUTDOWN);
    let port = {
        let listener = TcpListener::bind("127.0.0.1:0").expect("port");
        listener.local_addr().expect("address").port()
    };
    let child = bash(&hook, port, &[SHUTDOWN_USER])
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("run bash");
    assert!(wait(child, Duration::from_secs(10)).success());
}

#[test]
fn a_refused_shutdown_fails_the_hook_so_the_kubelet_reports_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let hook = script_file(&dir, "graceful-shutdown.sh", GRACEFUL_SHUTDOWN);
    let (port, _requests) = serve_once(
        "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n",
        Duration::ZERO,
    );
    let output = bash(&hook, port, &[SHUTDOWN_USER])
        .output()
        .expect("run bash");
    assert!(!output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("refused to shut down: HTTP 403"),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
}

/// With authentication on, the hook authenticates as the shutdown user with the password
/// from its file, which reaches curl on its standard input, never a command line. A
/// password with a quote, a backslash or a line break is sent as it is (reliability
/// review, I-9: it ended curl's quoted string, and a line break started another curl
/// option). The expected headers are the base64 of `graceful-shutdown:<password>`.
#[rstest::rstest]
#[case::letters_and_digits("0123abcd", "Z3JhY2VmdWwtc2h1dGRvd246MDEyM2FiY2Q=")]
#[case::a_quote_and_a_backslash("pa\"ss\\word", "Z3JhY2VmdWwtc2h1dGRvd246cGEic3Ncd29yZA==")]
#[case::a_line_break_before_an_option("x\"\ninsecure", "Z3JhY2VmdWwtc2h1dGRvd246eCIKaW5zZWN1cmU=")]
fn with_a_password_file_the_hook_authenticates_as_the_shutdown_user(
    #[case] password: &str,
    #[case] basic: &str,
) {
    let dir = tempfile::tempdir().expect("tempdir");
    let hook = script_file(&dir, "graceful-shutdown.sh", GRACEFUL_SHUTDOWN);
    let password_file = dir.path().join("password");
    std::fs::write(&password_file, password).expect("write the password");
    let (port, requests) = serve_once(
        "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
        Duration::ZERO,
    );
    let child = bash(
        &hook,
        port,
        &[SHUTDOWN_USER, password_file.to_str().expect("a UTF-8 path")],
    )
    .spawn()
    .expect("run bash");
    assert!(wait(child, Duration::from_secs(30)).success());
    let request = requests.recv().expect("the hook asked");
    assert!(
        request.contains(&format!("Authorization: Basic {basic}")),
        "{request}"
    );
}

/// `start.sh` joins the certificate and its key into the keystore, readable by its
/// owner only.
#[test]
fn start_assembles_the_keystore_from_the_certificate_secret() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let start = script_file(&dir, "start.sh", START);
    let tls = dir.path().join("tls");
    std::fs::create_dir(&tls).expect("tls dir");
    std::fs::write(tls.join("tls.crt"), "CERTIFICATE").expect("certificate");
    std::fs::write(tls.join("tls.key"), "KEY\n").expect("key");
    let keystore = dir.path().join("server.pem");
    let output = Command::new("bash")
        .arg(&start)
        .arg("cat")
        .arg(&keystore)
        .env("STRATA_TLS_DIR", &tls)
        .env("STRATA_KEYSTORE", &keystore)
        .output()
        .expect("run bash");
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "CERTIFICATE\nKEY\n"
    );
    let mode = std::fs::metadata(&keystore)
        .expect("keystore")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
}

/// What `start.sh` hands the launcher for `value` in a comma list variable.
fn started_with(value: &str) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    let start = script_file(&dir, "start.sh", START);
    let output = Command::new("bash")
        .arg(&start)
        .args(["bash", "-c", "printf '%s' \"$CATALOG_HIVE_METASTORE_URI\""])
        .env("STRATA_COMMA_LISTS", "CATALOG_HIVE_METASTORE_URI")
        .env("CATALOG_HIVE_METASTORE_URI", value)
        .output()
        .expect("run start.sh");
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout).expect("utf-8")
}

#[rstest::rstest]
#[case::one_uri("thrift://a:9083", "thrift://a:9083")]
#[case::one_a_line(
    "thrift://a:9083\nthrift://b:9083\n",
    "thrift://a:9083,thrift://b:9083"
)]
#[case::commas_and_spaces(
    " thrift://a:9083, thrift://b:9083 ,\r\nthrift://c:9083",
    "thrift://a:9083,thrift://b:9083,thrift://c:9083"
)]
#[case::already_joined("thrift://a:9083,thrift://b:9083", "thrift://a:9083,thrift://b:9083")]
#[case::empty("", "")]
fn a_metastore_list_reaches_trino_joined_with_commas(#[case] value: &str, #[case] expected: &str) {
    assert_eq!(started_with(value), expected);
}

#[test]
fn start_execs_its_arguments_unchanged_without_lists() {
    let dir = tempfile::tempdir().expect("tempdir");
    let start = script_file(&dir, "start.sh", START);
    let output = Command::new("bash")
        .arg(&start)
        .args([
            "bash",
            "-c",
            "printf '%s|%s' \"$0\" \"$1\"",
            "-Dnode.id=w-0",
            "a b",
        ])
        .env_remove("STRATA_COMMA_LISTS")
        .output()
        .expect("run start.sh");
    assert!(output.status.success(), "{output:?}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "-Dnode.id=w-0|a b");
}

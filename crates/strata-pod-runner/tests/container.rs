//! Containers on the real kernel: the helper builds each container's root, binds the
//! volumes, drops to the pod's user and runs the command in the pod's network. Needs
//! root, as the pod runner does; `cargo xtask test` runs it.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::fs;
use std::path::Path;
use std::time::Duration;

use nix::unistd::{Gid, Uid, chown};
use strata_pod_runner::container::{Exit, Helper, termination_log_file, termination_message};
use strata_pod_runner::launch::{Bind, Command, Credentials, Launch};
use strata_pod_runner::network::PodNetwork;

const USER: Credentials = Credentials {
    uid: 1000,
    gid: 100,
    groups: Vec::new(),
};

fn launch(network: &PodNetwork, dir: &Path, script: &str) -> Launch {
    let config = dir.join("config");
    let data = dir.join("data");
    fs::create_dir_all(&config).unwrap();
    fs::create_dir_all(&data).unwrap();
    fs::write(config.join("greeting"), "hello from the config map\n").unwrap();
    chown(
        &data,
        Some(Uid::from_raw(USER.uid)),
        Some(Gid::from_raw(USER.gid)),
    )
    .unwrap();
    fs::write(
        dir.join("hosts"),
        "127.0.0.1\tlocalhost\n10.244.0.2\tweb-0.web.default.svc.cluster.local\tweb-0\n",
    )
    .unwrap();
    let termination_log = dir.join("termination-log");
    let user = Credentials {
        groups: vec![100],
        ..USER
    };
    termination_log_file(&termination_log, &user).unwrap();
    Launch {
        netns: network.netns_path("web-0").unwrap(),
        scratch: dir.join("scratch"),
        hostname: "web-0".to_owned(),
        binds: vec![
            Bind {
                source: config,
                target: "/strata/config".into(),
                read_only: true,
            },
            Bind {
                source: data,
                target: "/data".into(),
                read_only: false,
            },
            Bind {
                source: dir.join("hosts"),
                target: "/etc/hosts".into(),
                read_only: true,
            },
        ],
        termination_log,
        read_only_root: true,
        user,
        no_new_privileges: true,
        command: Command {
            argv: vec!["sh".to_owned(), "-c".to_owned(), script.to_owned()],
            env: vec![("PATH".to_owned(), "/usr/bin:/bin".to_owned())],
            working_dir: "/strata/config".into(),
        },
    }
}

#[tokio::test]
#[ignore = "needs root; run by cargo xtask test"]
async fn a_container_sees_its_volumes_its_name_and_its_user_and_nothing_leaks_to_the_host() {
    let helper = Helper::locate().unwrap_or_else(|error| panic!("{error}"));
    let mut network = PodNetwork::create().unwrap_or_else(|error| panic!("{error}"));
    network.add_pod("web-0").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let script = "id -u; id -G; hostname; pwd; cat greeting; getent hosts web-0 | cut -f1 -d' '; \
        touch /etc/strata 2>/dev/null && echo root-writable || echo root-read-only; \
        touch /strata/config/x 2>/dev/null && echo config-writable || echo config-read-only; \
        echo kept > /data/file && echo data-writable; \
        echo DataDirectoryLost > /dev/termination-log; exit 3";
    let spec = launch(&network, dir.path(), script);
    let log = dir.path().join("log");

    let exit = helper.launch(&spec, dir.path(), &log).unwrap().wait().await;

    let output = fs::read_to_string(&log).unwrap();
    assert_eq!(
        exit,
        Exit {
            code: 3,
            signal: None
        },
        "{output}"
    );
    assert_eq!(
        output.lines().collect::<Vec<_>>(),
        [
            "1000",
            "100",
            "web-0",
            "/strata/config",
            "hello from the config map",
            "10.244.0.2",
            "root-read-only",
            "config-read-only",
            "data-writable"
        ]
    );
    assert_eq!(
        fs::read_to_string(dir.path().join("data/file")).unwrap(),
        "kept\n"
    );
    assert_eq!(
        termination_message(&spec.termination_log, &log, false, exit).as_deref(),
        Some("DataDirectoryLost\n")
    );
    assert!(
        !Path::new("/strata/config/greeting").exists(),
        "the container's mounts reached the host"
    );
}

#[tokio::test]
#[ignore = "needs root; run by cargo xtask test"]
async fn a_command_runs_inside_a_running_container_and_a_stop_ends_its_whole_group() {
    let helper = Helper::locate().unwrap_or_else(|error| panic!("{error}"));
    let mut network = PodNetwork::create().unwrap_or_else(|error| panic!("{error}"));
    network.add_pod("web-0").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let spec = launch(
        &network,
        dir.path(),
        "sleep 300 & sleep 300; echo unreachable",
    );
    let mut running = helper
        .launch(&spec, dir.path(), &dir.path().join("log"))
        .unwrap();
    running.until_exec().await;

    let probe = Command {
        argv: vec![
            "sh".to_owned(),
            "-c".to_owned(),
            "hostname; cat /strata/config/greeting; id -u; yes | head -n 1".to_owned(),
        ],
        env: spec.command.env.clone(),
        working_dir: "/".into(),
    };
    let mut answer = None;
    for _ in 0..50 {
        answer = helper
            .exec_in(
                running.pid(),
                &spec.user,
                true,
                probe.clone(),
                Duration::from_secs(10),
            )
            .await
            .unwrap();
        if answer.as_ref().is_some_and(|(code, _)| *code == 0) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        answer,
        Some((0, "web-0\nhello from the config map\n1000\ny\n".to_owned())),
        "the hostname, a volume, the user, and SIGPIPE ending `yes` quietly"
    );
    let timed_out = helper
        .exec_in(
            running.pid(),
            &spec.user,
            true,
            Command {
                argv: vec!["sleep".to_owned(), "30".to_owned()],
                ..probe
            },
            Duration::from_millis(500),
        )
        .await
        .unwrap();
    assert_eq!(timed_out, None, "a probe that overruns its timeout");

    let group = running.pid();
    let exit = running.stop(Duration::from_secs(1)).await;
    assert_eq!(
        exit,
        Exit {
            code: 137,
            signal: Some(9)
        },
        "a shell without a trap as PID 1 ignores SIGTERM, so the grace period ends in SIGKILL"
    );
    // SIGKILL is delivered at once but acted on when the process next runs.
    let mut survivors = group_members(group);
    for _ in 0..50 {
        if survivors.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        survivors = group_members(group);
    }
    assert!(
        survivors.is_empty(),
        "processes left in the container's group: {survivors:?}"
    );
}

/// The container's command is PID 1 of its own PID namespace, and a stop asks only it,
/// with SIGTERM: as in Kubernetes, a PID 1 without a handler ignores the signal and is
/// killed when the grace period ends, while one with a `trap` ends at once.
#[rstest::rstest]
#[case::a_trap_ends_at_once(
    "trap 'exit 0' TERM; echo pid $$; while :; do sleep 0.1; done",
    0,
    false,
    ""
)]
#[case::a_bash_trap_ends_at_once(
    "exec bash -c 'trap \"exit 0\" TERM; echo pid $$; while :; do sleep 0.1; done'",
    0,
    false,
    ""
)]
#[case::no_trap_waits_for_the_kill("echo pid $$; while :; do sleep 0.1; done", 137, true, "")]
#[case::a_child_pid_1_waits_for_is_not_asked(
    "trap 'echo asked' TERM; echo pid $$; sleep 2; echo slept $?",
    0,
    false,
    "asked\nslept 0\n"
)]
#[tokio::test]
#[ignore = "needs root; run by cargo xtask test"]
async fn a_stop_asks_pid_1_alone_and_only_a_handler_makes_it_listen(
    #[case] script: &str,
    #[case] code: i32,
    #[case] killed_at_grace: bool,
    #[case] ends_with: &str,
) {
    let helper = Helper::locate().unwrap_or_else(|error| panic!("{error}"));
    let mut network = PodNetwork::create().unwrap_or_else(|error| panic!("{error}"));
    network.add_pod("web-0").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let spec = launch(&network, dir.path(), script);
    let mut running = helper.launch(&spec, dir.path(), &log).unwrap();
    running.until_exec().await;
    while !fs::read_to_string(&log)
        .unwrap_or_default()
        .contains("pid ")
    {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    let grace = Duration::from_secs(5);
    let asked = std::time::Instant::now();
    let exit = running.stop(grace).await;
    let output = fs::read_to_string(&log).unwrap();
    assert_eq!(exit.code, code, "{output}");
    assert_eq!(asked.elapsed() >= grace, killed_at_grace, "{output}");
    assert!(output.starts_with("pid 1\n"), "{output}");
    assert!(output.ends_with(ends_with), "{output}");
}

/// The live processes of a process group, by their `/proc/<pid>/stat` lines.
fn group_members(group: u32) -> Vec<String> {
    fs::read_dir("/proc")
        .unwrap()
        .filter_map(|entry| fs::read_to_string(entry.unwrap().path().join("stat")).ok())
        .filter(|stat| {
            let fields: Vec<&str> = stat
                .rsplit(')')
                .next()
                .unwrap_or_default()
                .split_whitespace()
                .collect();
            // A zombie has ended; it waits only for its new parent to reap it.
            fields.first() != Some(&"Z") && fields.get(2) == Some(&group.to_string().as_str())
        })
        .collect()
}

/// `FallbackToLogsOnError`: with an empty termination log and a failed exit, the
/// kubelet reports the log's last 80 lines, of which at most the last 2048 bytes;
/// after a clean exit, nothing.
#[rstest::rstest]
#[case::short_log_whole(5, 40, 1, Some(5))]
#[case::long_lines_cut_to_2048_bytes(80, 40, 1, Some(2048 / 41))]
#[case::many_short_lines_cut_to_80(200, 8, 1, Some(80))]
#[case::clean_exit_reports_nothing(5, 40, 0, None)]
fn a_failed_containers_log_tail_is_its_message_within_the_kubelets_bounds(
    #[case] lines: usize,
    #[case] width: usize,
    #[case] code: i32,
    #[case] whole_lines_kept: Option<usize>,
) {
    let dir = tempfile::tempdir().unwrap();
    let termination_log = dir.path().join("termination-log");
    fs::write(&termination_log, "").unwrap();
    let log = dir.path().join("log");
    let text: String = (0..lines).map(|line| format!("{line:0width$}\n")).collect();
    fs::write(&log, &text).unwrap();
    let message = termination_message(&termination_log, &log, true, Exit { code, signal: None });
    let whole_lines = message
        .as_deref()
        .map(|message| message.lines().filter(|line| line.len() == width).count());
    assert_eq!(whole_lines, whole_lines_kept);
    let message = message.unwrap_or_default();
    assert!(message.len() <= 2048, "{} bytes", message.len());
    assert!(
        text.trim_end().ends_with(message.as_str()),
        "the log's tail: {message}"
    );
}

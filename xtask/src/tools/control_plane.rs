//! The real Kubernetes control plane, built from pinned Go modules: kube-apiserver,
//! kube-controller-manager and kube-scheduler from `k8s.io/kubernetes`, etcd from
//! `go.etcd.io/etcd/server/v3`, and the KWOK controller (`sigs.k8s.io/kwok`) that
//! plays the nodes and kubelets.
//!
//! The pins live in `xtask/go/<module>/go.mod` and `go.sum`, one module each, so that
//! etcd and KWOK do not move the API server's dependencies. `k8s.io/kubernetes`
//! replaces its `k8s.io/*` staging modules with local paths, which Go ignores in a
//! dependency, so our `go.mod` pins every one of them to the matching `v0.x` release.
//!
//! The binaries go to `<cache>/strata/control-plane/<key>/`, outside `target/`: a
//! fresh clone on the same machine finds them and builds nothing again. The modules
//! come through Go's module cache (`go env GOMODCACHE`); the build cache is one of
//! our own, removed once every binary is built. The key is a hash of what
//! the binaries are built from (the module files, the flags, and the Go version,
//! `GOFLAGS` and architecture), and a stamp next to each binary records it.

use std::{
    fs,
    io::{BufRead, BufReader},
    path::{Path, PathBuf},
    process::{Command, ExitStatus, Stdio},
    sync::atomic::{AtomicUsize, Ordering},
    time::{Duration, Instant},
};

use anyhow::{Context, bail};
use sha2::{Digest, Sha256};

use super::{Outcome, process};

/// The Kubernetes release the binaries report (`kubectl version`).
pub const KUBERNETES_VERSION: &str = "v1.37.2";

/// One binary built from a pinned module.
#[derive(Debug, Clone, Copy)]
pub struct GoBinary {
    /// The file name of the binary.
    pub name: &'static str,
    /// The module directory under `xtask/go/`.
    pub module: &'static str,
    /// The main package to build.
    pub package: &'static str,
}

/// Everything the control plane runs, in start order.
pub const BINARIES: &[GoBinary] = &[
    GoBinary {
        name: "etcd",
        module: "etcd",
        package: ".",
    },
    GoBinary {
        name: "kube-apiserver",
        module: "kubernetes",
        package: "k8s.io/kubernetes/cmd/kube-apiserver",
    },
    GoBinary {
        name: "kube-controller-manager",
        module: "kubernetes",
        package: "k8s.io/kubernetes/cmd/kube-controller-manager",
    },
    GoBinary {
        name: "kube-scheduler",
        module: "kubernetes",
        package: "k8s.io/kubernetes/cmd/kube-scheduler",
    },
    GoBinary {
        name: "kwok",
        module: "kwok",
        package: "sigs.k8s.io/kwok/cmd/kwok",
    },
];

/// The Prometheus release whose `promtool` checks and unit-tests the operators' alert
/// rules (`github.com/prometheus/prometheus` tags 3.x releases as `v0.3xx`).
pub const PROMETHEUS_VERSION: &str = "v3.16.0";

/// Binaries built from pinned Go modules into one cache directory, under one key.
#[derive(Debug, Clone, Copy)]
pub struct GoToolSet {
    /// What the set is, for the cache directory's name (`control-plane`).
    pub directory: &'static str,
    /// The release the binaries report, part of the cache directory's name.
    pub version: &'static str,
    /// The module directories under `xtask/go/` whose files the key hashes.
    pub modules: &'static [&'static str],
    /// What is built.
    pub binaries: &'static [GoBinary],
}

/// The Kubernetes control plane.
pub const CONTROL_PLANE: GoToolSet = GoToolSet {
    directory: "control-plane",
    version: KUBERNETES_VERSION,
    modules: &["etcd", "kubernetes", "kwok"],
    binaries: BINARIES,
};

/// Prometheus' `promtool`, for `promtool test rules` on every operator's alerts.
pub const PROMETHEUS_TOOLS: GoToolSet = GoToolSet {
    directory: "prometheus",
    version: PROMETHEUS_VERSION,
    modules: &["prometheus"],
    binaries: &[GoBinary {
        name: "promtool",
        module: "prometheus",
        package: "github.com/prometheus/prometheus/cmd/promtool",
    }],
};

/// The statsd exporter release beside every Superset pod, which turns gunicorn's statsd
/// counters into Prometheus metrics.
pub const STATSD_EXPORTER_VERSION: &str = "v0.31.0";

/// The statsd exporter, for the pod runner's stand-in of its image.
pub const STATSD_EXPORTER_TOOLS: GoToolSet = GoToolSet {
    directory: "statsd-exporter",
    version: STATSD_EXPORTER_VERSION,
    modules: &["statsd-exporter"],
    binaries: &[GoBinary {
        name: "statsd_exporter",
        module: "statsd-exporter",
        package: "github.com/prometheus/statsd_exporter",
    }],
};

/// The `-ldflags` that stamp the Kubernetes version, as `hack/lib/version.sh` does, so
/// the API server reports `v1.37.2` rather than `v0.0.0-master`.
pub fn kubernetes_ldflags() -> String {
    let (major, minor) = major_minor(KUBERNETES_VERSION);
    [
        ("gitVersion", KUBERNETES_VERSION),
        ("gitMajor", major),
        ("gitMinor", minor),
        ("gitTreeState", "clean"),
    ]
    .iter()
    .flat_map(|(name, value)| {
        [
            "k8s.io/component-base/version",
            "k8s.io/client-go/pkg/version",
        ]
        .map(|package| format!("-X '{package}.{name}={value}'"))
    })
    .chain(["-s".to_owned(), "-w".to_owned()])
    .collect::<Vec<_>>()
    .join(" ")
}

/// `("1", "37")` of `v1.37.2`.
fn major_minor(version: &str) -> (&str, &str) {
    let mut parts = version.trim_start_matches('v').split('.');
    (parts.next().unwrap_or("0"), parts.next().unwrap_or("0"))
}

/// The directory with every control-plane binary.
#[derive(Debug, Clone)]
pub struct ControlPlaneBinaries {
    /// Holds `etcd`, `kube-apiserver`, `kube-controller-manager`, `kube-scheduler`
    /// and `kwok`.
    pub bin: PathBuf,
}

/// Builds every control-plane binary whose stamp is not current. `go_dir` is `xtask/go`.
pub fn ensure(go_dir: &Path) -> anyhow::Result<(ControlPlaneBinaries, Outcome)> {
    let (bin, outcome) = ensure_set(go_dir, CONTROL_PLANE)?;
    Ok((ControlPlaneBinaries { bin }, outcome))
}

/// Builds every binary of `set` whose stamp is not current, and returns the directory
/// that holds them.
pub fn ensure_set(go_dir: &Path, set: GoToolSet) -> anyhow::Result<(PathBuf, Outcome)> {
    let go = process::which("go").context(
        "`go` is not on PATH: the Kubernetes control plane and promtool are built from Go \
         modules; install Go 1.26 or newer, then rerun `cargo xtask tools`",
    )?;
    // Asked in a module directory, so a toolchain line there (GOTOOLCHAIN) is the Go
    // that the key records.
    let go_version = process::capture(
        Command::new(&go)
            .args(["env", "GOVERSION", "GOFLAGS", "GOARCH", "GOAMD64"])
            .current_dir(go_dir.join(set.modules[0])),
    )?;
    let mut hasher = Sha256::new();
    hasher.update(go_version.trim());
    for flags in set.modules.iter().filter_map(|module| ldflags(module)) {
        hasher.update(flags);
    }
    for tags in set.modules.iter().filter_map(|module| build_tags(module)) {
        hasher.update(tags);
    }
    for module in set.modules {
        for file in ["go.mod", "go.sum", "main.go"] {
            if let Ok(content) = fs::read(go_dir.join(module).join(file)) {
                hasher.update(module);
                hasher.update(file);
                hasher.update(content);
            }
        }
    }
    let key = hex::encode(&hasher.finalize()[..8]);
    let bin = cache_dir()?
        .join(set.directory)
        .join(format!("{}-{key}", set.version));
    fs::create_dir_all(&bin).with_context(|| format!("cannot create {}", bin.display()))?;
    // One per run, so that a concurrent run never removes the cache another builds in.
    let go_cache = bin.with_file_name(format!("go-build-{}", std::process::id()));
    let built = build_missing(&go, go_dir, set.binaries, &bin, &key, &go_cache);
    // Removed whatever happened: a failed build starts over rather than leave gigabytes.
    if go_cache.exists() {
        fs::remove_dir_all(&go_cache)
            .with_context(|| format!("cannot remove {}", go_cache.display()))?;
    }
    Ok((bin, built?))
}

/// The `-ldflags` of the binaries built in `module`: Kubernetes' stamp the version,
/// promtool's its version too, etcd and KWOK get none.
fn ldflags(module: &str) -> Option<String> {
    match module {
        "kubernetes" => Some(kubernetes_ldflags()),
        "prometheus" => Some(format!(
            "-s -w -X 'github.com/prometheus/common/version.Version={}'",
            PROMETHEUS_VERSION.trim_start_matches('v')
        )),
        "statsd-exporter" => Some(format!(
            "-s -w -X 'github.com/prometheus/common/version.Version={}'",
            STATSD_EXPORTER_VERSION.trim_start_matches('v')
        )),
        _ => None,
    }
}

/// The build tags of the binaries built in `module`. promtool leaves out every service
/// discovery plugin (Prometheus' own `remove_all_sd` tag): it only checks and
/// unit-tests rules here, and the plugins' cloud SDKs are a fifth of its packages and
/// most of its cold build (137.6 s with the tag, 2 cores, empty build cache).
fn build_tags(module: &str) -> Option<&'static str> {
    match module {
        "prometheus" => Some("remove_all_sd"),
        _ => None,
    }
}

/// Builds every binary whose stamp in `bin` is not `key`, with the build cache
/// `go_cache`.
fn build_missing(
    go: &Path,
    go_dir: &Path,
    binaries: &[GoBinary],
    bin: &Path,
    key: &str,
    go_cache: &Path,
) -> anyhow::Result<Outcome> {
    let mut outcome = Outcome::AlreadyPresent;
    for &binary in binaries {
        let target = bin.join(binary.name);
        let stamp = bin.join(format!("{}.stamp", binary.name));
        if fs::read_to_string(&stamp).is_ok_and(|found| found == key)
            && process::is_executable(&target)
        {
            continue;
        }
        let started = Instant::now();
        // Built beside the target and renamed into place, so that a concurrent run, or
        // a process running the old binary, never sees a half-written file.
        let partial = bin.join(format!("{}.partial-{}", binary.name, std::process::id()));
        build(go, go_dir, binary, &partial, go_cache)?;
        fs::rename(&partial, &target).with_context(|| {
            format!("cannot move {} to {}", partial.display(), target.display())
        })?;
        fs::write(&stamp, key).with_context(|| format!("cannot write {}", stamp.display()))?;
        eprintln!(
            "      built {} ({:.1}s)",
            binary.name,
            started.elapsed().as_secs_f64()
        );
        outcome = Outcome::Installed;
    }
    Ok(outcome)
}

/// `go build` of one binary, static (`CGO_ENABLED=0`), from the committed `go.sum`
/// only (`-mod=readonly`), with a build cache of its own (`go_cache`), which the five
/// builds share and [`ensure`] removes once they are done: it would only serve the next
/// pin change, and it is the largest thing provisioning leaves (about 4.4 GB of compiled
/// Kubernetes packages), which a CI machine's disk may not spare. A module the proxy does not
/// serve is named, with the command that shows the download.
fn build(
    go: &Path,
    go_dir: &Path,
    binary: GoBinary,
    target: &Path,
    go_cache: &Path,
) -> anyhow::Result<()> {
    let module_dir = go_dir.join(binary.module);
    let mut command = Command::new(go);
    command
        .args(["build", "-mod=readonly", "-trimpath", "-o"])
        .arg(target)
        .current_dir(&module_dir)
        .env("CGO_ENABLED", "0")
        .env("GOCACHE", go_cache);
    if let Some(flags) = ldflags(binary.module) {
        command.arg(format!("-ldflags={flags}"));
    }
    let tags = build_tags(binary.module).map(|tags| format!("-tags={tags}"));
    command.args(&tags).arg("-v").arg(binary.package);
    let packages = package_count(go, &module_dir, binary.package, tags.as_deref(), go_cache);
    let (status, stderr) = run_with_progress(&mut command, binary.name, packages)?;
    if status.success() {
        return Ok(());
    }
    let unserved: Vec<&str> = stderr
        .lines()
        .filter(|line| {
            [
                "410 Gone",
                "404 Not Found",
                "403 Forbidden",
                "unknown revision",
            ]
            .iter()
            .any(|sign| line.contains(sign))
        })
        .collect();
    if !unserved.is_empty() {
        bail!(
            "building {} failed: the Go module proxy does not serve a pinned module:\n{}\n\
             See the whole download with: (cd {} && go mod download -x)",
            binary.name,
            unserved.join("\n"),
            module_dir.display()
        );
    }
    let tail: Vec<&str> = stderr
        .lines()
        .filter(|line| !is_package_line(line))
        .rev()
        .take(30)
        .collect();
    bail!(
        "building {} failed ({}):\n{}",
        binary.name,
        status,
        tail.into_iter().rev().collect::<Vec<_>>().join("\n")
    )
}

/// `$XDG_CACHE_HOME/strata`, or `~/.cache/strata`.
fn cache_dir() -> anyhow::Result<PathBuf> {
    let base = match std::env::var_os("XDG_CACHE_HOME").filter(|value| !value.is_empty()) {
        Some(cache) => PathBuf::from(cache),
        None => PathBuf::from(std::env::var_os("HOME").context("HOME is not set")?).join(".cache"),
    };
    Ok(base.join("strata"))
}

/// How often a Go build reports how far it is.
const PROGRESS_PERIOD: Duration = Duration::from_secs(30);

/// How many packages `package` imports, itself and the standard library's included
/// (`go list -deps`): what a build with an empty cache compiles. `None` when Go cannot
/// tell, and the progress lines then give the count alone.
fn package_count(
    go: &Path,
    module_dir: &Path,
    package: &str,
    tags: Option<&str>,
    go_cache: &Path,
) -> Option<usize> {
    let output = Command::new(go)
        .args(["list", "-mod=readonly", "-deps"])
        .args(tags)
        .arg(package)
        .current_dir(module_dir)
        .env("CGO_ENABLED", "0")
        .env("GOCACHE", go_cache)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).lines().count())
}

/// Whether a line of `go build -v` names a package it compiled rather than an error.
fn is_package_line(line: &str) -> bool {
    !line.is_empty()
        && line
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '/' | '-' | '_' | '~' | '+'))
}

/// Runs the `go build -v` of `command` and every [`PROGRESS_PERIOD`] prints how many
/// packages it compiled, of `packages` when known: kube-apiserver alone compiles for
/// minutes, and a build that prints nothing for that long looks hung. Returns how it
/// ended and what it printed.
fn run_with_progress(
    command: &mut Command,
    name: &str,
    packages: Option<usize>,
) -> anyhow::Result<(ExitStatus, String)> {
    let started = Instant::now();
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot run go build for {name}"))?;
    let stderr = child
        .stderr
        .take()
        .context("go build's standard error is not piped")?;
    let compiled = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        let reader = scope.spawn(|| {
            let mut printed = String::new();
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if is_package_line(&line) {
                    compiled.fetch_add(1, Ordering::Relaxed);
                }
                printed.push_str(&line);
                printed.push('\n');
            }
            printed
        });
        let mut reported = Instant::now();
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break Ok(status),
                Ok(None) => {}
                Err(error) => break Err(error),
            }
            if reported.elapsed() >= PROGRESS_PERIOD {
                reported = Instant::now();
                let done = compiled.load(Ordering::Relaxed);
                let of = packages
                    .map_or_else(String::new, |total| format!(" of the {total} it imports"));
                eprintln!(
                    "      building {name}: {done} packages compiled{of} ({})",
                    process::minutes(started.elapsed())
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        };
        let printed = reader.join().unwrap_or_default();
        let status = status.with_context(|| format!("waiting for go build of {name}"))?;
        Ok((status, printed))
    })
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case::a_module_package("k8s.io/apiserver/pkg/server", true)]
    #[case::a_standard_library_package("net/http", true)]
    #[case::a_versioned_module_package("go.etcd.io/etcd/server/v3/embed", true)]
    #[case::a_compile_error("pkg/foo/bar.go:12:3: undefined: Baz", false)]
    #[case::a_download("go: downloading k8s.io/api v0.37.2", false)]
    #[case::an_empty_line("", false)]
    fn go_build_v_lines_that_count_as_compiled_packages(#[case] line: &str, #[case] package: bool) {
        assert_eq!(is_package_line(line), package);
    }

    #[test]
    fn the_version_is_stamped_into_both_version_packages() {
        let flags = kubernetes_ldflags();
        for expected in [
            "-X 'k8s.io/component-base/version.gitVersion=v1.37.2'",
            "-X 'k8s.io/component-base/version.gitMajor=1'",
            "-X 'k8s.io/component-base/version.gitMinor=37'",
            "-X 'k8s.io/client-go/pkg/version.gitVersion=v1.37.2'",
        ] {
            assert!(flags.contains(expected), "{flags}");
        }
    }
}

//! The helper's side of [`crate::launch`]: the namespace, mount and credential calls
//! that turn the helper into a container's process, in the order `docs/pod-runner.md`
//! gives and that the experiments verified. Each call is named in the error, so a
//! container that cannot start says which step failed and on which path.

use std::convert::Infallible;
use std::ffi::{CString, OsStr};
use std::fs::{self, File};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::symlink;
use std::path::{Component, Path, PathBuf};

use nix::mount::{MntFlags, MsFlags, mount, umount2};
use nix::sched::{CloneFlags, setns};
use nix::sys::prctl;
use nix::sys::signal::{SigSet, Signal};
use nix::unistd::{
    Gid, Uid, chdir, execve, pivot_root, setgroups, sethostname, setresgid, setresuid,
};

use crate::launch::{Command, Credentials, Enter, Launch};

/// The size bound of the container's writable layer and of `/dev/shm`.
const SCRATCH_OPTIONS: &str = "size=256m,mode=0755";
/// The host devices a container sees in its `/dev`, as container runtimes give them.
const DEVICES: [&str; 6] = ["null", "zero", "full", "random", "urandom", "tty"];

/// A step of the setup that failed.
#[derive(Debug, thiserror::Error)]
#[error("{step}: {reason}")]
pub struct StepError {
    /// The call and its arguments.
    pub step: String,
    /// The operating system's answer.
    pub reason: String,
    /// The command was not found: the helper exits 127 instead of 125.
    pub not_found: bool,
}

pub(crate) fn step<T, E: std::fmt::Display>(
    result: Result<T, E>,
    describe: impl FnOnce() -> String,
) -> Result<T, StepError> {
    result.map_err(|error| StepError {
        step: describe(),
        reason: error.to_string(),
        not_found: false,
    })
}

/// Becomes the container, as PID 1 of the namespaces the shim made
/// ([`crate::shim::launch`]): builds the root, drops to the container's user and
/// `exec`s its command. Returns only on failure.
pub fn launch_init(spec: &Launch) -> Result<Infallible, StepError> {
    clear_signal_mask()?;
    step(
        mount(
            None::<&str>,
            "/",
            None::<&str>,
            MsFlags::MS_REC | MsFlags::MS_PRIVATE,
            None::<&str>,
        ),
        || "make / private, so that nothing propagates to the host".to_owned(),
    )?;
    let root = overlay_root(&spec.scratch)?;
    let proc = root.join("proc");
    step(
        mount(
            Some("proc"),
            &proc,
            Some("proc"),
            MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
            None::<&str>,
        ),
        || format!("mount the PID namespace's proc on {}", proc.display()),
    )?;
    bind(Path::new("/sys"), &root.join("sys"), false)?;
    device_directory(&root, &spec.termination_log)?;
    for mount in &spec.binds {
        let target = step(inside(&root, &mount.target), || {
            format!("resolve {} inside the container", mount.target.display())
        })?;
        bind(&mount.source, &target, mount.read_only)?;
    }
    step(chdir(&root), || format!("chdir({})", root.display()))?;
    step(pivot_root(".", "."), || "pivot_root(., .)".to_owned())?;
    step(umount2(".", MntFlags::MNT_DETACH), || {
        "detach the host's root".to_owned()
    })?;
    step(chdir("/"), || "chdir(/)".to_owned())?;
    if spec.read_only_root {
        step(
            mount(
                None::<&str>,
                "/",
                None::<&str>,
                MsFlags::MS_REMOUNT | MsFlags::MS_BIND | MsFlags::MS_RDONLY,
                None::<&str>,
            ),
            || "remount / read-only (readOnlyRootFilesystem)".to_owned(),
        )?;
    }
    step(sethostname(&spec.hostname), || {
        format!("sethostname({})", spec.hostname)
    })?;
    become_user(&spec.user, spec.no_new_privileges)?;
    exec(&spec.command)
}

/// Joins a running container's mount, network and UTS namespaces (the shim joined its
/// PID namespace, [`crate::shim::enter`]) and runs a command there as its user.
pub fn enter_inside(spec: &Enter) -> Result<Infallible, StepError> {
    clear_signal_mask()?;
    let namespaces = [
        ("mnt", CloneFlags::CLONE_NEWNS),
        ("net", CloneFlags::CLONE_NEWNET),
        ("uts", CloneFlags::CLONE_NEWUTS),
    ]
    .map(|(name, flag)| {
        let path = PathBuf::from(format!("/proc/{}/ns/{name}", spec.pid));
        step(File::open(&path), || format!("open {}", path.display()))
            .map(|file| (path, file, flag))
    });
    for namespace in namespaces {
        let (path, file, flag) = namespace?;
        step(setns(&file, flag), || format!("setns({})", path.display()))?;
    }
    step(chdir("/"), || "chdir(/)".to_owned())?;
    become_user(&spec.user, spec.no_new_privileges)?;
    exec(&spec.command)
}

/// Unblocks every signal: the shim blocked the stop signals, a spawned child inherits
/// the mask, and `execve` keeps it, so a container's shell would never see its SIGTERM
/// even with a `trap` (dash clears its mask itself; bash does not).
fn clear_signal_mask() -> Result<(), StepError> {
    step(SigSet::empty().thread_set_mask(), || {
        "clear the signal mask the shim set".to_owned()
    })
}

/// Gives SIGPIPE back its default action for the command. Rust's runtime ignores it in
/// the helper, and `execve` keeps an ignored signal ignored, so `yes | head -1` would
/// never end. A signal with a handler is reset to its default by `execve`, so a
/// handler (signal-hook's safe flag) is installed just before it.
fn default_sigpipe_after_exec() -> Result<(), StepError> {
    let unused = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    step(
        signal_hook::flag::register(signal_hook::consts::SIGPIPE, unused),
        || "handle SIGPIPE, so that execve resets it to its default".to_owned(),
    )
    .map(drop)
}

/// Mounts the scratch tmpfs and an overlay of the host's `/` on it; returns the root.
/// The overlay's upper and work directories must not lie on the root's own file system,
/// hence the tmpfs; image directories are bound in later, since overlay layers cannot
/// overlap.
fn overlay_root(scratch: &Path) -> Result<PathBuf, StepError> {
    step(
        mount(
            Some("tmpfs"),
            scratch,
            Some("tmpfs"),
            MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
            Some(SCRATCH_OPTIONS),
        ),
        || format!("mount a tmpfs on {}", scratch.display()),
    )?;
    let [upper, work, root] = ["upper", "work", "root"].map(|name| scratch.join(name));
    for dir in [&upper, &work, &root] {
        step(fs::create_dir(dir), || format!("mkdir {}", dir.display()))?;
    }
    let options = format!(
        "lowerdir=/,upperdir={},workdir={}",
        upper.display(),
        work.display()
    );
    step(
        mount(
            Some("overlay"),
            &root,
            Some("overlay"),
            MsFlags::empty(),
            Some(options.as_str()),
        ),
        || format!("mount an overlay of / on {} ({options})", root.display()),
    )?;
    Ok(root)
}

/// `/dev` as container runtimes build it: a tmpfs with the harmless host devices, the
/// standard links, `pts`, its own `shm`, and `termination-log` bound to a host file.
fn device_directory(root: &Path, termination_log: &Path) -> Result<(), StepError> {
    let dev = root.join("dev");
    step(
        mount(
            Some("tmpfs"),
            &dev,
            Some("tmpfs"),
            MsFlags::MS_NOSUID,
            Some("mode=0755"),
        ),
        || format!("mount a tmpfs on {}", dev.display()),
    )?;
    for device in DEVICES {
        bind(&Path::new("/dev").join(device), &dev.join(device), false)?;
    }
    for (link, target) in [
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
        ("ptmx", "pts/ptmx"),
    ] {
        let path = dev.join(link);
        step(symlink(target, &path), || {
            format!("symlink {}", path.display())
        })?;
    }
    bind(Path::new("/dev/pts"), &dev.join("pts"), false)?;
    let shm = dev.join("shm");
    step(fs::create_dir(&shm), || format!("mkdir {}", shm.display()))?;
    step(
        mount(
            Some("tmpfs"),
            &shm,
            Some("tmpfs"),
            MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
            Some("mode=1777,size=64m"),
        ),
        || format!("mount a tmpfs on {}", shm.display()),
    )?;
    bind(termination_log, &dev.join("termination-log"), false)
}

/// Binds `source` on `target`, creating the target (a directory, or an empty file for a
/// file source) first; a read-only bind needs a second, remounting call.
fn bind(source: &Path, target: &Path, read_only: bool) -> Result<(), StepError> {
    let is_dir = step(fs::metadata(source), || {
        format!("stat {}", source.display())
    })?
    .is_dir();
    if is_dir {
        step(fs::create_dir_all(target), || {
            format!("mkdir -p {}", target.display())
        })?;
    } else if fs::symlink_metadata(target).is_err() {
        if let Some(parent) = target.parent() {
            step(fs::create_dir_all(parent), || {
                format!("mkdir -p {}", parent.display())
            })?;
        }
        step(File::create(target), || {
            format!("create {}", target.display())
        })?;
    }
    let describe = || format!("bind {} on {}", source.display(), target.display());
    step(
        mount(
            Some(source),
            target,
            None::<&str>,
            MsFlags::MS_BIND | MsFlags::MS_REC,
            None::<&str>,
        ),
        describe,
    )?;
    if read_only {
        step(
            mount(
                None::<&str>,
                target,
                None::<&str>,
                MsFlags::MS_REMOUNT | MsFlags::MS_BIND | MsFlags::MS_RDONLY,
                None::<&str>,
            ),
            || format!("remount {} read-only", target.display()),
        )?;
    }
    Ok(())
}

/// How many symbolic links [`inside`] follows before it gives up, as the kernel's
/// `MAXSYMLINKS`.
const MAX_SYMLINKS: usize = 40;

/// `path`, an absolute path inside the container, under the new root, with every
/// symbolic link on the way resolved inside that root, as container runtimes resolve a
/// mount's destination (runc's `SecureJoin`). A link such as Debian's `/var/run ->
/// /run` then leads to the container's `/run`, never the host's, and `..` never climbs
/// above the root. More than [`MAX_SYMLINKS`] links is `ELOOP`, never a path that
/// still holds a link the kernel would follow on the host.
fn inside(root: &Path, path: &Path) -> Result<PathBuf, nix::errno::Errno> {
    let mut pending: Vec<std::ffi::OsString> = path
        .components()
        .rev()
        .filter_map(|component| match component {
            Component::Normal(name) => Some(name.to_owned()),
            Component::ParentDir => Some("..".into()),
            _ => None,
        })
        .collect();
    let mut resolved: Vec<std::ffi::OsString> = Vec::new();
    let mut links = 0;
    while let Some(name) = pending.pop() {
        if name == ".." {
            resolved.pop();
            continue;
        }
        let candidate = resolved
            .iter()
            .fold(root.to_owned(), |path, part| path.join(part))
            .join(&name);
        match fs::read_link(&candidate) {
            Ok(_) if links >= MAX_SYMLINKS => return Err(nix::errno::Errno::ELOOP),
            Ok(target) => {
                links += 1;
                if target.is_absolute() {
                    resolved.clear();
                }
                pending.extend(
                    target
                        .components()
                        .rev()
                        .filter_map(|component| match component {
                            Component::Normal(part) => Some(part.to_owned()),
                            Component::ParentDir => Some("..".into()),
                            _ => None,
                        }),
                );
            }
            _ => resolved.push(name),
        }
    }
    Ok(resolved
        .iter()
        .fold(root.to_owned(), |path, part| path.join(part)))
}

/// Supplementary groups, then the group, then the user (`setgroups` needs the
/// capability the user change drops), then no-new-privileges.
fn become_user(user: &Credentials, no_new_privileges: bool) -> Result<(), StepError> {
    let groups: Vec<Gid> = user.groups.iter().copied().map(Gid::from_raw).collect();
    step(setgroups(&groups), || {
        format!("setgroups({:?})", user.groups)
    })?;
    let gid = Gid::from_raw(user.gid);
    step(setresgid(gid, gid, gid), || {
        format!("setresgid({})", user.gid)
    })?;
    let uid = Uid::from_raw(user.uid);
    step(setresuid(uid, uid, uid), || {
        format!("setresuid({})", user.uid)
    })?;
    if no_new_privileges {
        step(prctl::set_no_new_privs(), || {
            "prctl(PR_SET_NO_NEW_PRIVS)".to_owned()
        })?;
    }
    // After the user change, which clears it: a runner that dies, even by SIGKILL or
    // Ctrl-C, takes its containers with it.
    step(prctl::set_pdeathsig(Signal::SIGKILL), || {
        "prctl(PR_SET_PDEATHSIG)".to_owned()
    })
}

/// `chdir` to the working directory and `execve` the command, looking a bare name up on
/// the container's own `PATH`.
fn exec(command: &Command) -> Result<Infallible, StepError> {
    default_sigpipe_after_exec()?;
    step(chdir(&command.working_dir), || {
        format!("chdir({}) (workingDir)", command.working_dir.display())
    })?;
    let Some(first) = command.argv.first() else {
        return Err(StepError {
            step: "exec".to_owned(),
            reason: "the container has neither command nor args".to_owned(),
            not_found: true,
        });
    };
    let program = resolve(first, &command.env).ok_or_else(|| StepError {
        step: format!("exec {first}"),
        reason: "not found on the container's PATH".to_owned(),
        not_found: true,
    })?;
    let argv = c_strings(command.argv.iter().map(String::as_bytes))?;
    let env = c_strings(
        command
            .env
            .iter()
            .map(|(name, value)| format!("{name}={value}").into_bytes()),
    )?;
    let path = c_strings([program.as_os_str().as_bytes()])?;
    let error = execve(&path[0], &argv, &env).unwrap_err();
    Err(StepError {
        step: format!("execve({})", program.display()),
        reason: error.to_string(),
        not_found: error == nix::errno::Errno::ENOENT,
    })
}

/// The file a command name runs: itself if it holds a `/`, else the first executable
/// file of that name on `PATH`.
fn resolve(name: &str, env: &[(String, String)]) -> Option<PathBuf> {
    if name.contains('/') {
        return Some(PathBuf::from(name));
    }
    let path = env
        .iter()
        .rev()
        .find(|(key, _)| key == "PATH")
        .map_or("/usr/local/bin:/usr/bin:/bin", |(_, value)| value.as_str());
    path.split(':')
        .map(|dir| Path::new(dir).join(name))
        .find(|candidate| candidate.is_file())
}

fn c_strings<B: AsRef<[u8]>>(
    items: impl IntoIterator<Item = B>,
) -> Result<Vec<CString>, StepError> {
    items
        .into_iter()
        .map(|item| {
            CString::new(item.as_ref()).map_err(|_| StepError {
                step: format!("exec argument {:?}", OsStr::from_bytes(item.as_ref())),
                reason: "holds a NUL byte".to_owned(),
                not_found: false,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use rstest::rstest;

    use super::inside;

    #[rstest]
    #[case::a_plain_path("/strata/config", "strata/config")]
    #[case::an_absolute_link_stays_in_the_root(
        "/var/run/secrets/kubernetes.io/serviceaccount",
        "run/secrets/kubernetes.io/serviceaccount"
    )]
    #[case::a_relative_link("/var/lock/x", "run/lock/x")]
    #[case::dot_dot_stops_at_the_root("/../../etc/hosts", "etc/hosts")]
    #[case::a_link_that_climbs_stops_at_the_root("/escape/etc", "etc")]
    fn a_mount_destination_resolves_inside_the_root(#[case] path: &str, #[case] expected: &str) {
        let root = tempfile::tempdir().expect("a root");
        std::fs::create_dir_all(root.path().join("var")).expect("var");
        symlink("/run", root.path().join("var/run")).expect("/var/run");
        symlink("../run/lock", root.path().join("var/lock")).expect("/var/lock");
        symlink("../../..", root.path().join("escape")).expect("/escape");
        assert_eq!(
            inside(root.path(), std::path::Path::new(path)),
            Ok(root.path().join(expected))
        );
    }

    #[test]
    fn a_loop_of_links_is_refused_not_followed_on_the_host() {
        let root = tempfile::tempdir().expect("a root");
        symlink("/b", root.path().join("a")).expect("/a");
        symlink("/a", root.path().join("b")).expect("/b");
        assert_eq!(
            inside(root.path(), std::path::Path::new("/a/etc")),
            Err(nix::errno::Errno::ELOOP)
        );
    }
}

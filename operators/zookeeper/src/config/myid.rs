//! The init-container script that writes ZooKeeper's `myid`.
//!
//! ZooKeeper reads its server id from `<dataDir>/myid`. The official image's entrypoint would
//! only write one from `ZOO_MY_ID`, which a StatefulSet cannot vary per pod, so an init
//! container (same image, bash is present) derives it from the pod name:
//! `myid = ordinal + myidOffset`, where the ordinal is the suffix after the last `-` of
//! `HOSTNAME` (`<statefulset>-<ordinal>`).
//!
//! Decisions:
//! - **Idempotent**: a `myid` that already holds the expected id is left untouched, so pod
//!   restarts cost nothing.
//! - **Fail loudly on mismatch**: a `myid` holding another id means this volume belongs to a
//!   different server identity (for example after `myidOffset` was changed). Rewriting it
//!   would let the pod join the quorum with another server's epoch files and history, which
//!   can break ZooKeeper's consistency guarantees. The init container exits non-zero with a
//!   message naming both ids, the pod does not start, and the cluster reports it as failing;
//!   the user either restores the offset or deletes the PVC deliberately.
//! - **Atomic**: the id is written to a temporary file and renamed, so a crash never leaves a
//!   truncated `myid` behind.

/// Returns the bash script that writes `myid = ordinal + myid_offset` into `data_dir`.
pub fn myid_script(myid_offset: u32, data_dir: &str) -> String {
    format!(
        r#"set -euo pipefail
data_dir={data_dir}
myid_offset={myid_offset}
ordinal="${{HOSTNAME##*-}}"
if [[ ! "$ordinal" =~ ^[0-9]+$ ]]; then
  echo "cannot derive a StatefulSet ordinal from HOSTNAME='$HOSTNAME'" >&2
  exit 1
fi
myid=$((10#$ordinal + myid_offset))
mkdir -p "$data_dir"
if [[ -e "$data_dir/myid" ]]; then
  existing="$(tr -d '[:space:]' < "$data_dir/myid")"
  if [[ "$existing" == "$myid" ]]; then
    echo "$data_dir/myid already holds $myid"
    exit 0
  fi
  echo "refusing to overwrite $data_dir/myid: it holds '$existing' but pod $HOSTNAME is server $myid (ordinal $ordinal + myidOffset $myid_offset); restore the previous myidOffset or delete this pod's volume" >&2
  exit 1
fi
printf '%s\n' "$myid" > "$data_dir/myid.tmp"
mv -f "$data_dir/myid.tmp" "$data_dir/myid"
echo "wrote $myid to $data_dir/myid"
"#,
        data_dir = shell_quote(data_dir),
    )
}

/// Quotes a value for bash so that no character in it is interpreted.
fn shell_quote(value: &str) -> String {
    format!("'{}'", value.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::path::Path;
    use std::process::{Command, Output};

    use pretty_assertions::assert_eq;
    use rstest::rstest;

    use super::*;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    fn run(script: &str, hostname: &str) -> std::io::Result<Output> {
        Command::new("bash")
            .arg("-c")
            .arg(script)
            .env("HOSTNAME", hostname)
            .output()
    }

    fn read_myid(dir: &Path) -> std::io::Result<String> {
        fs::read_to_string(dir.join("myid"))
    }

    #[rstest]
    #[case::first_pod_offset_one("simple-zk-server-default-0", 1, "1\n")]
    #[case::third_pod_offset_ten("simple-zk-server-secondary-2", 10, "12\n")]
    #[case::double_digit_ordinal("zk-11", 1, "12\n")]
    #[case::highest_id("zk-4", 251, "255\n")]
    fn writes_ordinal_plus_offset(
        #[case] hostname: &str,
        #[case] offset: u32,
        #[case] expected: &str,
    ) -> TestResult {
        let dir = tempfile::tempdir()?;
        let output = run(
            &myid_script(offset, &dir.path().to_string_lossy()),
            hostname,
        )?;
        assert!(output.status.success(), "{output:?}");
        assert_eq!(read_myid(dir.path())?, expected);
        assert!(!dir.path().join("myid.tmp").exists());
        Ok(())
    }

    #[test]
    fn creates_a_missing_data_dir_even_with_quotes_in_its_name() -> TestResult {
        let dir = tempfile::tempdir()?;
        let data_dir = dir.path().join("it's a $dir").join("data");
        let output = run(&myid_script(3, &data_dir.to_string_lossy()), "zk-1")?;
        assert!(output.status.success(), "{output:?}");
        assert_eq!(read_myid(&data_dir)?, "4\n");
        Ok(())
    }

    #[test]
    fn second_run_is_a_no_op() -> TestResult {
        let dir = tempfile::tempdir()?;
        let script = myid_script(1, &dir.path().to_string_lossy());
        // A matching id written by someone else, without a trailing newline, must survive
        // byte for byte: the script only ever writes a file that is missing.
        fs::write(dir.path().join("myid"), "3")?;
        for _ in 0..2 {
            let output = run(&script, "zk-2")?;
            assert!(output.status.success(), "{output:?}");
            assert_eq!(read_myid(dir.path())?, "3");
        }
        Ok(())
    }

    #[rstest]
    #[case::other_offset("5\n")]
    #[case::empty_file("")]
    fn mismatching_myid_fails_and_is_kept(#[case] existing: &str) -> TestResult {
        let dir = tempfile::tempdir()?;
        fs::write(dir.path().join("myid"), existing)?;
        let output = run(&myid_script(1, &dir.path().to_string_lossy()), "zk-0")?;
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.contains(&format!(
                "holds '{}' but pod zk-0 is server 1",
                existing.trim()
            )),
            "{stderr}"
        );
        assert_eq!(read_myid(dir.path())?, existing);
        Ok(())
    }

    #[rstest]
    #[case::no_dash("zookeeper")]
    #[case::non_numeric_suffix("zk-server-default")]
    #[case::empty_suffix("zk-")]
    fn hostname_without_ordinal_fails(#[case] hostname: &str) -> TestResult {
        let dir = tempfile::tempdir()?;
        let output = run(&myid_script(1, &dir.path().to_string_lossy()), hostname)?;
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.contains("cannot derive a StatefulSet ordinal"),
            "{stderr}"
        );
        assert!(!dir.path().join("myid").exists());
        Ok(())
    }
}

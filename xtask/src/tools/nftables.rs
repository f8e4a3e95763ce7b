//! nftables' `nft`, the Debian package: the pod runner writes each pod's rules for
//! Services with a virtual address with it (`strata_pod_runner::service_rules`), as
//! kube-proxy's nftables mode does. Installed with apt when missing and this is root.

use std::path::{Path, PathBuf};

use anyhow::bail;

use super::{Outcome, process};

/// Where the Debian package puts it; the runner finds it on root's `PATH`.
const NFT: &str = "/usr/sbin/nft";

/// `nft`, installed when missing.
pub fn ensure() -> anyhow::Result<(PathBuf, Outcome)> {
    if process::is_executable(Path::new(NFT)) {
        return Ok((PathBuf::from(NFT), Outcome::AlreadyPresent));
    }
    if !process::is_root() {
        bail!(
            "nft is missing and this is not root: run `apt-get install nftables` as root, \
             then rerun"
        );
    }
    process::apt_install("nftables")?;
    if !process::is_executable(Path::new(NFT)) {
        bail!("apt-get installed nftables, but {NFT} is missing");
    }
    Ok((PathBuf::from(NFT), Outcome::Installed))
}

//! A real OpenID Connect provider for the login tests: NAV's `mock-oauth2-server`
//! 6.0.2 from Maven Central (`xtask/maven/mock-oauth2-server/pom.xml`), a thin jar
//! whose runtime class path is copied into `target/tools/mock-oauth2-server/lib`.
//! `strata_testing::oidc` starts it on a loopback address with the Java of the other
//! tools. A stamp records the pom; the main class's presence in the jars is checked
//! before it is written.

use std::{
    fs,
    path::{Path, PathBuf},
};

use anyhow::{Context, bail};

use super::{Outcome, image_dir};

/// The pom that pins the jars.
const POM: &str = include_str!("../../maven/mock-oauth2-server/pom.xml");
/// The jar with the standalone server's main class.
const SERVER_JAR: &str = "mock-oauth2-server-6.0.2.jar";

/// Copies the provider's class path unless its stamp is current; returns the `lib`
/// directory (for `java -cp '<lib>/*'`).
pub fn ensure(workspace: &Path, tools_dir: &Path) -> anyhow::Result<(PathBuf, Outcome)> {
    let dir = tools_dir.join("mock-oauth2-server");
    let lib = dir.join("lib");
    let stamp = dir.join("strata-pom.xml");
    if fs::read_to_string(&stamp).is_ok_and(|found| found == POM) && lib.join(SERVER_JAR).exists() {
        return Ok((lib, Outcome::AlreadyPresent));
    }
    if dir.exists() {
        fs::remove_dir_all(&dir).with_context(|| format!("cannot remove {}", dir.display()))?;
    }
    let mvn = image_dir::maven()?;
    let pom = workspace
        .join("xtask")
        .join("maven")
        .join("mock-oauth2-server")
        .join("pom.xml");
    image_dir::copy_dependencies(&mvn, &pom, &lib)?;
    if !lib.join(SERVER_JAR).exists() {
        bail!("mvn copied no {SERVER_JAR} into {}", lib.display());
    }
    fs::write(&stamp, POM).with_context(|| format!("cannot write {}", stamp.display()))?;
    Ok((lib, Outcome::Installed))
}

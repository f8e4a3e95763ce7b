//! A local stand-in for the `docker.io/trinodb/trino:483` image, for the pod runner's
//! Trino servers: a directory laid out as the image is (`usr/lib/trino` with `lib/`,
//! `plugin/<name>/` and `bin/`), built from Maven Central.
//!
//! - `lib/`: the runtime class path of `io.trino:trino-main:483`, versions pinned by
//!   Trino's own BOM (`xtask/maven/trino/pom.xml`);
//! - `plugin/<name>/`: each plugin's runtime class path ([`PLUGINS`];
//!   `xtask/maven/trino/plugin-pom.xml`). The jars on Central lack the
//!   `META-INF/services/io.trino.spi.Plugin` entry the release's plugin folders carry,
//!   so each folder gets a small `strata-plugin-service.jar` naming the plugin class;
//! - `bin/launcher`: **the real launcher** of the release, `io.airlift:launcher:318`
//!   (the version airbase 395, Trino 483's parent, pins), with the
//!   `bin/launcher.properties` the release's build writes;
//! - `lib/strata-trino-server-main.jar`: the one stand-in, the server's main class
//!   `io.trino.server.TrinoServer` (`trino_image/TrinoServer.java`), since
//!   `trino-server-main` is not on Central. It is compiled here with Java 25.
//!
//! Not served on Central, so not in the image: the `postgresql`, `blackhole`, `jmx` and
//! `mysql` plugins (`io.trino:trino-postgresql:483`, ...). The manifest gives the
//! image's user (`trino`, 1000:1000) and puts Temurin 25 first on `PATH`, as the image's
//! JDK is. A stamp records the poms, the stand-in, the plugin list and the manifest; a
//! fresh build is proved by the launcher naming its version.

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context, bail};

use super::{Outcome, image_dir, process};

/// The Trino release the image stands in for.
pub const VERSION: &str = "483";
/// The Java feature release Trino 483 needs.
const JAVA_FEATURE: &str = "25";
/// Where the machine keeps the Java 25 JDK.
pub const JAVA_HOME: &str = "/usr/lib/jvm/temurin-25-jdk-amd64";
/// The pom of the server's jars.
const POM: &str = include_str!("../../maven/trino/pom.xml");
/// The pom of one plugin folder, with `PLUGIN_ARTIFACT` to replace.
const PLUGIN_POM: &str = include_str!("../../maven/trino/plugin-pom.xml");
/// The stand-in main class.
const MAIN_CLASS_SOURCE: &str = include_str!("trino_image/TrinoServer.java");
/// The launcher the release ships: its per-platform binaries, and its wrapper script.
const LAUNCHER_ARTIFACTS: [&str; 2] = [
    "io.airlift:launcher:318:tar.gz:bin",
    "io.airlift:launcher:318:tar.gz:properties",
];
/// What the release's build writes into `bin/launcher.properties`.
const LAUNCHER_PROPERTIES: &str =
    "main-class=io.trino.server.TrinoServer\nprocess-name=trino-server\n";
/// The server's install directory in the image.
const INSTALL: &str = "/usr/lib/trino";

/// A plugin folder: its name under `plugin/`, its artifact, and the class its service
/// entry names.
#[derive(Debug, Clone, Copy)]
pub struct Plugin {
    /// The folder under `plugin/`, as in the release.
    pub folder: &'static str,
    /// The artifact in `io.trino`.
    pub artifact: &'static str,
    /// The `io.trino.spi.Plugin` implementation.
    pub class: &'static str,
    /// The release of the artifact (and of the BOM its dependencies are pinned by).
    pub version: &'static str,
}

/// The plugins the examples and tests use: those Central serves at 483, and the
/// password authenticators (file and LDAP), which Central serves only up to 449. Their
/// SPI (`PasswordAuthenticatorFactory`, `PasswordAuthenticator`) is unchanged since, and
/// the plugin's own libraries load in its own class loader, so 483 runs the 449 plugin
/// (proven by the real-server tests: logins succeed and fail as they should). The
/// release's image ships the 483 build of the same code.
pub const PLUGINS: [Plugin; 4] = [
    Plugin {
        folder: "tpch",
        artifact: "trino-tpch",
        class: "io.trino.plugin.tpch.TpchPlugin",
        version: VERSION,
    },
    Plugin {
        folder: "tpcds",
        artifact: "trino-tpcds",
        class: "io.trino.plugin.tpcds.TpcdsPlugin",
        version: VERSION,
    },
    Plugin {
        folder: "memory",
        artifact: "trino-memory",
        class: "io.trino.plugin.memory.MemoryPlugin",
        version: VERSION,
    },
    Plugin {
        folder: "password-authenticators",
        artifact: "trino-password-authenticators",
        class: "io.trino.plugin.password.PasswordAuthenticatorPlugin",
        version: PASSWORD_AUTHENTICATORS_VERSION,
    },
];

/// The newest release of `trino-password-authenticators` Central serves.
pub const PASSWORD_AUTHENTICATORS_VERSION: &str = "449";

fn manifest() -> String {
    let path =
        format!("{JAVA_HOME}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
    image_dir::ImageManifest {
        references: &["docker.io/trinodb/trino:483", "trinodb/trino:483"],
        paths: &[INSTALL],
        env: &[
            ("JAVA_HOME", JAVA_HOME),
            image_dir::SHORT_LIVED_JVM,
            ("PATH", &path),
            ("LANG", "en_US.UTF-8"),
        ],
        working_dir: "/",
        user: (1000, 1000),
    }
    .to_json()
}

/// Builds the image directory `tools_dir/images/trino-483` unless its stamp is current;
/// returns it (the image's `/`, holding `usr/lib/trino`). Needs `mvn`, `tar` and the
/// Java 25 JDK.
pub fn ensure(tools_dir: &Path) -> anyhow::Result<(PathBuf, Outcome)> {
    let image = tools_dir.join("images").join(format!("trino-{VERSION}"));
    let manifest = manifest();
    let plugins = format!("{PLUGINS:?}");
    let stamp = image_dir::Stamp::new(
        &image,
        &[POM, PLUGIN_POM, MAIN_CLASS_SOURCE, &plugins, &manifest],
    );
    if stamp.is_current() {
        return Ok((image, Outcome::AlreadyPresent));
    }
    let java_bin = java_25_bin()?;
    let mvn = image_dir::maven()?;
    image_dir::recreate(&image)?;
    let home = image.join(INSTALL.trim_start_matches('/'));
    let work = image.join("strata-work");
    fs::create_dir_all(&work).with_context(|| format!("cannot create {}", work.display()))?;

    let pom = work.join("pom.xml");
    fs::write(&pom, POM).context("cannot write the server's pom")?;
    image_dir::copy_dependencies(&mvn, &pom, &home.join("lib"))?;
    for plugin in PLUGINS {
        add_plugin(&mvn, &java_bin, &work, &home, plugin)?;
    }
    for artifact in LAUNCHER_ARTIFACTS {
        image_dir::copy_artifact(&mvn, &pom, artifact, &work)?;
    }
    for archive in ["launcher-318-bin.tar.gz", "launcher-318-properties.tar.gz"] {
        process::capture(
            Command::new("tar")
                .arg("xzf")
                .arg(work.join(archive))
                .arg("-C")
                .arg(&home),
        )
        .with_context(|| format!("cannot unpack {archive}"))?;
    }
    fs::write(
        home.join("bin").join("launcher.properties"),
        LAUNCHER_PROPERTIES,
    )
    .context("cannot write bin/launcher.properties")?;
    compile_main_class(&java_bin, &work, &home)?;
    prove(&home)?;
    fs::remove_dir_all(&work).with_context(|| format!("cannot clean {}", work.display()))?;
    stamp.seal(&image, &manifest)?;
    Ok((image, Outcome::Installed))
}

/// The `bin` directory of the Java 25 JDK, or an error that says where it was expected.
fn java_25_bin() -> anyhow::Result<PathBuf> {
    let bin = Path::new(JAVA_HOME).join("bin");
    let version =
        process::capture(Command::new(bin.join("java")).arg("-version")).with_context(|| {
            format!("Trino {VERSION} needs Java {JAVA_FEATURE}: no JDK in {JAVA_HOME}")
        })?;
    if !version.contains(&format!("version \"{JAVA_FEATURE}")) {
        bail!("Trino {VERSION} needs Java {JAVA_FEATURE}; {JAVA_HOME} holds:\n{version}");
    }
    Ok(bin)
}

/// Copies one plugin's jars into `plugin/<folder>` and adds its service entry, after
/// checking that the plugin's jar holds the class the entry names.
fn add_plugin(
    mvn: &Path,
    java_bin: &Path,
    work: &Path,
    home: &Path,
    plugin: Plugin,
) -> anyhow::Result<()> {
    let folder = home.join("plugin").join(plugin.folder);
    let pom = work.join(format!("{}.pom.xml", plugin.artifact));
    fs::write(
        &pom,
        PLUGIN_POM
            .replace("PLUGIN_ARTIFACT", plugin.artifact)
            .replace("PLUGIN_VERSION", plugin.version),
    )
    .with_context(|| format!("cannot write {}", pom.display()))?;
    image_dir::copy_dependencies(mvn, &pom, &folder)?;
    let jar = folder.join(format!("{}-{}.jar", plugin.artifact, plugin.version));
    let entries = process::capture(Command::new(java_bin.join("jar")).arg("tf").arg(&jar))?;
    let class_file = format!("{}.class", plugin.class.replace('.', "/"));
    if !entries.lines().any(|entry| entry == class_file) {
        bail!("{} holds no {}", jar.display(), plugin.class);
    }
    let service = work.join(format!("{}-service", plugin.folder));
    let services = service.join("META-INF").join("services");
    fs::create_dir_all(&services)
        .with_context(|| format!("cannot create {}", services.display()))?;
    fs::write(
        services.join("io.trino.spi.Plugin"),
        format!("{}\n", plugin.class),
    )
    .context("cannot write the plugin's service entry")?;
    process::capture(
        Command::new(java_bin.join("jar"))
            .arg("cf")
            .arg(folder.join("strata-plugin-service.jar"))
            .arg("-C")
            .arg(&service)
            .arg("."),
    )
    .map(drop)
}

/// Compiles the stand-in main class against the server's jars into
/// `lib/strata-trino-server-main.jar`.
fn compile_main_class(java_bin: &Path, work: &Path, home: &Path) -> anyhow::Result<()> {
    let sources = work.join("src").join("io").join("trino").join("server");
    fs::create_dir_all(&sources).with_context(|| format!("cannot create {}", sources.display()))?;
    let source = sources.join("TrinoServer.java");
    fs::write(&source, MAIN_CLASS_SOURCE).context("cannot write the main class")?;
    let classes = work.join("classes");
    process::capture(
        Command::new(java_bin.join("javac"))
            .arg("-cp")
            .arg(home.join("lib").join("*"))
            .arg("-d")
            .arg(&classes)
            .arg(&source),
    )?;
    process::capture(
        Command::new(java_bin.join("jar"))
            .arg("cf")
            .arg(home.join("lib").join("strata-trino-server-main.jar"))
            .arg("-C")
            .arg(&classes)
            .arg("."),
    )
    .map(drop)
}

/// The launcher runs and names its version.
fn prove(home: &Path) -> anyhow::Result<()> {
    let launcher = home.join("bin").join("launcher");
    let help = process::capture(Command::new(&launcher).arg("--help"))?;
    if !help.contains("Airlift launcher version: 318") {
        bail!("`launcher --help` did not name launcher 318:\n{help}");
    }
    Ok(())
}

//! A real OpenLDAP server for one test: Debian's `slapd` with a directory of its own in
//! a temporary directory, listening on a loopback address and a free port, stopped by
//! its PID when the value is dropped.
//!
//! `cargo xtask test` installs the Debian package and exports the binary as [`SLAPD`].
//! [`ThrowawaySlapd::start`]:
//!
//! 1. writes a `slapd.conf` (the old-style configuration, which needs no `cn=config`
//!    database): the core, cosine and inetOrgPerson schemas, one MDB database for
//!    [`SUFFIX`], and no access rules, so every entry is readable and a bind checks its
//!    `userPassword`;
//! 2. loads, with `slapadd` before any server listens, the organisation, the search
//!    account [`BIND_DN`] (a `simpleSecurityObject`), the unit [`PEOPLE`], and one
//!    `inetOrgPerson` per [`LdapUser`] under it;
//! 3. starts `slapd -d 0` (in the foreground, so its PID is the child's) on
//!    `ldap://<address>:<free port>/`, and waits until the port answers.
//!
//! [`ThrowawaySlapd::start_ldaps`] serves `ldaps://` alone instead, with a certificate
//! and key the test issued, on a port it may choose: a test can then stand a server with
//! another CA's certificate where the first one was.
//!
//! ```no_run
//! use strata_testing::slapd::{LdapUser, ThrowawaySlapd};
//! let alice = LdapUser::new("alice", "Alice", "Liddell", "wonder-land");
//! let slapd = ThrowawaySlapd::start("127.0.0.1", "bind-secret", &[alice]).expect("slapd starts");
//! assert!(slapd.uri().starts_with("ldap://127.0.0.1:"));
//! ```

use std::{
    fmt::Write as _,
    fs,
    net::TcpStream,
    path::Path,
    process::{Child, Command},
    thread,
    time::{Duration, Instant},
};

use crate::process::spawn_logged;
use crate::tools::{self, SLAPD};

/// The directory's suffix.
pub const SUFFIX: &str = "dc=example,dc=org";
/// The account a client searches with.
pub const BIND_DN: &str = "cn=search,dc=example,dc=org";
/// Where the users are.
pub const PEOPLE: &str = "ou=people,dc=example,dc=org";
/// How long the server may take to answer on its port.
pub const START_TIMEOUT: Duration = Duration::from_secs(20);
/// How long it may take to stop on SIGTERM before SIGKILL.
pub const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// One person in the directory.
#[derive(Clone, Debug)]
pub struct LdapUser {
    /// `uid`, the login name.
    pub uid: String,
    /// `givenName`.
    pub given_name: String,
    /// `sn`.
    pub surname: String,
    /// `userPassword`, stored as given (slapd compares a value without a scheme
    /// prefix as clear text).
    pub password: String,
}

impl LdapUser {
    /// A person with these names and password.
    pub fn new(uid: &str, given_name: &str, surname: &str, password: &str) -> Self {
        Self {
            uid: uid.to_owned(),
            given_name: given_name.to_owned(),
            surname: surname.to_owned(),
            password: password.to_owned(),
        }
    }

    /// The entry's DN.
    pub fn dn(&self) -> String {
        format!("uid={},{PEOPLE}", self.uid)
    }
}

/// A running slapd, stopped when dropped.
#[derive(Debug)]
pub struct ThrowawaySlapd {
    child: Child,
    scheme: &'static str,
    address: String,
    port: u16,
    _dir: tempfile::TempDir,
}

/// The server certificate (PEM, with the chain it sends) and key `ldaps://` is served
/// with.
#[derive(Clone, Copy, Debug)]
pub struct SlapdTls<'a> {
    /// The certificate.
    pub certificate_pem: &'a str,
    /// Its private key.
    pub key_pem: &'a str,
}

impl ThrowawaySlapd {
    /// Starts a server on `address` whose search account [`BIND_DN`] has
    /// `bind_password`, with `users` under [`PEOPLE`].
    ///
    /// # Errors
    ///
    /// When [`SLAPD`] is not set, the directory cannot be loaded, or the server does not
    /// answer within [`START_TIMEOUT`]; the message holds what slapd printed.
    pub fn start(address: &str, bind_password: &str, users: &[LdapUser]) -> Result<Self, String> {
        Self::launch(address, None, bind_password, users, None)
    }

    /// Starts a server as [`Self::start`] does, serving only `ldaps://` with `tls`, on
    /// `port`, or a free port when `None`.
    ///
    /// # Errors
    ///
    /// As [`Self::start`]; also when the certificate files cannot be written.
    pub fn start_ldaps(
        address: &str,
        port: Option<u16>,
        bind_password: &str,
        users: &[LdapUser],
        tls: SlapdTls<'_>,
    ) -> Result<Self, String> {
        Self::launch(address, port, bind_password, users, Some(tls))
    }

    fn launch(
        address: &str,
        port: Option<u16>,
        bind_password: &str,
        users: &[LdapUser],
        tls: Option<SlapdTls<'_>>,
    ) -> Result<Self, String> {
        let slapd = tools::required_path(SLAPD).map_err(|error| error.to_string())?;
        let dir = tempfile::Builder::new()
            .prefix("strata-slapd-")
            .tempdir()
            .map_err(|error| format!("a temporary directory: {error}"))?;
        let data = dir.path().join("data");
        fs::create_dir(&data).map_err(|error| format!("{}: {error}", data.display()))?;
        let mut conf = String::new();
        if let Some(tls) = tls {
            let certificate = dir.path().join("server.crt");
            let key = dir.path().join("server.key");
            for (path, pem) in [(&certificate, tls.certificate_pem), (&key, tls.key_pem)] {
                fs::write(path, pem).map_err(|error| format!("{}: {error}", path.display()))?;
            }
            conf = format!(
                "TLSCertificateFile {}\nTLSCertificateKeyFile {}\n",
                certificate.display(),
                key.display()
            );
        }
        conf.push_str(&slapd_conf(dir.path()));
        let config = dir.path().join("slapd.conf");
        fs::write(&config, conf).map_err(|error| format!("{}: {error}", config.display()))?;
        let ldif = dir.path().join("directory.ldif");
        fs::write(&ldif, directory_ldif(bind_password, users))
            .map_err(|error| format!("{}: {error}", ldif.display()))?;
        // slapadd is slapd under another name; Debian links it, so call slapd's tool
        // mode by that name from the same directory.
        let slapadd = slapd.with_file_name("slapadd");
        let loaded = Command::new(&slapadd)
            .arg("-f")
            .arg(&config)
            .arg("-l")
            .arg(&ldif)
            .output()
            .map_err(|error| format!("{}: {error}", slapadd.display()))?;
        if !loaded.status.success() {
            return Err(format!(
                "slapadd failed: {}{}",
                String::from_utf8_lossy(&loaded.stdout),
                String::from_utf8_lossy(&loaded.stderr)
            ));
        }
        let port = match port {
            Some(port) => port,
            None => crate::postgres::free_port(address)?,
        };
        let scheme = if tls.is_some() { "ldaps" } else { "ldap" };
        let log = dir.path().join("slapd.log");
        let child = spawn_logged(
            Command::new(&slapd)
                .args(["-d", "0", "-f"])
                .arg(&config)
                .arg("-h")
                .arg(format!("{scheme}://{address}:{port}/")),
            &log,
        )?;
        let mut server = Self {
            child,
            scheme,
            address: address.to_owned(),
            port,
            _dir: dir,
        };
        let deadline = Instant::now() + START_TIMEOUT;
        while TcpStream::connect((address, port)).is_err() {
            let exited = server.child.try_wait().ok().flatten();
            if exited.is_some() || Instant::now() > deadline {
                return Err(format!(
                    "slapd did not answer on {address}:{port} ({exited:?}): {}",
                    fs::read_to_string(&log).unwrap_or_default()
                ));
            }
            thread::sleep(Duration::from_millis(50));
        }
        Ok(server)
    }

    /// `ldap://<address>:<port>`, or `ldaps://` for [`Self::start_ldaps`].
    pub fn uri(&self) -> String {
        format!("{}://{}:{}", self.scheme, self.address, self.port)
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The server's PID.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for ThrowawaySlapd {
    fn drop(&mut self) {
        crate::postgres::stop(&mut self.child, "-TERM", STOP_TIMEOUT);
    }
}

/// The `slapd.conf` of a directory kept under `dir`: the schemas a person needs, and one
/// MDB database for [`SUFFIX`] in `dir/data`, with no access rules.
pub fn slapd_conf(dir: &Path) -> String {
    format!(
        "include /etc/ldap/schema/core.schema\n\
         include /etc/ldap/schema/cosine.schema\n\
         include /etc/ldap/schema/inetorgperson.schema\n\
         modulepath /usr/lib/ldap\n\
         moduleload back_mdb\n\
         pidfile {dir}/slapd.pid\n\
         argsfile {dir}/slapd.args\n\
         database mdb\n\
         maxsize 16777216\n\
         suffix \"{SUFFIX}\"\n\
         directory {dir}/data\n",
        dir = dir.display()
    )
}

/// The directory as LDIF: the organisation, the search account [`BIND_DN`] with
/// `bind_password`, the unit [`PEOPLE`] and `users` under it.
pub fn directory_ldif(bind_password: &str, users: &[LdapUser]) -> String {
    let mut ldif = format!(
        "dn: {SUFFIX}\nobjectClass: dcObject\nobjectClass: organization\no: Example\n\
         dc: example\n\n\
         dn: {BIND_DN}\nobjectClass: organizationalRole\nobjectClass: simpleSecurityObject\n\
         cn: search\nuserPassword: {bind_password}\n\n\
         dn: {PEOPLE}\nobjectClass: organizationalUnit\nou: people\n"
    );
    for user in users {
        let _ = write!(
            ldif,
            "\ndn: {dn}\nobjectClass: inetOrgPerson\nuid: {uid}\ncn: {given} {surname}\n\
             givenName: {given}\nsn: {surname}\nmail: {uid}@example.org\nuserPassword: {password}\n",
            dn = user.dn(),
            uid = user.uid,
            given = user.given_name,
            surname = user.surname,
            password = user.password,
        );
    }
    ldif
}

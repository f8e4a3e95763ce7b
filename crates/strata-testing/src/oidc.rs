//! A real OpenID Connect provider for one test: NAV's mock-oauth2-server (provisioned
//! from Maven Central as [`OIDC_PROVIDER_LIB`]) on a loopback address and a free port,
//! stopped by its PID when the value is dropped.
//!
//! It serves the whole protocol: discovery, `authorize`, `token` (signed ID tokens,
//! with the nonce of the authorization request), `jwks` and `userinfo`, for the issuer
//! [`ISSUER_ID`]. With `interactiveLogin` off, `authorize` redirects straight back with
//! a code, as a provider does for a user who is signed in already; the tokens carry the
//! claims of the [`OidcUser`] given at start, with the client id as their audience.
//!
//! ```no_run
//! use strata_testing::oidc::{MockOidcProvider, OidcUser};
//! let alice = OidcUser::new("alice", "Alice", "Liddell");
//! let provider = MockOidcProvider::start("127.0.0.1", "superset", &alice).expect("it starts");
//! assert!(provider.issuer().ends_with("/default"));
//! ```

use std::{
    fs,
    process::{Child, Command},
    thread,
    time::{Duration, Instant},
};

use serde_json::json;

use crate::process::spawn_logged;
use crate::tools::{self, JAVA, OIDC_PROVIDER_LIB};

/// The issuer's id: its URL is `http://<address>:<port>/<id>`.
pub const ISSUER_ID: &str = "default";
/// How long the JVM may take to serve its discovery document.
pub const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long it may take to stop on SIGTERM before SIGKILL.
pub const STOP_TIMEOUT: Duration = Duration::from_secs(10);
/// The standalone server's main class.
const MAIN_CLASS: &str = "no.nav.security.mock.oauth2.StandaloneMockOAuth2ServerKt";

/// The signed-in user, as the ID token's claims name them.
#[derive(Clone, Debug)]
pub struct OidcUser {
    /// `sub` and `preferred_username`.
    pub username: String,
    /// `given_name`.
    pub given_name: String,
    /// `family_name`.
    pub family_name: String,
}

impl OidcUser {
    /// A user with these names; the email is `<username>@example.org`.
    pub fn new(username: &str, given_name: &str, family_name: &str) -> Self {
        Self {
            username: username.to_owned(),
            given_name: given_name.to_owned(),
            family_name: family_name.to_owned(),
        }
    }
}

/// A running provider, stopped when dropped.
#[derive(Debug)]
pub struct MockOidcProvider {
    child: Child,
    address: String,
    port: u16,
    log: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl MockOidcProvider {
    /// Starts the provider on `address` for the client `client_id`, signing `user` in.
    ///
    /// # Errors
    ///
    /// When the tools are not set, or the discovery document is not served within
    /// [`START_TIMEOUT`]; the message holds what the server printed.
    pub fn start(address: &str, client_id: &str, user: &OidcUser) -> Result<Self, String> {
        let java = tools::required_path(JAVA).map_err(|error| error.to_string())?;
        let lib = tools::required_path(OIDC_PROVIDER_LIB).map_err(|error| error.to_string())?;
        let dir = tempfile::Builder::new()
            .prefix("strata-oidc-")
            .tempdir()
            .map_err(|error| format!("a temporary directory: {error}"))?;
        let port = crate::postgres::free_port(address)?;
        let claims = json!({
            "sub": user.username,
            "preferred_username": user.username,
            "given_name": user.given_name,
            "family_name": user.family_name,
            "email": format!("{}@example.org", user.username),
            "aud": [client_id],
        });
        let config = json!({
            "interactiveLogin": false,
            "httpServer": "NettyWrapper",
            "tokenCallbacks": [{
                "issuerId": ISSUER_ID,
                "tokenExpiry": 300,
                "requestMappings": [{
                    "requestParam": "grant_type",
                    "match": "*",
                    "claims": claims,
                }],
            }],
        });
        let log = dir.path().join("provider.log");
        let child = spawn_logged(
            Command::new(&java)
                .arg("-Xmx128m")
                .arg("-cp")
                .arg(format!("{}/*", lib.display()))
                .arg(MAIN_CLASS)
                .env("SERVER_HOSTNAME", address)
                .env("SERVER_PORT", port.to_string())
                .env("JSON_CONFIG", config.to_string()),
            &log,
        )?;
        let mut provider = Self {
            child,
            address: address.to_owned(),
            port,
            log,
            _dir: dir,
        };
        let discovery = format!("/{ISSUER_ID}/.well-known/openid-configuration");
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            let answered =
                crate::http::request(&provider.authority(), "GET", &discovery, &[], None)
                    .is_ok_and(|response| response.status == 200);
            if answered {
                return Ok(provider);
            }
            let exited = provider.child.try_wait().ok().flatten();
            if exited.is_some() || Instant::now() > deadline {
                return Err(format!(
                    "mock-oauth2-server did not serve {discovery} on {} ({exited:?}): {}",
                    provider.authority(),
                    provider.log_tail()
                ));
            }
            thread::sleep(Duration::from_millis(200));
        }
    }

    /// `<address>:<port>`.
    pub fn authority(&self) -> String {
        format!("{}:{}", self.address, self.port)
    }

    /// The issuer URL, whose `/.well-known/openid-configuration` a client reads.
    pub fn issuer(&self) -> String {
        format!("http://{}/{ISSUER_ID}", self.authority())
    }

    /// The last lines the server printed.
    pub fn log_tail(&self) -> String {
        let text = fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }
}

impl Drop for MockOidcProvider {
    fn drop(&mut self) {
        crate::postgres::stop(&mut self.child, "-TERM", STOP_TIMEOUT);
    }
}

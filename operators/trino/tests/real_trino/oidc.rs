//! A real OpenID Connect provider (NAV's mock-oauth2-server from Maven Central) as a pod
//! beside the Trino example, serving HTTPS with a certificate of its own CA, which the
//! cluster trusts through a ConfigMap. Clients get access tokens from it with the
//! client-credentials grant (the token's `sub` is the client id) and send them to Trino
//! as `Authorization: Bearer`.

use std::time::{Duration, SystemTime};

use k8s_openapi::ByteString;
use serde_json::{Value, json};
use strata_certificates::authority::{CertificateAuthority, Validity};
use strata_certificates::keystore::keystore;
use strata_testing::tools::{self, OIDC_PROVIDER_LIB};

use crate::support::NAMESPACE;

/// The pod and its Service.
pub const POD: &str = "oidc";
/// The HTTPS port.
const PORT: u16 = 9443;
/// The ConfigMap with the provider's CA, which the cluster and the client pod name.
pub const CA_CONFIG_MAP: &str = "oidc-ca";
/// Trino's client credentials Secret.
const CLIENT_SECRET: &str = "trino-oauth2";
/// The keystore's password (it protects nothing: the Secret does).
const KEYSTORE_PASSWORD: &str = "oidc-keystore";
/// The provider's main class.
const MAIN_CLASS: &str = "no.nav.security.mock.oauth2.StandaloneMockOAuth2ServerKt";

/// Trino's client at the provider: the audience its tokens must name.
pub const CLIENT_ID: &str = "trino";

/// `https://oidc.<ns>.svc.cluster.local:9443/default`.
pub fn issuer() -> String {
    format!("https://{POD}.{NAMESPACE}.svc.cluster.local:{PORT}/default")
}

/// `authentication[].oauth2` of the example.
pub fn authentication() -> Value {
    json!({"oauth2": {
        "issuer": issuer(),
        "clientCredentialsSecret": CLIENT_SECRET,
        "caConfigMap": CA_CONFIG_MAP
    }})
}

/// The pod, its Service, its keystore, the CA ConfigMap and Trino's client Secret.
pub fn objects() -> Vec<Value> {
    let now = SystemTime::now();
    let lifetime = Duration::from_secs(3600);
    let ca = CertificateAuthority::create("OIDC test CA", Validity::starting(now, lifetime))
        .unwrap_or_else(|error| panic!("{error}"));
    let server = ca
        .issue(
            &[format!("{POD}.{NAMESPACE}.svc.cluster.local")],
            Validity::starting(now, lifetime),
        )
        .unwrap_or_else(|error| panic!("{error}"));
    let store = keystore(&server, ca.certificate_pem(), KEYSTORE_PASSWORD)
        .unwrap_or_else(|error| panic!("{error}"));
    let lib = tools::required_path(OIDC_PROVIDER_LIB).unwrap_or_else(|error| panic!("{error}"));
    let config = json!({
        "interactiveLogin": false,
        "httpServer": {"type": "NettyWrapper", "ssl": {
            "keystoreFile": "/strata/tls/keystore.p12", "keystoreType": "PKCS12",
            "keystorePassword": KEYSTORE_PASSWORD, "keyPassword": KEYSTORE_PASSWORD
        }}
    });
    vec![
        json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": CA_CONFIG_MAP, "namespace": NAMESPACE},
            "data": {"ca.crt": ca.certificate_pem()}
        }),
        json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": CLIENT_SECRET, "namespace": NAMESPACE},
            "stringData": {"clientId": CLIENT_ID, "clientSecret": "trino-client-secret"}
        }),
        json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "oidc-tls", "namespace": NAMESPACE},
            "data": {"keystore.p12": ByteString(store)}
        }),
        json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": POD, "namespace": NAMESPACE},
            "spec": {"selector": {"app": POD}, "ports": [{"name": "https", "port": PORT}]}
        }),
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": POD, "namespace": NAMESPACE, "labels": {"app": POD}},
            "spec": {
                "terminationGracePeriodSeconds": 5,
                "containers": [{
                    "name": "provider",
                    "image": "docker.io/trinodb/trino:483",
                    "command": ["java", "-cp", format!("{}/*", lib.display()), MAIN_CLASS],
                    "env": [
                        {"name": "SERVER_PORT", "value": PORT.to_string()},
                        {"name": "JSON_CONFIG", "value": config.to_string()}
                    ],
                    "ports": [{"name": "https", "containerPort": PORT}],
                    "readinessProbe": {"tcpSocket": {"port": PORT}, "periodSeconds": 2},
                    "volumeMounts": [{"name": "tls", "mountPath": "/strata/tls", "readOnly": true}]
                }],
                "volumes": [{"name": "tls", "secret": {"secretName": "oidc-tls"}}]
            }
        }),
    ]
}

//! A real OpenLDAP server (Debian's `slapd`) as a pod beside the Trino example, serving
//! `ldaps://` with a certificate of its own CA, which the cluster trusts through a
//! ConfigMap: what a directory in the cluster looks like to Trino's LDAP authenticator.

use std::path::Path;
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use strata_operator::certificates::{
    CertificateRequest, ServerCertificateRequest, StoredSecrets, plan_certificates,
};
use strata_testing::slapd::{LdapUser, PEOPLE, directory_ldif, slapd_conf};

use crate::support::NAMESPACE;

/// The pod and its Service.
pub const POD: &str = "openldap";
/// The ldaps port (unprivileged: slapd runs as the image's user).
const PORT: u16 = 1636;
/// The ConfigMap with the directory's CA, which the cluster names.
pub const CA_CONFIG_MAP: &str = "ldap-ca";
/// Where slapd keeps its directory in the pod.
const DIR: &str = "/ldap";
/// The directory's user, and her password.
pub const USER: (&str, &str) = ("carol", "carol-ldap-password");

/// `ldaps://openldap.<ns>.svc.cluster.local:1636`.
pub fn url() -> String {
    format!("ldaps://{POD}.{NAMESPACE}.svc.cluster.local:{PORT}")
}

/// `authentication[].ldap` of the example.
pub fn authentication() -> Value {
    json!({"ldap": {
        "url": url(),
        "userBindPattern": format!("uid=${{USER}},{PEOPLE}"),
        "caConfigMap": CA_CONFIG_MAP
    }})
}

/// The pod, its Service, its configuration and certificate, and the CA ConfigMap.
pub fn objects() -> Vec<Value> {
    let request = CertificateRequest {
        namespace: NAMESPACE.to_owned(),
        ca_secret_name: "openldap-ca".to_owned(),
        ca_common_name: "OpenLDAP test CA".to_owned(),
        labels: Default::default(),
        servers: vec![ServerCertificateRequest {
            secret_name: "openldap-tls".to_owned(),
            names: vec![format!("{POD}.{NAMESPACE}.svc.cluster.local")],
        }],
        lifetime: Duration::from_secs(3600),
        client_ca: None,
    };
    let certificates = plan_certificates(&request, &StoredSecrets::default(), SystemTime::now())
        .unwrap_or_else(|error| panic!("{error}"));
    let mut objects: Vec<Value> = certificates
        .sealed_secrets()
        .iter()
        .map(|secret| {
            let mut value = serde_json::to_value(secret).unwrap_or_else(|error| panic!("{error}"));
            value["apiVersion"] = json!("v1");
            value["kind"] = json!("Secret");
            value
        })
        .collect();
    let user = LdapUser::new(USER.0, "Carol", "Directory", USER.1);
    let tls = format!(
        "TLSCertificateFile /strata/tls/tls.crt\nTLSCertificateKeyFile /strata/tls/tls.key\n{}",
        slapd_conf(Path::new(DIR))
    );
    let start = format!(
        "set -e; mkdir -p {DIR}/data; /usr/sbin/slapadd -f /strata/config/slapd.conf \
         -l /strata/config/directory.ldif; exec /usr/sbin/slapd -d 0 \
         -f /strata/config/slapd.conf -h ldaps://0.0.0.0:{PORT}/"
    );
    objects.extend([
        json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": CA_CONFIG_MAP, "namespace": NAMESPACE},
            "data": {"ca.crt": certificates.ca_pem}
        }),
        json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "openldap-config", "namespace": NAMESPACE},
            "data": {
                "slapd.conf": tls,
                "directory.ldif": directory_ldif("search-password", &[user])
            }
        }),
        json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": POD, "namespace": NAMESPACE},
            "spec": {"selector": {"app": POD}, "ports": [{"name": "ldaps", "port": PORT}]}
        }),
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": POD, "namespace": NAMESPACE, "labels": {"app": POD}},
            "spec": {
                "terminationGracePeriodSeconds": 5,
                "containers": [{
                    "name": "slapd",
                    "image": "docker.io/trinodb/trino:483",
                    "command": ["bash", "-c", start],
                    "ports": [{"name": "ldaps", "containerPort": PORT}],
                    "readinessProbe": {"tcpSocket": {"port": PORT}, "periodSeconds": 2},
                    "volumeMounts": [
                        {"name": "config", "mountPath": "/strata/config", "readOnly": true},
                        {"name": "tls", "mountPath": "/strata/tls", "readOnly": true},
                        {"name": "data", "mountPath": DIR}
                    ]
                }],
                "volumes": [
                    {"name": "config", "configMap": {"name": "openldap-config"}},
                    {"name": "tls", "secret": {"secretName": "openldap-tls"}},
                    {"name": "data", "emptyDir": {}}
                ]
            }
        }),
    ]);
    objects
}

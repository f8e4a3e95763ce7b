use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::runtime::reflector;
use kube::runtime::watcher;
use rstest::rstest;

use super::*;
use crate::reference::strip_secret_values;

fn meta(name: &str, version: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        namespace: Some("ns".to_owned()),
        uid: Some(format!("uid-{name}")),
        resource_version: Some(version.to_owned()),
        ..ObjectMeta::default()
    }
}

/// Caches as a controller that declared both kinds holds them: the Secret `db` with
/// `username` and `password` (keys only) and the ConfigMap `conf` with `url`.
fn references() -> References {
    let mut secret = Secret {
        metadata: meta("db", "7"),
        data: Some(BTreeMap::from(
            ["username", "password"].map(|key| (key.to_owned(), ByteString(b"value".to_vec()))),
        )),
        ..Secret::default()
    };
    strip_secret_values(&mut secret);
    let config_map = ConfigMap {
        metadata: meta("conf", "3"),
        data: Some(BTreeMap::from([(
            "url".to_owned(),
            "jdbc:postgresql://db".to_owned(),
        )])),
        ..ConfigMap::default()
    };
    let mut secrets = reflector::store::Writer::<Secret>::default();
    secrets.apply_watcher_event(&watcher::Event::Apply(secret));
    let mut config_maps = reflector::store::Writer::<ConfigMap>::default();
    config_maps.apply_watcher_event(&watcher::Event::Apply(config_map));
    let mut references = References::default();
    references.insert(secrets.as_reader());
    references.insert(config_maps.as_reader());
    references
}

fn read<'a>(object: KeySource, name: &'a str, keys: &[&'a str]) -> KeysRead<'a> {
    KeysRead {
        object,
        name,
        keys: keys.to_vec(),
        field: "spec.example",
    }
}

#[test]
fn present_keys_give_the_versions_the_pods_roll_on() {
    let versions = references()
        .check_keys(
            "ns",
            [
                read(KeySource::Secret, "db", &["username", "password"]),
                read(KeySource::ConfigMap, "conf", &["url"]),
            ],
        )
        .expect("every key exists");
    assert_eq!(
        versions,
        BTreeMap::from([
            ("ConfigMap/conf".to_owned(), "uid-conf/3".to_owned()),
            ("Secret/db".to_owned(), "uid-db/7".to_owned()),
        ])
    );
}

#[rstest]
#[case::missing_secret(
    "ns",
    read(KeySource::Secret, "other", &["username", "password"]),
    "SecretMissing",
    "the Secret ns/other (spec.example) does not exist; it must hold the key(s) username, password"
)]
#[case::secret_without_a_key(
    "ns",
    read(KeySource::Secret, "db", &["username", "token"]),
    "SecretKeyMissing",
    "the Secret ns/db (spec.example) has no key(s) token"
)]
#[case::missing_config_map(
    "ns",
    read(KeySource::ConfigMap, "other", &["url"]),
    "ConfigMapMissing",
    "the ConfigMap ns/other (spec.example) does not exist; it must hold the key(s) url"
)]
#[case::config_map_without_a_key(
    "ns",
    read(KeySource::ConfigMap, "conf", &["url", "user"]),
    "ConfigMapKeyMissing",
    "the ConfigMap ns/conf (spec.example) has no key(s) user"
)]
#[case::object_in_another_namespace(
    "elsewhere",
    read(KeySource::Secret, "db", &["username"]),
    "SecretMissing",
    "the Secret elsewhere/db"
)]
fn missing_objects_and_keys_are_retried_until_they_appear(
    #[case] namespace: &str,
    #[case] keys: KeysRead<'_>,
    #[case] reason: &str,
    #[case] message: &str,
) {
    let error = references()
        .check_keys(namespace, [keys])
        .expect_err("refused");
    assert_eq!(error.reason(), reason);
    assert_eq!(error.kind(), ErrorKind::Transient);
    assert!(
        error.to_string().starts_with(message),
        "{error} does not start with {message:?}"
    );
}

#[test]
fn an_undeclared_kind_is_the_operators_bug() {
    let error = References::default()
        .check_keys("ns", [read(KeySource::ConfigMap, "conf", &["url"])])
        .expect_err("not declared");
    assert_eq!(error.reason(), "UndeclaredReference");
    assert_eq!(error.kind(), ErrorKind::OperatorBug);
}

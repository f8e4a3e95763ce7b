//! Every properties file the operator generates, read back by the real
//! `java.util.Properties.load` (the loader Trino's configuration uses): each key and
//! value arrives as the operator meant it, with nothing added or lost.
//!
//! Needs Java (`STRATA_JAVA`), which `cargo xtask tools` provides, so it is ignored by
//! plain `cargo test` and run by `cargo xtask test`.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::collections::BTreeMap;
use std::process::Command;

use serde_json::json;
use strata_testing::tools::{JAVA, TRINO_IMAGE, tool};
use trino_operator::config::catalog::ValidatedCatalog;
use trino_operator::config::server::{
    ACCESS_CONTROL_PROPERTIES, CONFIG_PROPERTIES, LOG_PROPERTIES, NODE_PROPERTIES,
};
use trino_operator::crd::{TrinoCatalog, TrinoCluster};
use trino_operator::validate::{DEFAULT_CLUSTER_DOMAIN, ValidatedCluster};

const READ_ALL: &str = r#"import java.io.FileInputStream;
import java.util.Properties;
public class Read {
    static String hex(String text) throws Exception {
        StringBuilder out = new StringBuilder();
        for (byte b : text.getBytes("UTF-8")) out.append(String.format("%02x", b));
        return out.toString();
    }
    public static void main(String[] args) throws Exception {
        for (String file : args) {
            Properties properties = new Properties();
            try (FileInputStream in = new FileInputStream(file)) { properties.load(in); }
            for (String key : properties.stringPropertyNames())
                System.out.println(file + "\t" + hex(key) + "=" + hex(properties.getProperty(key)));
        }
    }
}"#;

fn hex(text: &str) -> String {
    text.bytes().map(|byte| format!("{byte:02x}")).collect()
}

fn model() -> ValidatedCluster {
    let cluster: TrinoCluster = serde_json::from_value(json!({
        "apiVersion": "trino.strata.dev/v1alpha1", "kind": "TrinoCluster",
        "metadata": {"name": "simple-trino", "namespace": "default"},
        "spec": {
            "coordinators": {
                "config": {"queryMaxMemory": "20Gi", "queryMaxMemoryPerNode": "1Gi"},
                "roleGroups": {"default": {"replicas": 1}}
            },
            "workers": {
                "configOverrides": {"log.properties": {"io.trino.server": "DEBUG"}},
                "roleGroups": {"default": {"replicas": 2}}
            }
        }
    }))
    .expect("a valid cluster");
    let catalogs: Vec<TrinoCatalog> = [
        ("tpch", json!({"tpch": {"splitsPerNode": 2, "columnNaming": "STANDARD"}})),
        ("memory", json!({"memory": {"maxDataPerNode": "1500Mi"}})),
        ("pg", json!({"postgresql": {"connectionUrl": "jdbc:postgresql://db:5432/x?ssl=true&a=b", "credentialsSecret": "pg"}})),
        ("hive", json!({"hive": {"metastore": {"uri": "thrift://m1:9083,thrift://m2:9083"}}})),
        ("lake", json!({"iceberg": {"jdbc": {
            "connectionUrl": "jdbc:postgresql://db/i", "credentialsSecret": "ice",
            "catalogName": "lake", "defaultWarehouseDir": "s3://lake/warehouse"
        }}})),
        ("rest", json!({"iceberg": {"rest": {"uri": "http://rest:8181/api", "warehouse": "wh"}}})),
    ]
    .into_iter()
    .map(|(name, connector)| {
        serde_json::from_value(json!({
            "apiVersion": "trino.strata.dev/v1alpha1", "kind": "TrinoCatalog",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"connector": connector}
        }))
        .expect("a valid catalog")
    })
    .collect();
    ValidatedCluster::new(&cluster, &catalogs, DEFAULT_CLUSTER_DOMAIN).expect("valid")
}

/// What the operator meant each file to say: every `key=value` line split at its first
/// `=` (the operator escapes nothing in the values it writes here, and its keys have
/// no characters that need escaping).
fn meant(file: &str) -> BTreeMap<String, String> {
    file.lines()
        .filter_map(|line| line.split_once('='))
        .map(|(key, value)| (key.to_owned(), value.to_owned()))
        .collect()
}

#[test]
#[ignore = "needs Java (STRATA_JAVA); run by cargo xtask test"]
fn java_reads_every_generated_file_as_the_operator_meant_it() {
    let model = model();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut expected: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for role in &model.roles {
        let group = &role.groups[0];
        for file in [
            CONFIG_PROPERTIES,
            NODE_PROPERTIES,
            LOG_PROPERTIES,
            ACCESS_CONTROL_PROPERTIES,
        ] {
            let path = dir.path().join(format!("{}-{file}", role.role.name()));
            std::fs::write(&path, &group.product.files[file]).expect("write");
            expected.insert(
                path.display().to_string(),
                meant(&group.product.files[file]),
            );
        }
    }
    for catalog in &model.catalogs {
        let path = dir.path().join(catalog.file_name());
        std::fs::write(&path, catalog.file()).expect("write");
        expected.insert(
            path.display().to_string(),
            catalog.properties.iter().cloned().collect(),
        );
    }
    assert_eq!(expected.len(), 14, "8 server files and 6 catalogs");
    let program = dir.path().join("Read.java");
    std::fs::write(&program, READ_ALL).expect("write the program");
    let output = Command::new(tool(JAVA))
        .arg(&program)
        .args(expected.keys())
        .output()
        .expect("run java");
    assert!(
        output.status.success(),
        "java failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut read: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for line in String::from_utf8(output.stdout).expect("utf-8").lines() {
        let (file, pair) = line.split_once('\t').expect("file and pair");
        let (key, value) = pair.split_once('=').expect("key and value");
        read.entry(file.to_owned())
            .or_default()
            .insert(key.to_owned(), value.to_owned());
    }
    let expected_hex: BTreeMap<String, BTreeMap<String, String>> = expected
        .into_iter()
        .map(|(file, entries)| {
            (
                file,
                entries
                    .into_iter()
                    .map(|(key, value)| (hex(&key), hex(&value)))
                    .collect(),
            )
        })
        .collect();
    assert_eq!(read, expected_hex);
}

/// Resolves each argument as Trino 483 resolves a catalog property: airlift's
/// `SecretsResolver` with the environment provider under the name its factory gives,
/// as Trino's secrets plugin manager registers it.
const RESOLVE: &str = r#"import io.airlift.configuration.secrets.SecretsResolver;
import io.airlift.configuration.secrets.env.EnvironmentVariableSecretProviderFactory;
import java.util.Map;
import java.util.TreeMap;
public class Resolve {
    public static void main(String[] args) {
        EnvironmentVariableSecretProviderFactory factory = new EnvironmentVariableSecretProviderFactory();
        SecretsResolver resolver = new SecretsResolver(
            Map.of(factory.getName(), factory.createSecretProvider(Map.of())));
        Map<String, String> properties = new TreeMap<>();
        for (int i = 0; i < args.length; i++) properties.put(String.format("p%03d", i), args[i]);
        Map<String, String> resolved = resolver.getResolvedConfiguration(properties);
        for (int i = 0; i < args.length; i++) System.out.println(resolved.get(String.format("p%03d", i)));
    }
}"#;

/// The Java the Trino image runs (483 needs 25): its `JAVA_HOME`, from the image
/// directory's configuration.
fn image_java(image: &std::path::Path) -> std::path::PathBuf {
    let config: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(image.join("strata-image.json"))
            .expect("the image's configuration"),
    )
    .expect("JSON");
    let java_home = config["env"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|pair| pair[0] == "JAVA_HOME")
        .and_then(|pair| pair[1].as_str())
        .expect("the image sets JAVA_HOME");
    std::path::Path::new(java_home).join("bin/java")
}

/// Reliability review, I-1: Trino resolves `${env:...}` in any case from the pods'
/// environment, where the internal shared secret and every catalog's credentials are.
/// Each spelling the real resolver of Trino 483 reads the secret with, the operator
/// refuses in a catalog; the spelling it leaves alone stays literal in Trino too.
#[test]
#[ignore = "needs Java (STRATA_JAVA) and the Trino image directory (STRATA_TRINO_IMAGE); run by cargo xtask test"]
fn every_spelling_trino_resolves_from_the_environment_is_refused_in_a_catalog() {
    const SECRET: &str = "shared-secret-of-the-cluster";
    let spellings = [
        "${ENV:TRINO_INTERNAL_SHARED_SECRET}",
        "${env:TRINO_INTERNAL_SHARED_SECRET}",
        "${Env:TRINO_INTERNAL_SHARED_SECRET}",
        "x-${eNv:TRINO_INTERNAL_SHARED_SECRET}-y",
    ];
    let literal = "$ENV:TRINO_INTERNAL_SHARED_SECRET";
    let dir = tempfile::tempdir().expect("tempdir");
    let program = dir.path().join("Resolve.java");
    std::fs::write(&program, RESOLVE).expect("write the program");
    let image = tool(TRINO_IMAGE);
    let lib = image.join("usr/lib/trino/lib");
    let output = Command::new(image_java(&image))
        .arg("-cp")
        .arg(format!("{}/*", lib.display()))
        .arg(&program)
        .args(spellings)
        .arg(literal)
        .env("TRINO_INTERNAL_SHARED_SECRET", SECRET)
        .output()
        .expect("run java");
    assert!(
        output.status.success(),
        "java failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let resolved: Vec<String> = String::from_utf8(output.stdout)
        .expect("utf-8")
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(resolved.len(), spellings.len() + 1, "{resolved:?}");
    assert_eq!(
        resolved[spellings.len()],
        literal,
        "no reference, no resolution"
    );
    for (spelling, value) in spellings.iter().zip(&resolved) {
        assert!(
            value.contains(SECRET),
            "Trino 483 read the environment with {spelling}: {value}"
        );
        let catalog: TrinoCatalog = serde_json::from_value(json!({
            "apiVersion": "trino.strata.dev/v1alpha1", "kind": "TrinoCatalog",
            "metadata": {"name": "stealing", "namespace": "default"},
            "spec": {"connector": {"generic": {
                "connectorName": "postgresql",
                "properties": {
                    "connection-url": "jdbc:postgresql://listener:5432/x",
                    "connection-user": spelling,
                }
            }}}
        }))
        .expect("a catalog");
        let refused = ValidatedCatalog::new(&catalog)
            .expect_err(&format!("a catalog with {spelling} is refused"));
        assert_eq!(refused.reason(), "InvalidConnector", "{refused}");
    }
}

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
use strata_testing::tools::{JAVA, tool};
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

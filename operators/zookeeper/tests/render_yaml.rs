//! Rendered YAML means the same JSON to every reader: serde_yaml_ng (YAML 1.2) and
//! PyYAML (YAML 1.1, the resolver kubectl's reader shares) read back exactly the objects
//! the operator built, for every example in `examples/zookeeper/` and for a cluster whose
//! overrides are strings YAML 1.1 would take for booleans, numbers, null or timestamps.
//!
//! PyYAML comes from the venv `cargo xtask tools` provisions for kubernetes-validate (which
//! depends on it): the test runs the `python` next to `$STRATA_KUBERNETES_VALIDATE`, with
//! both PyYAML loaders (pure Python and, where built, libyaml).

use std::fs;
use std::path::Path;

use pretty_assertions::assert_eq;
use serde::Deserialize;
use serde_json::{Value, json};
use strata_operator::cli::Operator;
use strata_operator::render::{parse_documents, render_manifest};
use strata_testing::yaml::read_with_pyyaml;
use zookeeper_operator::ZookeeperOperator;

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// Strings some YAML reader resolves to a non-string when they are written plain.
const AMBIGUOUS: &[&str] = &[
    "yes",
    "Yes",
    "no",
    "NO",
    "y",
    "n",
    "on",
    "On",
    "off",
    "true",
    "False",
    "~",
    "null",
    "Null",
    "0x10",
    "0x_1F",
    "012",
    "09",
    "0o17",
    "0b101",
    "1_000",
    "1:30",
    "190:20:30.15",
    "1e3",
    "1E-3",
    "6.8523015e+5",
    ".5",
    "1.",
    "3.9.5",
    ".inf",
    "-.Inf",
    ".NaN",
    "+inf",
    "-Infinity",
    "2001-12-14",
    "2001-1-2",
    "2001-12-14t21:59:43.10-05:00",
    "2001-12-14 21:59:43.10 -5",
    "<<",
    "=",
    "",
    " lead",
    "trail ",
    "a: b",
    "#x",
    "-x",
    "x #y",
    "---",
    "...",
    "multi\nline",
    "tab\tinside",
    "quote\"and\\backslash",
];

/// A cluster whose env and config overrides, pod labels and annotations are all the
/// ambiguous strings, as JSON (which is YAML too, so the input itself is unambiguous).
fn crafted_cluster() -> Result<String, serde_json::Error> {
    let env: serde_json::Map<String, Value> = AMBIGUOUS
        .iter()
        .enumerate()
        .map(|(index, text)| (format!("VALUE_{index:02}"), json!(text)))
        .collect();
    // zoo.cfg is a properties file: the operator refuses values with line breaks.
    let properties: serde_json::Map<String, Value> = AMBIGUOUS
        .iter()
        .enumerate()
        .filter(|(_, text)| !text.contains('\n'))
        .map(|(index, text)| (format!("crafted.{index:02}"), json!(text)))
        .collect();
    let annotations: serde_json::Map<String, Value> = AMBIGUOUS
        .iter()
        .filter(|text| !text.is_empty() && !text.contains([' ', '\n', '\t', '"', '\\', '#']))
        .map(|text| (format!("crafted.strata.dev/{}", text.len()), json!(text)))
        .collect();
    serde_json::to_string_pretty(&json!({
        "apiVersion": "zookeeper.strata.dev/v1alpha1",
        "kind": "ZookeeperCluster",
        "metadata": {"name": "crafted", "namespace": "default"},
        "spec": {
            "servers": {
                "envOverrides": env,
                "configOverrides": {"zoo.cfg": properties},
                "podOverrides": {
                    "metadata": {
                        "labels": {"yes": "on", "flag": "0x10", "date": "2001-12-14"},
                        "annotations": annotations
                    }
                },
                "roleGroups": {"default": {"replicas": 1, "envOverrides": {"on": "~", "Y": "1e3"}}}
            }
        }
    }))
}

/// Every example file, sorted, plus the crafted cluster: (name, manifest).
fn manifests() -> Result<Vec<(String, String)>, Box<dyn std::error::Error>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/zookeeper");
    let mut manifests = Vec::new();
    for file in strata_testing::checks::examples(&dir)? {
        manifests.push((file.display().to_string(), fs::read_to_string(&file)?));
    }
    manifests.push(("crafted cluster".to_owned(), crafted_cluster()?));
    Ok(manifests)
}

/// The objects the operator built for `manifest`, as JSON, sorted as `render` prints them.
fn built_objects(manifest: &str) -> Result<Vec<Value>, Box<dyn std::error::Error>> {
    let mut objects = ZookeeperOperator::render(&parse_documents(manifest)?)?.objects;
    let key = |object: &Value| {
        [
            &object["kind"],
            &object["metadata"]["namespace"],
            &object["metadata"]["name"],
        ]
        .map(|value| value.as_str().unwrap_or_default().to_owned())
    };
    objects.sort_by_key(key);
    Ok(objects)
}

#[test]
fn the_crafted_cluster_renders_its_ambiguous_strings_quoted() -> TestResult {
    let rendered = render_manifest::<ZookeeperOperator>(&crafted_cluster()?)?.yaml;
    for line in [
        "          value: \"yes\"",
        "          value: \"0x10\"",
        "          value: \"1e3\"",
        "          value: \"~\"",
        "          value: \"2001-12-14\"",
        "        \"yes\": \"on\"",
    ] {
        assert!(
            rendered.lines().any(|rendered_line| rendered_line == line),
            "{line:?} not in:\n{rendered}"
        );
    }
    Ok(())
}

#[test]
fn a_yaml_1_2_reader_reads_the_built_objects() -> TestResult {
    for (name, manifest) in manifests()? {
        let rendered = render_manifest::<ZookeeperOperator>(&manifest)?.yaml;
        let mut read = Vec::new();
        for document in serde_yaml_ng::Deserializer::from_str(&rendered) {
            read.push(Value::deserialize(document)?);
        }
        assert_eq!(read, built_objects(&manifest)?, "{name}:\n{rendered}");
    }
    Ok(())
}

#[test]
#[ignore = "needs PyYAML from the kubernetes-validate venv (STRATA_KUBERNETES_VALIDATE); run by cargo xtask test"]
fn pyyaml_reads_the_built_objects() -> TestResult {
    let python = strata_testing::tools::venv_python()?;
    let mut checked = 0;
    for (name, manifest) in manifests()? {
        let rendered = render_manifest::<ZookeeperOperator>(&manifest)?.yaml;
        let built = Value::Array(built_objects(&manifest)?);
        let read =
            read_with_pyyaml(&python, &rendered).map_err(|error| format!("{name}: {error}"))?;
        for (loader, objects) in read {
            assert_eq!(
                objects, built,
                "{name} read by PyYAML's {loader}:\n{rendered}"
            );
            checked += 1;
        }
    }
    eprintln!("PyYAML read {checked} renderings back as the built objects");
    Ok(())
}

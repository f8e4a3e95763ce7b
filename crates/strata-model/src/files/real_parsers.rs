//! The writers' output read back by the real parsers: `java.util.Properties.load` and
//! Java's XML parser (in a JVM), and a real Python interpreter.
//!
//! They need Java (`STRATA_JAVA`) and Python (the `python` of the kubernetes-validate
//! venv, `STRATA_KUBERNETES_VALIDATE`), which `cargo xtask tools` provides, so they are
//! ignored by plain `cargo test` and run by `cargo xtask test`.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use super::python::PyValue;
use super::{hadoop_xml, java_properties, python};
use strata_testing::tools::{self, JAVA, tool};

fn hex(text: &str) -> String {
    text.bytes().map(|byte| format!("{byte:02x}")).collect()
}

/// Runs a single-file Java program `source` (class `Read`) with `input` as argument and
/// returns its standard output.
fn run_java(source: &str, input: &str) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    let program = dir.path().join("Read.java");
    std::fs::write(&program, source).expect("write program");
    let file = dir.path().join("input");
    std::fs::write(&file, input).expect("write input");
    let output = Command::new(tool(JAVA))
        .arg(&program)
        .arg(&file)
        .output()
        .expect("run java");
    assert!(
        output.status.success(),
        "java failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("utf-8")
}

/// `name-hex=value-hex` lines, sorted, as the Java programs print them.
fn expected_lines(entries: &[(&str, &str)]) -> Vec<String> {
    let mut lines: Vec<String> = entries
        .iter()
        .map(|(key, value)| format!("{}={}", hex(key), hex(value)))
        .collect();
    lines.sort();
    lines
}

fn sorted_lines(output: &str) -> Vec<String> {
    let mut lines: Vec<String> = output.lines().map(str::to_owned).collect();
    lines.sort();
    lines
}

const PRINT_HEX: &str = r#"
    static String hex(String text) throws Exception {
        StringBuilder out = new StringBuilder();
        for (byte b : text.getBytes("UTF-8")) out.append(String.format("%02x", b));
        return out.toString();
    }
"#;

#[test]
#[ignore = "needs Java (STRATA_JAVA); run by cargo xtask test"]
fn java_reads_every_property_back_unchanged() {
    let entries = java_properties::tests::tricky();
    let text = java_properties::write("Rendered by a test", entries.clone()).expect("write");
    let source = format!(
        r#"import java.io.FileInputStream;
import java.util.Properties;
public class Read {{
{PRINT_HEX}
    public static void main(String[] args) throws Exception {{
        Properties properties = new Properties();
        try (FileInputStream in = new FileInputStream(args[0])) {{ properties.load(in); }}
        for (String key : properties.stringPropertyNames())
            System.out.println(hex(key) + "=" + hex(properties.getProperty(key)));
    }}
}}"#
    );
    assert_eq!(
        sorted_lines(&run_java(&source, &text)),
        expected_lines(&entries),
        "{text}"
    );
}

#[test]
#[ignore = "needs Java (STRATA_JAVA); run by cargo xtask test"]
fn javas_xml_parser_reads_every_property_back_unchanged() {
    let entries = hadoop_xml::tests::tricky();
    let text = hadoop_xml::write(entries.clone()).expect("write");
    let source = format!(
        r#"import java.io.File;
import javax.xml.parsers.DocumentBuilderFactory;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;
public class Read {{
{PRINT_HEX}
    public static void main(String[] args) throws Exception {{
        NodeList properties = DocumentBuilderFactory.newInstance().newDocumentBuilder()
            .parse(new File(args[0])).getElementsByTagName("property");
        for (int i = 0; i < properties.getLength(); i++) {{
            Element property = (Element) properties.item(i);
            String name = property.getElementsByTagName("name").item(0).getTextContent();
            String value = property.getElementsByTagName("value").item(0).getTextContent();
            System.out.println(hex(name) + "=" + hex(value));
        }}
    }}
}}"#
    );
    assert_eq!(
        sorted_lines(&run_java(&source, &text)),
        expected_lines(&entries),
        "{text}"
    );
}

fn venv_python() -> PathBuf {
    tools::venv_python().unwrap_or_else(|missing| panic!("{missing}"))
}

fn to_json(value: &PyValue) -> serde_json::Value {
    match value {
        PyValue::None => serde_json::Value::Null,
        PyValue::Bool(flag) => (*flag).into(),
        PyValue::Int(number) => (*number).into(),
        PyValue::Float(number) => (*number).into(),
        PyValue::Str(text) => text.clone().into(),
        PyValue::List(items) => items.iter().map(to_json).collect(),
        PyValue::Dict(entries) => entries
            .iter()
            .map(|(key, item)| (key.clone(), to_json(item)))
            .collect::<serde_json::Map<_, _>>()
            .into(),
        PyValue::Expression(_) => serde_json::Value::Null,
    }
}

#[test]
#[ignore = "needs Python (the kubernetes-validate venv, STRATA_KUBERNETES_VALIDATE); run by cargo xtask test"]
fn python_reads_every_assignment_back_and_nothing_else() {
    let entries = python::tests::tricky();
    let text = python::write(
        "Rendered by a test",
        &["import os"],
        entries.iter().map(|(name, value)| (*name, value)),
    )
    .expect("write");
    let dir = tempfile::tempdir().expect("tempdir");
    let module = dir.path().join("superset_config.py");
    std::fs::write(&module, &text).expect("write module");
    let output = Command::new(venv_python())
        .arg("-c")
        .arg(
            "import json, sys\nnames = {}\nexec(open(sys.argv[1], encoding='utf-8').read(), names)\n\
             print(json.dumps({k: v for k, v in names.items() if k.isupper()}))",
        )
        .arg(&module)
        .output()
        .expect("run python");
    assert!(
        output.status.success(),
        "python failed: {}\n{text}",
        String::from_utf8_lossy(&output.stderr)
    );
    let read: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("python printed JSON");
    let expected: serde_json::Value = entries
        .iter()
        .map(|(name, value)| ((*name).to_owned(), to_json(value)))
        .collect::<serde_json::Map<_, _>>()
        .into();
    assert_eq!(read, expected, "{text}");
    let expected_names: BTreeMap<&str, ()> = entries.iter().map(|(name, _)| (*name, ())).collect();
    assert_eq!(
        read.as_object().map(|names| names.len()),
        Some(expected_names.len()),
        "no value may define a name of its own: {text}"
    );
}

/// What Python's own parser makes of `NAME = <text>` for each text: `one` for
/// exactly one assignment to `NAME` alone, `other` for anything else it
/// accepts, `syntax` for a syntax error.
fn python_verdicts(texts: &[&str]) -> Vec<String> {
    let script = "import ast, json, sys\n\
                  out = []\n\
                  for text in json.load(sys.stdin):\n\
                  \x20   try:\n\
                  \x20       body = ast.parse('NAME = ' + text).body\n\
                  \x20   except SyntaxError:\n\
                  \x20       out.append('syntax'); continue\n\
                  \x20   one = len(body) == 1 and isinstance(body[0], ast.Assign) and len(body[0].targets) == 1\n\
                  \x20   out.append('one' if one else 'other')\n\
                  print(json.dumps(out))";
    let mut child = Command::new(venv_python())
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("run python");
    {
        use std::io::Write as _;
        let mut stdin = child.stdin.take().expect("stdin");
        stdin
            .write_all(serde_json::to_string(texts).expect("JSON").as_bytes())
            .expect("write texts");
    }
    let output = child.wait_with_output().expect("python ends");
    assert!(output.status.success(), "python failed");
    serde_json::from_slice(&output.stdout).expect("python printed JSON")
}

#[test]
#[ignore = "needs Python (the kubernetes-validate venv, STRATA_KUBERNETES_VALIDATE); run by cargo xtask test"]
fn python_agrees_with_the_expression_scanner() {
    use super::python::expression::ExpressionProblem;
    use super::python::expression::tests::{ACCEPTED, REFUSED};

    let accepted = python_verdicts(ACCEPTED);
    for (text, verdict) in ACCEPTED.iter().zip(&accepted) {
        assert_eq!(
            verdict, "one",
            "accepted, but Python reads {text:?} as {verdict}"
        );
    }
    // Refused although Python reads one assignment: a lambda default at the top
    // level looks like `=`; the message says to add parentheses.
    let conservative = ["lambda retries=3: retries"];
    let refused: Vec<&str> = REFUSED
        .iter()
        .filter(|(_, problem)| *problem != ExpressionProblem::Empty)
        .map(|(text, _)| *text)
        .collect();
    for (text, verdict) in refused.iter().zip(python_verdicts(&refused)) {
        assert!(
            verdict != "one" || conservative.contains(text),
            "refused, but Python reads {text:?} as one assignment"
        );
    }
}

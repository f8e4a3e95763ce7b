//! The CRDs on the real API server (`strata_testing::control_plane`): every example is
//! accepted by a server-side apply with strict field validation, and every typo of one
//! table is refused both by the operator's offline `render` and by the API server,
//! each naming the same field. So `render` in CI and `kubectl apply` in a cluster agree.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod real;

use std::fs;

use hdfs_operator::HdfsOperator;
use kube::api::PatchParams;
use kube::core::params::ValidationDirective;
use serde_json::Value;
use strata_operator::cli::render_file;
use strata_operator::render::RenderError;
use superset_operator::SupersetOperator;
use trino_operator::TrinoOperator;
use xtask::commands::workspace_root;
use zookeeper_operator::ZookeeperOperator;

type Render = fn(&str) -> Result<String, RenderError>;

/// One typo: `key` added to the object at `at` (a JSON pointer) in the first document
/// of `example`; both checks must name `field`.
struct Typo {
    name: &'static str,
    example: &'static str,
    render: Render,
    at: &'static str,
    key: &'static str,
    field: &'static str,
}

const TYPOS: &[Typo] = &[
    Typo {
        name: "a role group's replica count misspelt",
        example: "examples/zookeeper/simple-cluster.yaml",
        render: render_file::<ZookeeperOperator>,
        at: "/spec/servers/roleGroups/default",
        key: "replica",
        field: "spec.servers.roleGroups.default.replica",
    },
    Typo {
        name: "metadata.lables",
        example: "examples/zookeeper/simple-cluster.yaml",
        render: render_file::<ZookeeperOperator>,
        at: "/metadata",
        key: "lables",
        field: "metadata.lables",
    },
    Typo {
        name: "a misspelt cluster setting",
        example: "examples/hdfs/simple-hdfs.yaml",
        render: render_file::<HdfsOperator>,
        at: "/spec/clusterConfig",
        key: "dfsReplicaton",
        field: "spec.clusterConfig.dfsReplicaton",
    },
    Typo {
        name: "a misspelt role config field",
        example: "examples/superset/simple-superset.yaml",
        render: render_file::<SupersetOperator>,
        at: "/spec/nodes/config",
        key: "worker",
        field: "spec.nodes.config.worker",
    },
    Typo {
        name: "a misspelt image field",
        example: "examples/trino/simple-trino.yaml",
        render: render_file::<TrinoOperator>,
        at: "/spec/image",
        key: "productVersoin",
        field: "spec.image.productVersoin",
    },
    Typo {
        name: "specs at the top level",
        example: "examples/hdfs/simple-hdfs.yaml",
        render: render_file::<HdfsOperator>,
        at: "",
        key: "specs",
        field: "specs",
    },
];

/// A server-side apply in dry-run with strict field validation, as `kubectl apply
/// --server-side --validate=strict --dry-run=server` sends it.
async fn strict_dry_run(client: &kube::Client, document: &Value) -> Result<(), String> {
    let mut params = PatchParams::apply("strata-crd-check").force();
    params.dry_run = true;
    params.field_validation = Some(ValidationDirective::Strict);
    real::apply(client, document, &params).await
}

#[tokio::test]
#[ignore = "needs the control plane (STRATA_CONTROL_PLANE_BIN); run by cargo xtask test"]
async fn render_and_the_api_server_accept_the_examples_and_refuse_the_same_typos() {
    let (_control_plane, client) = real::with_every_crd().await;

    let mut problems = Vec::new();
    let mut examples: Vec<String> = fs::read_dir(workspace_root().join("examples"))
        .expect("examples/")
        .flat_map(|entry| fs::read_dir(entry.expect("an entry").path()).expect("a directory"))
        .map(|entry| entry.expect("an entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .map(|path| {
            path.strip_prefix(workspace_root())
                .expect("under the workspace")
                .display()
                .to_string()
        })
        .collect();
    examples.sort();
    assert!(examples.len() >= 6, "{examples:?}");
    for example in &examples {
        for document in real::documents(example) {
            if let Err(error) = strict_dry_run(&client, &document).await {
                problems.push(format!("{example}: refused by the API server: {error}"));
            }
        }
    }

    for typo in TYPOS {
        let mut document = real::documents(typo.example).remove(0);
        document
            .pointer_mut(typo.at)
            .and_then(Value::as_object_mut)
            .unwrap_or_else(|| panic!("{}: {} is an object", typo.name, typo.at))
            .insert(typo.key.to_owned(), Value::from(1));
        let yaml = serde_yaml_ng::to_string(&document).expect("YAML");
        match (typo.render)(&yaml) {
            Ok(_) => problems.push(format!("{}: render accepted it", typo.name)),
            Err(error) if !error.to_string().contains(typo.field) => problems.push(format!(
                "{}: render refused it without naming {}: {error}",
                typo.name, typo.field
            )),
            Err(_) => {}
        }
        match strict_dry_run(&client, &document).await {
            Ok(()) => problems.push(format!("{}: the API server accepted it", typo.name)),
            Err(error) if !error.contains(typo.field) => problems.push(format!(
                "{}: the API server refused it without naming {}: {error}",
                typo.name, typo.field
            )),
            Err(_) => {}
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

//! Offline rendering: read custom resources from YAML, print the objects the
//! operator would apply as sorted, multi-document YAML.
//!
//! `<operator> render -f FILE` is meant to sit in front of `kubectl apply`, so it refuses
//! what `kubectl apply` (with the default strict field validation) would refuse, and says
//! why. The rules, in the order [`render_manifest`] applies them:
//!
//! 1. **Reading.** The file is a YAML stream. A document that is not YAML stops the render
//!    (`document N is not valid YAML`). Empty documents (a stray `---`) are dropped. A
//!    `kind: List` with `apiVersion: v1`, as `kubectl get -o yaml` writes, is replaced by
//!    its items, which are rendered like documents of their own (`document 1, item 2`);
//!    lists inside lists are expanded too. Other `...List` kinds are not expanded.
//! 2. **Checking.** Every object must be one of the operator's kinds in a version its CRD
//!    serves (a misspelt kind gets a "did you mean"), must have `metadata.name`, and must
//!    have no field its CRD's `openAPIV3Schema` does not specify (`x-kubernetes-preserve-
//!    unknown-fields` and `additionalProperties` are honoured; `metadata` is checked
//!    against `ObjectMeta`). Objects of other kinds are refused rather than ignored: a
//!    render that silently drops part of the file hides mistakes, and a pipeline that
//!    wants other objects applies them itself. All problems of all documents are reported
//!    together, and nothing is printed on stdout.
//! 3. **Rendering.** The operator deserialises its kinds; a type error names the field and
//!    the expected type in manifest terms (`spec.servers.roleGroups.default.replicas:
//!    expected an integer between 0 and 65535, got -1`). The operator may skip a resource
//!    it cannot render offline (a ZNode whose cluster is not in the file); each skip is a
//!    [`Skipped`] the CLI prints on stderr while the rest is rendered and the exit code is 0.
//! 4. **Nothing rendered** is an error: an empty file, an empty `List`, or a file whose
//!    every resource was skipped exits non-zero with the reasons.
//! 5. **Writing.** Objects are sorted by kind, namespace and name and written as YAML that
//!    YAML 1.1 readers (kubectl, PyYAML) and YAML 1.2 readers read as the same JSON: every
//!    string some reader would take for a boolean, number, null or timestamp is quoted.

mod input;
mod scalar;
mod schema;
mod typed;
mod yaml;

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;
use serde_json::Value;

use crate::apply::{DesiredObject, DesiredObjects};
use crate::cli::Operator;
use crate::error::ReconcileError;

/// Why a manifest file could not be rendered.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// The file is not YAML.
    #[error("document {index} is not valid YAML: {source}")]
    Yaml {
        /// Position of the document in the file, from 1.
        index: usize,
        /// The parser error.
        source: serde_yaml_ng::Error,
    },
    /// Documents `kubectl apply` would refuse, or that are not the operator's kinds.
    #[error("{}", problems_text(problems))]
    Rejected {
        /// Every problem found, in file order.
        problems: Vec<Problem>,
    },
    /// A custom resource does not deserialise into its type, or fails validation.
    #[error("{kind} {name}: {message}")]
    InvalidResource {
        /// The resource's kind.
        kind: String,
        /// The resource's name.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// The file rendered no object at all.
    #[error("{}", nothing_text(skipped))]
    NothingRendered {
        /// Resources the operator skipped, with the reasons; empty when the file holds none.
        skipped: Vec<Skipped>,
    },
    /// One of the operator's CRDs has a schema that is not JSON (a bug in the operator).
    #[error("the schema of CRD {crd} cannot be read: {source}")]
    CrdSchema {
        /// The CRD's name.
        crd: String,
        /// Why it could not be converted.
        source: serde_json::Error,
    },
}

fn problems_text(problems: &[Problem]) -> String {
    let mut text = match problems.len() {
        1 => "1 problem, nothing rendered:".to_owned(),
        count => format!("{count} problems, nothing rendered:"),
    };
    for problem in problems {
        text.push_str("\n  ");
        text.push_str(&problem.to_string());
    }
    text
}

fn nothing_text(skipped: &[Skipped]) -> String {
    if skipped.is_empty() {
        return "nothing to render: the file holds no objects".to_owned();
    }
    let mut text = "nothing to render: every resource was skipped:".to_owned();
    for skip in skipped {
        text.push_str("\n  ");
        text.push_str(&skip.to_string());
    }
    text
}

/// Something wrong with one document of the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// Where: `document 2` or `document 2 (ZookeeperCluster default/simple-zk)`.
    pub document: String,
    /// What, starting with the field path where there is one.
    pub message: String,
}

impl Problem {
    fn new(document: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            document: document.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}: {}", self.document, self.message)
    }
}

/// A resource the operator could not render offline, and why; not an error, since the
/// operator would render it in a cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    /// The resource's kind.
    pub kind: String,
    /// `namespace/name`.
    pub name: String,
    /// Why it was skipped.
    pub reason: String,
}

impl fmt::Display for Skipped {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{} {}: {}", self.kind, self.name, self.reason)
    }
}

/// What an operator rendered from the documents of its kinds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Rendered {
    /// Every object it would apply, as JSON.
    pub objects: Vec<Value>,
    /// Resources it could not render offline.
    pub skipped: Vec<Skipped>,
}

/// A rendered manifest file.
#[derive(Clone, Debug, PartialEq)]
pub struct RenderedManifest {
    /// The objects as sorted multi-document YAML.
    pub yaml: String,
    /// The objects as JSON, in the order of `yaml`.
    pub objects: Vec<Value>,
    /// Resources that were skipped, for stderr.
    pub skipped: Vec<Skipped>,
}

/// The served kinds and schemas of operator `O`, derived from its CRDs once per
/// process: generating the CRDs from the Rust types costs more than rendering a
/// cluster, and they cannot change while the process runs.
fn kinds_of<O: Operator>() -> Result<std::sync::Arc<input::Kinds>, RenderError> {
    static KINDS: std::sync::LazyLock<
        std::sync::Mutex<std::collections::BTreeMap<&'static str, std::sync::Arc<input::Kinds>>>,
    > = std::sync::LazyLock::new(Default::default);
    let mut cache = KINDS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(kinds) = cache.get(O::NAME) {
        return Ok(kinds.clone());
    }
    let kinds = std::sync::Arc::new(input::Kinds::new(O::NAME, &O::crds())?);
    cache.insert(O::NAME, kinds.clone());
    Ok(kinds)
}

/// Renders the manifest `yaml` for operator `O` by the rules of this module.
pub fn render_manifest<O: Operator>(yaml: &str) -> Result<RenderedManifest, RenderError> {
    render_manifest_for::<O>(yaml, crate::pod_security::PodSecurity::Standard)
}

/// [`render_manifest`] as an operator with the pod security policy `policy` would
/// apply it ([`crate::pod_security`]).
pub fn render_manifest_for<O: Operator>(
    yaml: &str,
    policy: crate::pod_security::PodSecurity,
) -> Result<RenderedManifest, RenderError> {
    let (documents, mut problems) = input::read(yaml)?;
    let kinds = kinds_of::<O>()?;
    for document in &documents {
        problems.extend(kinds.check(document));
    }
    if !problems.is_empty() {
        return Err(RenderError::Rejected { problems });
    }
    let documents: Vec<Value> = documents
        .into_iter()
        .map(|document| document.value)
        .collect();
    if documents.is_empty() {
        return Err(RenderError::NothingRendered {
            skipped: Vec::new(),
        });
    }
    let Rendered { objects, skipped } = O::render(&documents)?;
    if objects.is_empty() {
        return Err(RenderError::NothingRendered { skipped });
    }
    let mut objects = sorted(objects);
    for object in &mut objects {
        policy.apply_to_value(object);
    }
    Ok(RenderedManifest {
        yaml: multi_document_yaml(&objects),
        objects,
        skipped,
    })
}

/// Splits a multi-document YAML string into JSON values, skipping empty
/// documents. No other check is made; [`render_manifest`] makes them.
pub fn parse_documents(yaml: &str) -> Result<Vec<Value>, RenderError> {
    let mut documents = Vec::new();
    for (index, document) in serde_yaml_ng::Deserializer::from_str(yaml).enumerate() {
        let value = Value::deserialize(document).map_err(|source| RenderError::Yaml {
            index: index + 1,
            source,
        })?;
        if !value.is_null() {
            documents.push(value);
        }
    }
    Ok(documents)
}

/// Namespace of rendered resources that name none, as `kubectl apply` would
/// place them.
pub const DEFAULT_NAMESPACE: &str = "default";

/// Documents of one namespaced kind, deserialised into its type, in
/// [`DEFAULT_NAMESPACE`] when they name no namespace.
///
/// Render inputs usually hold several kinds (a cluster and its ZNodes, a
/// Trino cluster and its catalogs); each operator picks out the ones it knows.
/// A type error names the field path and the expected type in manifest terms.
pub fn documents_of_kind<K>(documents: &[Value]) -> Result<Vec<K>, RenderError>
where
    K: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + serde::de::DeserializeOwned,
{
    let api_version = K::api_version(&());
    let kind = K::kind(&());
    documents
        .iter()
        .filter(|document| document["apiVersion"] == *api_version && document["kind"] == *kind)
        .map(|document| {
            let mut resource: K =
                typed::deserialize(document).map_err(|message| RenderError::InvalidResource {
                    kind: kind.to_string(),
                    name: document["metadata"]["name"]
                        .as_str()
                        .unwrap_or("<unnamed>")
                        .to_owned(),
                    message,
                })?;
            resource
                .meta_mut()
                .namespace
                .get_or_insert_with(|| DEFAULT_NAMESPACE.to_owned());
            Ok(resource)
        })
        .collect()
}

/// What render builds for one resource, by the controller's own validate and
/// build steps.
#[derive(Debug)]
pub struct Built<M> {
    /// The validated model, for resources that refer to this one (a ZNode to
    /// its cluster, a catalog to its Trino cluster).
    pub model: M,
    /// The objects the apply step would get.
    pub objects: DesiredObjects,
}

/// Renders every resource of kind `K` in `documents` through `build` into
/// `rendered`, and returns their models. A resource that fails validation
/// fails the render, naming it and the condition reason it would get. A stopped
/// resource renders its workloads with 0 replicas, as the apply step writes them.
pub fn render_each<K, M>(
    documents: &[Value],
    rendered: &mut Rendered,
    mut build: impl FnMut(&K) -> Result<Built<M>, ReconcileError>,
) -> Result<Vec<M>, RenderError>
where
    K: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + crate::pipeline::Operated
        + serde::de::DeserializeOwned,
{
    let mut models = Vec::new();
    for resource in documents_of_kind::<K>(documents)? {
        let name = kube::ResourceExt::name_any(&resource);
        let built = build(&resource).map_err(|error| RenderError::refused::<K>(&name, &error))?;
        let objects = built
            .objects
            .into_objects(resource.operation_state().is_stopped())
            .map_err(|error| RenderError::invalid::<K>(&name, &error))?;
        rendered
            .objects
            .extend(objects.into_iter().map(DesiredObject::into_value));
        models.push(built.model);
    }
    Ok(models)
}

impl RenderError {
    /// A resource of kind `K` that cannot be rendered, and why.
    pub fn invalid<K: kube::Resource<DynamicType = ()>>(
        name: &str,
        error: &dyn fmt::Display,
    ) -> Self {
        Self::InvalidResource {
            kind: K::kind(&()).into_owned(),
            name: name.to_owned(),
            message: error.to_string(),
        }
    }

    /// A resource of kind `K` that a reconcile would refuse, with the
    /// condition reason and message it would report.
    pub fn refused<K: kube::Resource<DynamicType = ()>>(
        name: &str,
        error: &ReconcileError,
    ) -> Self {
        Self::invalid::<K>(
            name,
            &format_args!("{}: {}", error.reason(), error.message()),
        )
    }
}

/// Prints objects as multi-document YAML, sorted by kind, namespace and name,
/// so that the same input always gives the same bytes.
pub fn to_sorted_yaml(objects: Vec<Value>) -> String {
    multi_document_yaml(&sorted(objects))
}

/// Objects sorted by kind, namespace and name; of objects with the same key, the last wins,
/// as it would with `kubectl apply`.
fn sorted(objects: Vec<Value>) -> Vec<Value> {
    let by_key: BTreeMap<(String, String, String), Value> = objects
        .into_iter()
        .map(|object| {
            let text = |value: &Value| value.as_str().unwrap_or_default().to_owned();
            let key = (
                text(&object["kind"]),
                text(&object["metadata"]["namespace"]),
                text(&object["metadata"]["name"]),
            );
            (key, object)
        })
        .collect();
    by_key.into_values().collect()
}

fn multi_document_yaml(objects: &[Value]) -> String {
    let mut out = String::new();
    for object in objects {
        out.push_str("---\n");
        yaml::write_yaml(object, &mut out);
    }
    out
}

#[cfg(test)]
mod tests;

/// Puts the values of `sealed` (a Secret the operator makes at run time) into the
/// rendered Secret of the same name and namespace, which `render` shows without
/// them: how `cargo xtask run` and the real tests play an operator's first reconcile.
pub fn fill_rendered_secret(
    objects: &mut [Value],
    sealed: &k8s_openapi::api::core::v1::Secret,
) -> Result<(), String> {
    let value = serde_json::to_value(sealed).map_err(|error| error.to_string())?;
    let rendered = objects.iter_mut().find(|object| {
        object["kind"] == "Secret"
            && object["metadata"]["name"] == value["metadata"]["name"]
            && object["metadata"]["namespace"] == value["metadata"]["namespace"]
    });
    match rendered {
        Some(object) => {
            object["data"] = value["data"].clone();
            Ok(())
        }
        None => Err(format!(
            "the operator rendered no Secret {}",
            value["metadata"]["name"]
        )),
    }
}

//! The HTTP face of the server: a `tower::Service` that kube-client sends requests to.
//!
//! Each request is logged, run past the injected faults, routed to a verb handler under the
//! state lock, and answered with JSON (or a chunked stream of watch events).

use std::{
    convert::Infallible,
    future::Future,
    pin::Pin,
    task::{Context, Poll},
    time::Duration,
};

use bytes::Bytes;
use futures::StreamExt;
use http::{HeaderMap, Method, Request, Response, StatusCode, header};
use http_body::Frame;
use http_body_util::{BodyExt, Full, StreamBody, combinators::UnsyncBoxBody};
use serde_json::{Value, json};

use crate::{
    TestApiServer,
    apply::Part,
    fault,
    kinds::ResourceInfo,
    lock,
    read::{self, Selection, Shape},
    requests::{RequestRecord, Verb},
    route::{Query, ResourcePath, parse_path},
    status::ApiError,
    watch::{self, Start, WatchRequest},
    write::{self, Address, PatchKind, Writer},
};

/// Response body type: a complete JSON document or an endless watch stream.
pub type ResponseBody = UnsyncBoxBody<Bytes, Infallible>;

/// The `tower::Service` handed to `kube::Client::new`; see [`TestApiServer::service`].
#[derive(Clone, Debug)]
pub struct ApiService {
    server: TestApiServer,
    user: Option<String>,
}

impl ApiService {
    pub(crate) fn new(server: TestApiServer, user: Option<String>) -> Self {
        Self { server, user }
    }
}

impl tower::Service<Request<kube::client::Body>> for ApiService {
    type Response = Response<ResponseBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<kube::client::Body>) -> Self::Future {
        let server = self.server.clone();
        let user = self.user.clone();
        Box::pin(async move { Ok(handle(server, user, request).await) })
    }
}

fn json_response(code: u16, body: &Value) -> Response<ResponseBody> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())).boxed_unsync());
    *response.status_mut() =
        StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    response
}

fn error_response(error: &ApiError) -> Response<ResponseBody> {
    json_response(error.code, &error.to_status())
}

/// The RBAC verb of a request.
fn verb_of(method: &Method, path: &ResourcePath, query: &Query) -> Result<Verb, ApiError> {
    let named = path.name.is_some();
    Ok(match *method {
        Method::GET if named => Verb::Get,
        Method::GET if query.flag("watch") => Verb::Watch,
        Method::GET => Verb::List,
        Method::POST => Verb::Create,
        Method::PUT => Verb::Update,
        Method::PATCH => Verb::Patch,
        Method::DELETE if named => Verb::Delete,
        Method::DELETE => Verb::DeleteCollection,
        _ => {
            return Err(ApiError::method_not_allowed(format!(
                "method {method} is not supported"
            )));
        }
    })
}

fn header_str(headers: &HeaderMap, name: header::HeaderName) -> Option<&str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

async fn handle(
    server: TestApiServer,
    user: Option<String>,
    request: Request<kube::client::Body>,
) -> Response<ResponseBody> {
    let (parts, body) = request.into_parts();
    let query = Query::parse(parts.uri.query());
    let Some(path) = parse_path(parts.uri.path()) else {
        return non_resource(&server, parts.uri.path());
    };
    let verb = match verb_of(&parts.method, &path, &query) {
        Ok(verb) => verb,
        Err(e) => return error_response(&e),
    };
    let content_type = header_str(&parts.headers, header::CONTENT_TYPE);
    let record = RequestRecord {
        verb,
        group: path.group.clone(),
        resource: path.plural.clone(),
        subresource: path.subresource.clone(),
        namespace: path.namespace.clone(),
        name: path.name.clone(),
        field_manager: query.get("fieldManager").map(str::to_owned),
        apply: verb == Verb::Patch
            && content_type.is_some_and(|c| c.starts_with("application/apply-patch")),
        metadata_only: header_str(&parts.headers, header::ACCEPT)
            .is_some_and(|accept| accept.contains("as=PartialObjectMetadata")),
        user,
    };
    lock(&server.requests).push(record.clone());

    let decision = fault::decide(&mut lock(&server.faults), &record);
    if decision.delay > Duration::ZERO {
        tokio::time::sleep(decision.delay).await;
    }
    if let Some(code) = decision.failure {
        return error_response(&ApiError::injected(code));
    }

    let body = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) => return error_response(&ApiError::bad_request(format!("cannot read body: {e}"))),
    };
    let request = Incoming {
        verb,
        path,
        query,
        content_type: content_type.map(str::to_owned),
        shape: Shape::from_accept(header_str(&parts.headers, header::ACCEPT)),
        body,
    };
    match dispatch(&server, request) {
        Ok(Reply::Json(code, value)) => json_response(code, &value),
        Ok(Reply::Watch(watch)) => {
            let stream =
                watch::start(server.state.clone(), *watch).map(|chunk| Ok(Frame::data(chunk)));
            let mut response = Response::new(StreamBody::new(stream).boxed_unsync());
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                header::HeaderValue::from_static("application/json"),
            );
            response
        }
        Err(e) => error_response(&e),
    }
}

/// `/version` answers like a current server, and a group version's discovery
/// (`/api/v1`, `/apis/{group}/{version}`) lists the registered resources in it, so an
/// operator can tell which optional kinds (another project's CRDs) are served. Other
/// non-resource paths, and group versions with nothing registered, are 404.
fn non_resource(server: &TestApiServer, path: &str) -> Response<ResponseBody> {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let group_version = match segments.as_slice() {
        ["api", version] => Some(("", *version)),
        ["apis", group, version] => Some((*group, *version)),
        _ => None,
    };
    if let Some((group, version)) = group_version {
        let resources: Vec<Value> = lock(&server.state)
            .registry
            .in_group_version(group, version)
            .map(|info| {
                json!({
                    "name": info.plural, "singularName": "", "namespaced": info.namespaced,
                    "kind": info.kind,
                    "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
                })
            })
            .collect();
        if !resources.is_empty() {
            let group_version = if group.is_empty() {
                version.to_owned()
            } else {
                format!("{group}/{version}")
            };
            return json_response(
                200,
                &json!({
                    "kind": "APIResourceList", "apiVersion": "v1",
                    "groupVersion": group_version, "resources": resources,
                }),
            );
        }
    }
    if path == "/version" {
        let version = json!({
            "major": "1", "minor": "35", "gitVersion": "v1.35.0-strata-test",
            "gitCommit": "", "gitTreeState": "clean", "buildDate": "1970-01-01T00:00:00Z",
            "goVersion": "", "compiler": "", "platform": "linux/amd64",
        });
        return json_response(200, &version);
    }
    error_response(&ApiError::unknown_resource(path))
}

/// A request after logging and faults, ready for a verb handler.
struct Incoming {
    verb: Verb,
    path: ResourcePath,
    query: Query,
    content_type: Option<String>,
    shape: Shape,
    body: Bytes,
}

enum Reply {
    Json(u16, Value),
    Watch(Box<WatchRequest>),
}

/// Resolves the resource, checks scope and subresource, and runs the verb.
fn dispatch(server: &TestApiServer, request: Incoming) -> Result<Reply, ApiError> {
    let Incoming {
        verb,
        path,
        query,
        content_type,
        shape,
        body,
    } = request;
    let mut state = lock(&server.state);
    let url = format!("{}/{}", path.group, path.plural);
    let info = state
        .registry
        .lookup(&path.group, &path.version, &path.plural)
        .cloned()
        .ok_or_else(|| ApiError::unknown_resource(&url))?;
    let part = match path.subresource.as_deref() {
        None => Part::Main,
        Some("status") if info.status_subresource => Part::Status,
        Some(other) => return Err(ApiError::unknown_resource(&format!("{url}/{other}"))),
    };
    if verb.is_write() && query.get("dryRun").is_some() {
        return Err(ApiError::bad_request(
            "dryRun is not supported by strata-test-apiserver",
        ));
    }
    if !info.namespaced && path.namespace.is_some() {
        return Err(ApiError::unknown_resource(&url));
    }
    let namespace = path.namespace.clone().unwrap_or_default();
    if info.namespaced && namespace.is_empty() && !matches!(verb, Verb::List | Verb::Watch) {
        return Err(ApiError::method_not_allowed(format!(
            "{verb} of namespaced {url} needs a namespace in the URL"
        )));
    }
    let writer = Writer {
        field_manager: query.get("fieldManager"),
        force: query.flag("force"),
    };
    let name = path.name.clone().unwrap_or_default();
    let address = Address {
        info: &info,
        namespace: &namespace,
        name: &name,
        part,
    };
    let selection = || Selection::from_query(path.namespace.clone(), &query);

    let reply = match verb {
        Verb::Get => Reply::Json(
            200,
            read::get_shaped(&state, &info, &namespace, &name, shape)?,
        ),
        Verb::List => Reply::Json(
            200,
            read::list(&state, &info, &selection()?, &query, shape)?,
        ),
        Verb::Watch => Reply::Watch(Box::new(watch_request(&info, selection()?, &query, shape)?)),
        Verb::Create => {
            if part != Part::Main {
                return Err(ApiError::method_not_allowed(
                    "create is not allowed on subresources",
                ));
            }
            let object = write::parse_object(&body)?;
            if object
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str)
                .is_some_and(|rv| !rv.is_empty())
            {
                return Err(ApiError::new(
                    500,
                    "InternalError",
                    "resourceVersion should not be set on objects to be created",
                ));
            }
            let created = write::create_object(
                &mut state,
                &info,
                &namespace,
                object,
                Part::Main,
                Some(writer.manager()),
            )?;
            Reply::Json(201, shape.render(&created))
        }
        Verb::Update => {
            let object = write::parse_object(&body)?;
            let updated = write::update(&mut state, address, object, &writer)?;
            Reply::Json(200, shape.render(&updated))
        }
        Verb::Patch => {
            let kind = PatchKind::from_content_type(content_type.as_deref())?;
            let (patched, created) = write::patch(&mut state, address, kind, &body, &writer)?;
            Reply::Json(if created { 201 } else { 200 }, shape.render(&patched))
        }
        Verb::Delete => {
            let options = delete_options(&body)?;
            let propagation = query.get("propagationPolicy");
            Reply::Json(
                200,
                write::delete(&mut state, address, &options, propagation)?,
            )
        }
        Verb::DeleteCollection => {
            let options = delete_options(&body)?;
            let selection = selection()?;
            let targets: Vec<(String, String)> = state
                .store(&info.key())
                .map(|s| {
                    s.objects
                        .iter()
                        .filter(|(_, o)| selection.matches(o))
                        .map(|(id, _)| id.clone())
                        .collect()
                })
                .unwrap_or_default();
            for (ns, name) in targets {
                let target = Address {
                    info: &info,
                    namespace: &ns,
                    name: &name,
                    part: Part::Main,
                };
                write::delete(&mut state, target, &options, query.get("propagationPolicy"))?;
            }
            Reply::Json(
                200,
                json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}),
            )
        }
    };
    Ok(reply)
}

fn delete_options(body: &[u8]) -> Result<Value, ApiError> {
    if body.is_empty() {
        return Ok(json!({}));
    }
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("invalid DeleteOptions: {e}")))
}

/// Reads the watch parameters kube-runtime's watcher sends.
fn watch_request(
    info: &ResourceInfo,
    selection: Selection,
    query: &Query,
    shape: Shape,
) -> Result<WatchRequest, ApiError> {
    let start = match query.get("resourceVersion") {
        None | Some("0") => Start::CurrentState,
        Some(rv) => Start::After(
            rv.parse()
                .map_err(|_| ApiError::bad_request(format!("invalid resourceVersion {rv:?}")))?,
        ),
    };
    Ok(WatchRequest {
        info: info.clone(),
        selection,
        start,
        bookmarks: query.flag("allowWatchBookmarks"),
        send_initial_events: query.flag("sendInitialEvents"),
        timeout: Duration::from_secs(query.number("timeoutSeconds").unwrap_or(1800)),
        shape,
    })
}

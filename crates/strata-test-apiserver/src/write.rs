//! The write verbs: create, update, patch (merge, strategic, JSON, apply) and delete.
//!
//! All of them end in [`store_update`] or [`create_object`], which enforce the invariants a
//! client may rely on: system metadata is server-owned, `.status` only changes through
//! `/status` for kinds with a status subresource, and no-op writes change nothing.

use serde_json::{Map, Value, json};

use crate::{
    apply::{Ownership, Part, scoped_config},
    gc::{self, Propagation},
    kinds::ResourceInfo,
    object::{meta_str, now_timestamp, prune_empty_metadata, set_meta, strip_nulls},
    patch::{json_patch, merge_patch},
    status::{ApiError, deleted_status},
    store::State,
};

/// Metadata fields only the server sets; client-supplied values are ignored.
const SYSTEM_METADATA: [&str; 8] = [
    "name",
    "namespace",
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
    "resourceVersion",
];

/// The object a write addresses.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Address<'a> {
    pub(crate) info: &'a ResourceInfo,
    /// "" for cluster-scoped resources.
    pub(crate) namespace: &'a str,
    pub(crate) name: &'a str,
    pub(crate) part: Part,
}

/// The patch formats of the `Content-Type` header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PatchKind {
    Merge,
    /// Served as a merge patch: no Go struct tags to derive list strategies from.
    Strategic,
    Json,
    Apply,
}

impl PatchKind {
    /// Maps a `Content-Type` header to a patch kind; unknown types are a 415.
    pub(crate) fn from_content_type(content_type: Option<&str>) -> Result<Self, ApiError> {
        let mime = content_type
            .and_then(|c| c.split(';').next())
            .map(str::trim)
            .unwrap_or_default();
        match mime {
            "application/merge-patch+json" => Ok(Self::Merge),
            "application/strategic-merge-patch+json" => Ok(Self::Strategic),
            "application/json-patch+json" => Ok(Self::Json),
            "application/apply-patch+yaml" | "application/apply-patch+cbor" => Ok(Self::Apply),
            other => Err(ApiError::new(
                415,
                "UnsupportedMediaType",
                format!("the body of the request was in an unknown format: {other}"),
            )),
        }
    }
}

/// Who writes and how: the `fieldManager` and `force` query parameters.
#[derive(Clone, Debug)]
pub(crate) struct Writer<'a> {
    /// `fieldManager`, absent when the client did not send one.
    pub(crate) field_manager: Option<&'a str>,
    pub(crate) force: bool,
}

impl Writer<'_> {
    /// The manager recorded for non-apply writes (the real server derives it from the user agent).
    pub(crate) fn manager(&self) -> &str {
        self.field_manager.unwrap_or("unknown")
    }
}

/// Parses a JSON request body that must be an object.
pub(crate) fn parse_object(body: &[u8]) -> Result<Value, ApiError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("invalid JSON body: {e}")))?;
    require_object(value)
}

fn require_object(value: Value) -> Result<Value, ApiError> {
    if value.is_object() {
        Ok(value)
    } else {
        Err(ApiError::bad_request(
            "the request body must be a JSON object",
        ))
    }
}

/// Sets or removes a top-level field.
fn set_root(object: &mut Value, field: &str, value: Option<Value>) {
    if let Some(map) = object.as_object_mut() {
        match value {
            Some(v) => {
                map.insert(field.to_owned(), v);
            }
            None => {
                map.remove(field);
            }
        }
    }
}

/// Rejects a body whose `apiVersion`/`kind` name another resource.
fn check_type(info: &ResourceInfo, body: &Value, required: bool) -> Result<(), ApiError> {
    let api_version = body.get("apiVersion").and_then(Value::as_str);
    let kind = body.get("kind").and_then(Value::as_str);
    let wrong = |found: Option<&str>, expected: &str| found.map_or(required, |f| f != expected);
    if wrong(api_version, &info.api_version()) || wrong(kind, &info.kind) {
        return Err(ApiError::bad_request(format!(
            "invalid object type: {}, Kind={} (expected {}, Kind={})",
            api_version.unwrap_or_default(),
            kind.unwrap_or_default(),
            info.api_version(),
            info.kind
        )));
    }
    Ok(())
}

/// Rejects a body whose namespace differs from the URL's.
fn check_namespace(body: &Value, namespace: &str) -> Result<(), ApiError> {
    match meta_str(body, "namespace") {
        Some(ns) if !ns.is_empty() && !namespace.is_empty() && ns != namespace => {
            Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ))
        }
        _ => Ok(()),
    }
}

/// Five characters from the alphabet the real server uses for `generateName`.
fn generated_suffix(serial: u64) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut n = serial.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (0..5)
        .map(|_| {
            let index = usize::try_from(n % 27).unwrap_or_default();
            n /= 27;
            char::from(ALPHABET.get(index).copied().unwrap_or(b'b'))
        })
        .collect()
}

/// Stores a new object: assigns name, uid, timestamps, generation 1 and a resourceVersion.
///
/// With `Part::Main` the status of kinds with a status subresource is dropped, like the real
/// create strategies do; `Part::Whole` (direct test access) keeps it and keeps a given uid.
pub(crate) fn create_object(
    state: &mut State,
    info: &ResourceInfo,
    namespace: &str,
    mut body: Value,
    part: Part,
    manager: Option<&str>,
) -> Result<Value, ApiError> {
    body = require_object(body)?;
    strip_nulls(&mut body);
    check_type(info, &body, false)?;
    check_namespace(&body, namespace)?;
    let serial = state.next_serial();
    let name = match (meta_str(&body, "name"), meta_str(&body, "generateName")) {
        (Some(name), _) if !name.is_empty() => name.to_owned(),
        (_, Some(prefix)) if !prefix.is_empty() => format!("{prefix}{}", generated_suffix(serial)),
        _ => {
            return Err(ApiError::invalid(
                info,
                "",
                "metadata.name: Required value: name or generateName is required",
            ));
        }
    };
    if state.object(&info.key(), namespace, &name).is_some() {
        return Err(ApiError::already_exists(info, &name));
    }

    set_root(&mut body, "apiVersion", Some(json!(info.api_version())));
    set_root(&mut body, "kind", Some(json!(info.kind)));
    let keep_given = part == Part::Whole;
    let given = |field: &str| {
        meta_str(&body, field)
            .filter(|_| keep_given)
            .map(|v| json!(v))
    };
    let uid =
        given("uid").unwrap_or_else(|| json!(format!("00000000-0000-4000-8000-{serial:012x}")));
    let created = given("creationTimestamp").unwrap_or_else(now_timestamp);
    let deletion = given("deletionTimestamp");
    set_meta(&mut body, "name", Some(json!(name)));
    set_meta(
        &mut body,
        "namespace",
        (!namespace.is_empty()).then(|| json!(namespace)),
    );
    set_meta(&mut body, "uid", Some(uid.clone()));
    set_meta(&mut body, "creationTimestamp", Some(created));
    set_meta(&mut body, "deletionTimestamp", deletion);
    set_meta(&mut body, "generation", Some(json!(1)));
    for dropped in [
        "resourceVersion",
        "deletionGracePeriodSeconds",
        "managedFields",
        "selfLink",
    ] {
        set_meta(&mut body, dropped, None);
    }
    if part == Part::Main && info.status_subresource {
        set_root(&mut body, "status", None);
    }
    prune_empty_metadata(&mut body);
    if let (Some(manager), Some(uid)) = (manager, uid.as_str()) {
        state
            .ownership_mut(uid)
            .record_update(manager, &Value::Null, &body);
    }
    Ok(state.put(&info.key(), body, None))
}

/// Stores `candidate` as the next version of `old`, keeping what the client may not change.
pub(crate) fn store_update(
    state: &mut State,
    address: Address<'_>,
    old: Value,
    mut candidate: Value,
    manager: Option<&str>,
) -> Value {
    strip_nulls(&mut candidate);
    let mut new = match address.part {
        Part::Status => {
            let mut merged = old.clone();
            set_root(&mut merged, "status", candidate.get("status").cloned());
            merged
        }
        Part::Main if address.info.status_subresource => {
            set_root(&mut candidate, "status", old.get("status").cloned());
            candidate
        }
        Part::Main | Part::Whole => candidate,
    };
    for field in SYSTEM_METADATA {
        set_meta(
            &mut new,
            field,
            old.get("metadata").and_then(|m| m.get(field)).cloned(),
        );
    }
    set_meta(&mut new, "managedFields", None);
    set_meta(&mut new, "selfLink", None);
    set_root(
        &mut new,
        "apiVersion",
        Some(json!(address.info.api_version())),
    );
    set_root(&mut new, "kind", Some(json!(address.info.kind)));
    prune_empty_metadata(&mut new);

    if let (Some(manager), Some(uid)) = (manager, meta_str(&old, "uid").map(str::to_owned)) {
        state.ownership_mut(&uid).record_update(manager, &old, &new);
    }
    let key = address.info.key();
    if gc::is_released(&new) {
        return gc::remove_released(state, &key, new);
    }
    state.put(&key, new, Some(old))
}

fn existing(state: &State, address: Address<'_>) -> Result<Value, ApiError> {
    state
        .object(&address.info.key(), address.namespace, address.name)
        .cloned()
        .ok_or_else(|| ApiError::not_found(address.info, address.name))
}

/// Optimistic concurrency: a resourceVersion in the request must match the stored one.
fn check_resource_version(
    address: Address<'_>,
    requested: &Value,
    old: &Value,
) -> Result<(), ApiError> {
    match meta_str(requested, "resourceVersion") {
        Some(rv) if !rv.is_empty() && Some(rv) != meta_str(old, "resourceVersion") => {
            Err(ApiError::conflict(
                address.info,
                address.name,
                "the object has been modified; please apply your changes to the latest version and try again",
            ))
        }
        _ => Ok(()),
    }
}

fn check_name(address: Address<'_>, body: &Value) -> Result<(), ApiError> {
    match meta_str(body, "name") {
        Some(name) if !name.is_empty() && name != address.name => {
            Err(ApiError::bad_request(format!(
                "the name of the object ({name}) does not match the name on the URL ({})",
                address.name
            )))
        }
        _ => Ok(()),
    }
}

/// PUT: replaces the object (or its status), conditional on `metadata.resourceVersion` if set.
pub(crate) fn update(
    state: &mut State,
    address: Address<'_>,
    body: Value,
    writer: &Writer<'_>,
) -> Result<Value, ApiError> {
    let body = require_object(body)?;
    check_type(address.info, &body, false)?;
    check_name(address, &body)?;
    check_namespace(&body, address.namespace)?;
    let old = existing(state, address)?;
    let has_version = meta_str(&body, "resourceVersion").is_some_and(|rv| !rv.is_empty());
    if !has_version && !address.info.allow_unconditional_update {
        return Err(ApiError::invalid(
            address.info,
            address.name,
            "metadata.resourceVersion: Invalid value: 0x0: must be specified for an update",
        ));
    }
    check_resource_version(address, &body, &old)?;
    Ok(store_update(
        state,
        address,
        old,
        body,
        Some(writer.manager()),
    ))
}

/// PATCH in any of the four formats. Returns the object and whether apply created it.
pub(crate) fn patch(
    state: &mut State,
    address: Address<'_>,
    kind: PatchKind,
    body: &[u8],
    writer: &Writer<'_>,
) -> Result<(Value, bool), ApiError> {
    if kind == PatchKind::Apply {
        return apply(state, address, body, writer);
    }
    let old = existing(state, address)?;
    let patch: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("invalid patch body: {e}")))?;
    let mut candidate = old.clone();
    match kind {
        PatchKind::Json => json_patch(&mut candidate, &patch)
            .map_err(|e| ApiError::invalid(address.info, address.name, e.to_string()))?,
        PatchKind::Merge | PatchKind::Strategic | PatchKind::Apply => {
            merge_patch(&mut candidate, &patch)
        }
    }
    if !candidate.is_object() {
        return Err(ApiError::invalid(
            address.info,
            address.name,
            "patch must leave an object",
        ));
    }
    check_resource_version(address, &candidate, &old)?;
    Ok((
        store_update(state, address, old, candidate, Some(writer.manager())),
        false,
    ))
}

/// Parses an apply body: YAML, of which JSON is a subset.
fn parse_apply_body(body: &[u8]) -> Result<Value, ApiError> {
    let parsed = serde_json::from_slice::<Value>(body).or_else(|_| {
        serde_yaml_ng::from_slice::<Value>(body)
            .map_err(|e| ApiError::bad_request(format!("invalid apply body: {e}")))
    })?;
    require_object(parsed)
}

/// Server-side apply: creates the object if missing, otherwise merges by field ownership.
fn apply(
    state: &mut State,
    address: Address<'_>,
    body: &[u8],
    writer: &Writer<'_>,
) -> Result<(Value, bool), ApiError> {
    let manager = writer
        .field_manager
        .ok_or_else(|| ApiError::bad_request("PATCH with apply requires a fieldManager"))?;
    let mut config = parse_apply_body(body)?;
    strip_nulls(&mut config);
    check_type(address.info, &config, true)?;
    check_name(address, &config)?;
    check_namespace(&config, address.namespace)?;
    let scoped = scoped_config(&config, address.part, address.info.status_subresource);
    let conflict = |c: crate::apply::ApplyConflicts| {
        ApiError::apply_conflict(address.info, address.name, c.message())
    };

    let Some(old) = state
        .object(&address.info.key(), address.namespace, address.name)
        .cloned()
    else {
        if address.part == Part::Status {
            return Err(ApiError::not_found(address.info, address.name));
        }
        let mut ownership = Ownership::default();
        let mut merged = ownership
            .apply(
                &Value::Object(Map::new()),
                manager,
                writer.force,
                address.part,
                &scoped,
            )
            .map_err(conflict)?;
        set_meta(&mut merged, "name", Some(json!(address.name)));
        let created = create_object(
            state,
            address.info,
            address.namespace,
            merged,
            Part::Main,
            None,
        )?;
        if let Some(uid) = meta_str(&created, "uid") {
            state.set_ownership(uid, ownership);
        }
        return Ok((created, true));
    };

    check_resource_version(address, &config, &old)?;
    let uid = meta_str(&old, "uid").unwrap_or_default().to_owned();
    let mut ownership = state.ownership(&uid).cloned().unwrap_or_default();
    let merged = ownership
        .apply(&old, manager, writer.force, address.part, &scoped)
        .map_err(conflict)?;
    state.set_ownership(&uid, ownership);
    Ok((store_update(state, address, old, merged, None), false))
}

/// DELETE with `DeleteOptions` (preconditions and propagation policy).
pub(crate) fn delete(
    state: &mut State,
    address: Address<'_>,
    options: &Value,
    query_propagation: Option<&str>,
) -> Result<Value, ApiError> {
    let old = existing(state, address)?;
    let preconditions = options.get("preconditions");
    for field in ["uid", "resourceVersion"] {
        let wanted = preconditions
            .and_then(|p| p.get(field))
            .and_then(Value::as_str);
        if let Some(wanted) = wanted
            && Some(wanted) != meta_str(&old, field)
        {
            return Err(ApiError::conflict(
                address.info,
                address.name,
                &format!(
                    "Precondition failed: {field} in precondition: {wanted}, {field} in object meta: {}",
                    meta_str(&old, field).unwrap_or_default()
                ),
            ));
        }
    }
    let policy = options
        .get("propagationPolicy")
        .and_then(Value::as_str)
        .or(query_propagation);
    let propagation = if policy == Some("Orphan") {
        Propagation::Orphan
    } else {
        Propagation::Cascade
    };
    let uid = meta_str(&old, "uid").unwrap_or_default().to_owned();
    let (after, removed) = gc::delete(state, &address.info.key(), old, propagation);
    Ok(if removed {
        deleted_status(address.info, address.name, &uid)
    } else {
        after
    })
}

/// Direct test access: creates or replaces the whole object, status included.
pub(crate) fn upsert(
    state: &mut State,
    info: &ResourceInfo,
    body: Value,
    manager: &str,
) -> Result<Value, ApiError> {
    let body = require_object(body)?;
    let namespace = if info.namespaced {
        meta_str(&body, "namespace").unwrap_or("default").to_owned()
    } else {
        String::new()
    };
    let name = meta_str(&body, "name").unwrap_or_default().to_owned();
    match state.object(&info.key(), &namespace, &name).cloned() {
        None => create_object(state, info, &namespace, body, Part::Whole, Some(manager)),
        Some(old) => {
            let address = Address {
                info,
                namespace: &namespace,
                name: &name,
                part: Part::Whole,
            };
            Ok(store_update(state, address, old, body, Some(manager)))
        }
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case::merge("application/merge-patch+json", PatchKind::Merge)]
    #[case::strategic("application/strategic-merge-patch+json", PatchKind::Strategic)]
    #[case::json("application/json-patch+json", PatchKind::Json)]
    #[case::apply_with_charset("application/apply-patch+yaml; charset=utf-8", PatchKind::Apply)]
    fn patch_kind_from_content_type(#[case] content_type: &str, #[case] expected: PatchKind) {
        assert_eq!(
            PatchKind::from_content_type(Some(content_type)),
            Ok(expected)
        );
    }

    #[test]
    fn unknown_patch_type_is_415() {
        assert_eq!(
            PatchKind::from_content_type(Some("text/plain")).map_err(|e| e.code),
            Err(415)
        );
    }

    #[test]
    fn generated_suffixes_differ_and_use_the_safe_alphabet() {
        let a = generated_suffix(1);
        let b = generated_suffix(2);
        assert_ne!(a, b);
        assert!(a.chars().all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c)));
        assert_eq!(a.len(), 5);
    }
}

//! Failures as the API server reports them: an HTTP code plus a `Status` object.
//!
//! kube-client turns these into `kube::Error::Api` with the same `code` and `reason`, so code
//! under test can match on them exactly as against a real cluster.

use serde_json::{Value, json};

use crate::kinds::ResourceInfo;

/// A failed request, rendered as a `meta/v1 Status` body.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{code} {reason}: {message}")]
pub struct ApiError {
    /// HTTP status code.
    pub code: u16,
    /// Machine-readable reason (`NotFound`, `Conflict`, `AlreadyExists`, ...).
    pub reason: String,
    /// Human-readable message.
    pub message: String,
    details: Option<Value>,
}

impl ApiError {
    /// An error with the given code, reason and message.
    pub fn new(code: u16, reason: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            code,
            reason: reason.into(),
            message: message.into(),
            details: None,
        }
    }

    fn about(mut self, info: &ResourceInfo, name: &str) -> Self {
        self.details = Some(json!({"name": name, "group": info.group, "kind": info.plural}));
        self
    }

    /// 404 for a named object that does not exist.
    pub(crate) fn not_found(info: &ResourceInfo, name: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", qualified(info)),
        )
        .about(info, name)
    }

    /// 404 for a URL that names no registered resource.
    pub(crate) fn unknown_resource(path: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("the server could not find the requested resource ({path})"),
        )
    }

    /// 409 when creating an object whose name is taken.
    pub(crate) fn already_exists(info: &ResourceInfo, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", qualified(info)),
        )
        .about(info, name)
    }

    /// 409 for a stale `resourceVersion` or a failed precondition.
    pub(crate) fn conflict(info: &ResourceInfo, name: &str, why: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": {why}",
                qualified(info)
            ),
        )
        .about(info, name)
    }

    /// 409 for a server-side apply that would take fields from another manager.
    pub(crate) fn apply_conflict(info: &ResourceInfo, name: &str, message: String) -> Self {
        Self::new(409, "Conflict", message).about(info, name)
    }

    /// 400 for a malformed request.
    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// 422 for a body that is well-formed but unacceptable.
    pub(crate) fn invalid(info: &ResourceInfo, name: &str, message: impl Into<String>) -> Self {
        Self::new(422, "Invalid", message).about(info, name)
    }

    /// 405 for a verb the resource does not serve.
    pub(crate) fn method_not_allowed(message: impl Into<String>) -> Self {
        Self::new(405, "MethodNotAllowed", message)
    }

    /// 410 for a watch that starts before the retained history.
    pub(crate) fn gone(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    /// A failure injected by a test, with the reason a real server would use for the code.
    pub(crate) fn injected(code: u16) -> Self {
        let reason = match code {
            400 => "BadRequest",
            401 => "Unauthorized",
            403 => "Forbidden",
            404 => "NotFound",
            409 => "Conflict",
            410 => "Expired",
            422 => "Invalid",
            429 => "TooManyRequests",
            503 => "ServiceUnavailable",
            504 => "Timeout",
            _ => "InternalError",
        };
        Self::new(code, reason, format!("injected fault: {reason}"))
    }

    /// The `Status` object sent as response body.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let (Some(details), Some(map)) = (&self.details, status.as_object_mut()) {
            map.insert("details".into(), details.clone());
        }
        status
    }
}

/// `plural.group` or `plural`, as the real server names resources in messages.
fn qualified(info: &ResourceInfo) -> String {
    info.key().to_string()
}

/// The `Status` a successful immediate delete returns.
pub(crate) fn deleted_status(info: &ResourceInfo, name: &str, uid: &str) -> Value {
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {"name": name, "group": info.group, "kind": info.plural, "uid": uid},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_body_parses_as_kube_status() -> Result<(), serde_json::Error> {
        let info = ResourceInfo::new("apps", "v1", "StatefulSet", "statefulsets");
        let body = ApiError::not_found(&info, "web").to_status();
        let status: kube::core::Status = serde_json::from_value(body)?;
        assert_eq!(status.code, 404);
        assert_eq!(status.reason, "NotFound");
        assert_eq!(status.message, "statefulsets.apps \"web\" not found");
        Ok(())
    }
}

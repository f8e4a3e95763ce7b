//! The API server's audit log read back as requests: who asked for what, and what the
//! server answered. Tests count an operator's requests and writes with it, and the
//! sandbox names the requests the RBAC authorizer refused.

use std::collections::HashMap;
use std::path::Path;

use serde::Deserialize;

use super::error::{ControlPlaneError, io};

/// The verbs that change state.
const WRITE_VERBS: &[&str] = &["create", "update", "patch", "delete", "deletecollection"];

/// One request, as the audit log recorded it at the `Metadata` level.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuditEvent {
    /// The request's id; a watch logs two stages under one id.
    pub audit_id: String,
    /// `get`, `list`, `watch`, `create`, `patch`, ...
    pub verb: String,
    /// The authenticated user, e.g. `system:serviceaccount:ns:name`.
    pub user: String,
    /// Which credential of the user: `JTI=<id>` for a ServiceAccount token, so two
    /// processes of one ServiceAccount, each with its own token, tell apart.
    pub credential_id: String,
    /// The client's `User-Agent`.
    pub user_agent: String,
    /// The object's API group; empty for the core group.
    pub api_group: String,
    /// The resource, e.g. `configmaps`.
    pub resource: String,
    /// The subresource, e.g. `status`; empty for the object itself.
    pub subresource: String,
    /// The namespace; empty for cluster-scoped requests.
    pub namespace: String,
    /// The object's name; empty for collections.
    pub name: String,
    /// The HTTP status the server answered; 0 while a watch is still open.
    pub code: u16,
    /// The request path and query.
    pub request_uri: String,
}

impl AuditEvent {
    /// Whether the request asked to change state (whatever the answer).
    pub fn is_write(&self) -> bool {
        WRITE_VERBS.contains(&self.verb.as_str())
    }

    /// Whether the authorizer (or admission) refused it.
    pub fn is_forbidden(&self) -> bool {
        self.code == 403
    }

    /// `user verb group/resource[/subresource] namespace/name -> code`, for messages.
    pub fn describe(&self) -> String {
        let subresource = if self.subresource.is_empty() {
            String::new()
        } else {
            format!("/{}", self.subresource)
        };
        format!(
            "{} {} {}/{}{subresource} {}/{} -> {}",
            self.user,
            self.verb,
            self.api_group,
            self.resource,
            self.namespace,
            self.name,
            self.code
        )
    }
}

/// The audit log's JSON, only the fields read here.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Line {
    #[serde(rename = "auditID")]
    audit_id: String,
    #[serde(default)]
    verb: String,
    #[serde(default)]
    user: User,
    #[serde(default)]
    user_agent: String,
    #[serde(default)]
    object_ref: ObjectRef,
    #[serde(default)]
    response_status: Option<ResponseStatus>,
    #[serde(default, rename = "requestURI")]
    request_uri: String,
}

#[derive(Default, Deserialize)]
struct User {
    #[serde(default)]
    username: String,
    #[serde(default)]
    extra: HashMap<String, Vec<String>>,
}

/// The key under which the API server names a token's credential.
const CREDENTIAL_ID: &str = "authentication.kubernetes.io/credential-id";

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ObjectRef {
    #[serde(default)]
    api_group: String,
    #[serde(default)]
    resource: String,
    #[serde(default)]
    subresource: String,
    #[serde(default)]
    namespace: String,
    #[serde(default)]
    name: String,
}

#[derive(Deserialize)]
struct ResponseStatus {
    #[serde(default)]
    code: u16,
}

/// Every request in the log at `path`, once each (a request's last stage wins), in
/// the order the server first logged them. A line the server is still writing is
/// skipped.
pub(super) fn read(path: &Path) -> Result<Vec<AuditEvent>, ControlPlaneError> {
    let text = std::fs::read_to_string(path)
        .map_err(|source| io(&format!("reading {}", path.display()), source))?;
    Ok(parse(&text))
}

fn parse(text: &str) -> Vec<AuditEvent> {
    let mut events: Vec<AuditEvent> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for line in text.lines() {
        let Ok(line) = serde_json::from_str::<Line>(line) else {
            continue;
        };
        let credential_id = line
            .user
            .extra
            .get(CREDENTIAL_ID)
            .and_then(|ids| ids.first())
            .cloned()
            .unwrap_or_default();
        let event = AuditEvent {
            audit_id: line.audit_id,
            verb: line.verb,
            user: line.user.username,
            credential_id,
            user_agent: line.user_agent,
            api_group: line.object_ref.api_group,
            resource: line.object_ref.resource,
            subresource: line.object_ref.subresource,
            namespace: line.object_ref.namespace,
            name: line.object_ref.name,
            code: line.response_status.map_or(0, |status| status.code),
            request_uri: line.request_uri,
        };
        match index.get(&event.audit_id) {
            Some(&position) => events[position] = event,
            None => {
                index.insert(event.audit_id.clone(), events.len());
                events.push(event);
            }
        }
    }
    events
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_watch_is_one_request_with_its_final_answer_and_a_torn_line_is_skipped() {
        let log = concat!(
            r#"{"kind":"Event","auditID":"a","stage":"ResponseStarted","verb":"watch","user":{"username":"u"},"userAgent":"op","objectRef":{"resource":"pods","namespace":"ns"},"requestURI":"/api/v1/pods?watch=1"}"#,
            "\n",
            r#"{"kind":"Event","auditID":"b","stage":"ResponseComplete","verb":"patch","user":{"username":"system:serviceaccount:ops:zk","extra":{"authentication.kubernetes.io/credential-id":["JTI=j1"]}},"objectRef":{"resource":"configmaps","namespace":"ns","name":"c","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":403}}"#,
            "\n",
            r#"{"kind":"Event","auditID":"a","stage":"ResponseComplete","verb":"watch","user":{"username":"u"},"userAgent":"op","objectRef":{"resource":"pods","namespace":"ns"},"responseStatus":{"code":200}}"#,
            "\n",
            r#"{"kind":"Event","auditID":"c","#,
        );
        let events = parse(log);
        assert_eq!(events.len(), 2);
        assert_eq!((events[0].verb.as_str(), events[0].code), ("watch", 200));
        assert!(!events[0].is_write());
        assert!(events[1].is_write() && events[1].is_forbidden());
        assert_eq!(events[1].credential_id, "JTI=j1");
        assert_eq!(
            events[1].describe(),
            "system:serviceaccount:ops:zk patch /configmaps ns/c -> 403"
        );
    }
}

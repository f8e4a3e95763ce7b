//! The operators' Events, counted up into a series the way client-go's `events/v1`
//! recorder does it: the same object, type, reason, action and note within six minutes.
//!
//! kube-runtime's `Recorder` leaves the note out of its key, so an Event whose note
//! differs from one published a moment before about the same object (a renewal after
//! the first issue, a second unreadable field) only counted up the earlier Event, and
//! the cluster showed the old note twice. Kubernetes' own recorder keys on the note
//! since kubernetes/kubernetes#112365; so does this one.

use std::collections::HashMap;
use std::sync::Mutex;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event as EventObject, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::events::{Event, EventType, Reporter};
use serde_json::json;

use crate::controller::lock;

/// How long an Event stays the one a repeat counts up: client-go's figure.
const SERIES_WINDOW: SignedDuration = SignedDuration::from_mins(6);

/// The longest note `events.k8s.io/v1` accepts, in bytes (`NoteLengthLimit` of the API
/// server's validation): a longer one makes it refuse the whole Event.
pub const NOTE_LIMIT: usize = 1024;

/// What ends a note cut to [`NOTE_LIMIT`].
const CUT: &str = " …";

/// `note`, cut at a character boundary to fit [`NOTE_LIMIT`] with a mark that says so. A
/// Degraded condition's message naming five servers, or quoting a long field, makes a
/// longer note, and the API server refused its Warning Event, which only the
/// operator's log then told (reliability review, I-6). The condition keeps the whole
/// message.
pub fn fit_note(note: &str) -> std::borrow::Cow<'_, str> {
    if note.len() <= NOTE_LIMIT {
        return note.into();
    }
    let mut end = NOTE_LIMIT - CUT.len();
    while !note.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{CUT}", &note[..end]).into()
}

/// Publishes Events, one series per distinct Event; shared by every reconcile.
pub struct EventPublisher {
    client: Client,
    reporter: Reporter,
    recent: Mutex<HashMap<SeriesKey, Published>>,
}

/// What makes two Events the same: everything a reader sees but the time.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct SeriesKey {
    warning: bool,
    reason: String,
    action: String,
    note: Option<String>,
    regarding: [Option<String>; 5],
    related: Option<[Option<String>; 5]>,
}

/// The Event a repeat counts up.
#[derive(Clone, Debug)]
struct Published {
    namespace: String,
    name: String,
    count: i32,
    last: Timestamp,
}

impl std::fmt::Debug for EventPublisher {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("EventPublisher")
            .field("reporter", &self.reporter)
            .field("series", &lock(&self.recent).len())
            .finish_non_exhaustive()
    }
}

impl EventPublisher {
    pub fn new(client: Client, reporter: Reporter) -> Self {
        Self {
            client,
            reporter,
            recent: Mutex::default(),
        }
    }

    /// Creates the Event about `regarding`, or counts up the one published within the
    /// last six minutes with the same note.
    pub async fn publish(
        &self,
        event: &Event,
        regarding: &ObjectReference,
    ) -> Result<(), kube::Error> {
        let now = Timestamp::now();
        let key = series_key(event, regarding);
        let repeat = self.repeat_of(&key, now);
        if let Some(published) = repeat {
            match self.count_up(&published, now).await {
                Ok(()) => {
                    self.remember(key, published.counted_up(now));
                    return Ok(());
                }
                Err(kube::Error::Api(response)) if response.code == 404 => {}
                Err(error) => return Err(error),
            }
        }
        let object = self.new_event(event, regarding, now);
        let published = Published {
            namespace: object.metadata.namespace.clone().unwrap_or_default(),
            name: object.metadata.name.clone().unwrap_or_default(),
            count: 1,
            last: now,
        };
        Api::<EventObject>::namespaced(self.client.clone(), &published.namespace)
            .create(&PostParams::default(), &object)
            .await?;
        self.remember(key, published);
        Ok(())
    }

    /// The Event `key` counts up, after forgetting every series older than the window.
    fn repeat_of(&self, key: &SeriesKey, now: Timestamp) -> Option<Published> {
        let mut recent = lock(&self.recent);
        recent.retain(|_, published| published.last + SERIES_WINDOW > now);
        recent.get(key).cloned()
    }

    fn remember(&self, key: SeriesKey, published: Published) {
        lock(&self.recent).insert(key, published);
    }

    async fn count_up(&self, published: &Published, now: Timestamp) -> Result<(), kube::Error> {
        let series = EventSeries {
            count: published.count + 1,
            last_observed_time: MicroTime(now),
        };
        Api::<EventObject>::namespaced(self.client.clone(), &published.namespace)
            .patch(
                &published.name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "series": series })),
            )
            .await
            .map(drop)
    }

    fn new_event(&self, event: &Event, regarding: &ObjectReference, now: Timestamp) -> EventObject {
        let controller = &self.reporter.controller;
        EventObject {
            action: Some(event.action.clone()),
            reason: Some(event.reason.clone()),
            note: event
                .note
                .as_deref()
                .map(|note| fit_note(note).into_owned()),
            type_: Some(event_type_name(event.type_).to_owned()),
            event_time: Some(MicroTime(now)),
            regarding: Some(regarding.clone()),
            related: event.secondary.clone(),
            reporting_controller: Some(controller.clone()),
            reporting_instance: Some(
                self.reporter
                    .instance
                    .clone()
                    .unwrap_or_else(|| controller.clone()),
            ),
            metadata: ObjectMeta {
                namespace: Some(
                    regarding
                        .namespace
                        .clone()
                        .unwrap_or_else(|| "default".to_owned()),
                ),
                name: Some(format!(
                    "{}.{:x}",
                    regarding.name.as_deref().unwrap_or(controller),
                    now.as_nanosecond()
                )),
                ..ObjectMeta::default()
            },
            ..EventObject::default()
        }
    }
}

impl Published {
    fn counted_up(self, now: Timestamp) -> Self {
        Self {
            count: self.count + 1,
            last: now,
            ..self
        }
    }
}

fn series_key(event: &Event, regarding: &ObjectReference) -> SeriesKey {
    SeriesKey {
        warning: event.type_ == EventType::Warning,
        reason: event.reason.clone(),
        action: event.action.clone(),
        note: event.note.clone(),
        regarding: identity(regarding),
        related: event.secondary.as_ref().map(identity),
    }
}

/// An object's identity, without its resourceVersion: a status write between two
/// Events does not make them different.
fn identity(reference: &ObjectReference) -> [Option<String>; 5] {
    [
        reference.api_version.clone(),
        reference.kind.clone(),
        reference.namespace.clone(),
        reference.name.clone(),
        reference.uid.clone(),
    ]
}

fn event_type_name(event_type: EventType) -> &'static str {
    match event_type {
        EventType::Normal => "Normal",
        EventType::Warning => "Warning",
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    fn event(note: &str) -> Event {
        Event {
            type_: EventType::Normal,
            reason: "CertificateIssued".to_owned(),
            note: Some(note.to_owned()),
            action: "Issue".to_owned(),
            secondary: None,
        }
    }

    fn cluster(resource_version: &str) -> ObjectReference {
        ObjectReference {
            api_version: Some("zookeeper.strata.dev/v1alpha1".to_owned()),
            kind: Some("ZookeeperCluster".to_owned()),
            namespace: Some("default".to_owned()),
            name: Some("zk".to_owned()),
            uid: Some("1".to_owned()),
            resource_version: Some(resource_version.to_owned()),
            field_path: None,
        }
    }

    #[rstest]
    #[case::the_same_note_after_a_status_write(event("Issued the CA"), cluster("2"), true)]
    #[case::a_new_note(event("Issued a certificate, because it is due"), cluster("1"), false)]
    #[case::a_warning_with_the_same_note(
        Event { type_: EventType::Warning, ..event("Issued the CA") },
        cluster("1"),
        false
    )]
    #[case::another_object(
        event("Issued the CA"),
        ObjectReference { name: Some("other".to_owned()), ..cluster("1") },
        false
    )]
    fn a_repeat_is_the_same_note_about_the_same_object(
        #[case] later: Event,
        #[case] regarding: ObjectReference,
        #[case] counts_up: bool,
    ) {
        let first = series_key(&event("Issued the CA"), &cluster("1"));
        assert_eq!(series_key(&later, &regarding) == first, counts_up);
    }

    #[rstest]
    #[case::a_short_note("Issued the CA".to_owned(), "Issued the CA".to_owned())]
    #[case::exactly_the_limit("a".repeat(NOTE_LIMIT), "a".repeat(NOTE_LIMIT))]
    #[case::one_byte_over("a".repeat(NOTE_LIMIT + 1), format!("{} …", "a".repeat(NOTE_LIMIT - 4)))]
    #[case::cut_inside_a_character(
        format!("{}é{}", "a".repeat(NOTE_LIMIT - 5), "b".repeat(10)),
        format!("{} …", "a".repeat(NOTE_LIMIT - 5))
    )]
    fn a_note_fits_what_the_api_server_accepts(#[case] note: String, #[case] sent: String) {
        let fitted = fit_note(&note);
        assert_eq!(fitted, sent);
        assert!(fitted.len() <= NOTE_LIMIT, "{} bytes", fitted.len());
    }
}

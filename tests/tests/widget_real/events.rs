//! Events through `strata_operator::events::EventPublisher` on the real API server:
//! the same note again counts up one Event's series (a merge patch the real
//! validation accepts), a new note about the same object is an Event of its own, and a
//! note longer than the API server accepts is cut to fit instead of losing the Event.

use kube::Resource;
use kube::runtime::events::{Event, EventType, Reporter};
use strata_operator::events::{EventPublisher, NOTE_LIMIT};

use crate::widget::{Widget, widget};
use crate::widgets::Widgets;

fn issued(note: &str) -> Event {
    Event {
        type_: EventType::Normal,
        reason: "CertificateIssued".to_owned(),
        note: Some(note.to_owned()),
        action: "Issue".to_owned(),
        secondary: None,
    }
}

pub async fn a_repeat_counts_up_and_a_new_note_is_a_new_event(widgets: Widgets) {
    widgets.create(&widget("w", 1)).await;
    let stored: Widget = widgets.stored("w").await.expect("the widget");
    let regarding = stored.object_ref(&());
    let publisher = EventPublisher::new(
        widgets.client.clone(),
        Reporter {
            controller: "event-publisher-test".to_owned(),
            instance: None,
        },
    );
    let long = format!("Waiting for {}", "server.example.com, ".repeat(100));
    for note in [
        "Issued the CA",
        "Issued the CA",
        "Issued a certificate",
        &long,
    ] {
        publisher
            .publish(&issued(note), &regarding)
            .await
            .unwrap_or_else(|error| panic!("the real API refused the Event {note:?}: {error}"));
    }

    let mut seen: Vec<(Option<String>, Option<i32>)> = widgets
        .events("w", "CertificateIssued")
        .await
        .into_iter()
        .filter(|event| event.reporting_controller.as_deref() == Some("event-publisher-test"))
        .map(|event| (event.note, event.series.map(|series| series.count)))
        .collect();
    seen.sort();
    let cut = seen
        .iter()
        .position(|(note, _)| {
            note.as_deref()
                .is_some_and(|note| note.starts_with("Waiting"))
        })
        .map(|index| seen.remove(index))
        .and_then(|(note, _)| note)
        .expect("the Event with the long note");
    assert!(
        cut.len() <= NOTE_LIMIT && cut.ends_with(" …") && long.starts_with(&cut[..cut.len() - 4]),
        "{} bytes: {cut}",
        cut.len()
    );
    assert_eq!(
        seen,
        vec![
            (Some("Issued a certificate".to_owned()), None),
            (Some("Issued the CA".to_owned()), Some(2)),
        ]
    );
}

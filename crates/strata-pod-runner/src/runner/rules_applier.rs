//! Applies the other pods' Service rules on a thread of its own, as kube-proxy
//! programs a node's rules in the background.
//!
//! A Service or pod change rewrites the rules of every pod, one `nft` process each.
//! Run by the caller, they held up the node agent's whole runtime, with the relay of
//! the API server's address on it: in the sandbox, an operator's Lease renewal went
//! unanswered for ten seconds while eight pods started. Only a starting pod gets its
//! rules at once, before its containers run; every other pod's newest ruleset is handed
//! to this thread, which applies the latest one per pod and drops those it replaced.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use crate::network::apply_rules_in;

#[derive(Default)]
struct Pending {
    /// Network namespace to the ruleset it is to get, and the file that records it
    /// once applied.
    wanted: BTreeMap<String, (String, PathBuf)>,
    stop: bool,
}

/// The thread, and what it still has to apply.
#[derive(Debug)]
pub(crate) struct RulesApplier {
    shared: Arc<(Mutex<Pending>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Pending {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Pending")
            .field("namespaces", &self.wanted.len())
            .finish()
    }
}

impl RulesApplier {
    pub(crate) fn start() -> Self {
        let shared = Arc::new((Mutex::new(Pending::default()), Condvar::new()));
        let worker = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("service-rules".to_owned())
            .spawn(move || apply_until_stopped(&worker))
            .ok();
        Self { shared, thread }
    }

    /// Hands `ruleset` for the namespace `netns` to the thread; it replaces one still
    /// waiting there. Once applied, it is written to `record`; a ruleset that fails
    /// removes `record`, so the next change of any pod or Service tries it again.
    pub(crate) fn apply(&self, netns: &str, ruleset: &str, record: &Path) {
        let (pending, changed) = &*self.shared;
        if let Ok(mut pending) = pending.lock() {
            pending
                .wanted
                .insert(netns.to_owned(), (ruleset.to_owned(), record.to_owned()));
        }
        changed.notify_one();
    }
}

impl Drop for RulesApplier {
    fn drop(&mut self) {
        let (pending, changed) = &*self.shared;
        if let Ok(mut pending) = pending.lock() {
            pending.stop = true;
        }
        changed.notify_one();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn apply_until_stopped(shared: &(Mutex<Pending>, Condvar)) {
    let (pending, changed) = shared;
    loop {
        let batch = {
            let Ok(mut state) = pending.lock() else {
                return;
            };
            while state.wanted.is_empty() && !state.stop {
                state = match changed.wait(state) {
                    Ok(state) => state,
                    Err(_) => return,
                };
            }
            if state.stop {
                return;
            }
            std::mem::take(&mut state.wanted)
        };
        for (netns, (ruleset, record)) in batch {
            match apply_rules_in(&netns, &ruleset) {
                Ok(()) => {
                    let _ = std::fs::write(&record, &ruleset);
                }
                Err(error) => {
                    let _ = std::fs::remove_file(&record);
                    // A pod deleted meanwhile took its namespace along: nothing to say.
                    if Path::new("/run/netns").join(&netns).exists() {
                        eprintln!("strata-pod-runner: {error}");
                    }
                }
            }
        }
    }
}

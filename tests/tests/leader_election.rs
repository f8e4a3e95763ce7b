//! Two replicas of one operator against the same API: only the holder of the
//! leader-election Lease reconciles; when it stops, the other takes over within
//! the lease duration, and their writes never overlap.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

#[allow(dead_code)] // shared with controller_e2e, which uses the rest of it
mod support;

use std::time::Duration;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::coordination::v1::Lease;
use strata_operator::controller::{OperatorRuntime, run_controller};
use strata_operator::error::BackoffPolicy;
use strata_operator::leader::{self, Election};
use strata_operator::rbac;
use strata_test_apiserver::{RequestRecord, TestApiServer};
use strata_testing::TIMEOUT;
use support::widget::{OPERATOR, Widget, definition, reconcile, widget};

const LEASE_DURATION: Duration = Duration::from_secs(3);

/// One operator process: its runtime and the task running [`leader::lead`].
struct Replica {
    name: &'static str,
    runtime: OperatorRuntime,
    task: tokio::task::JoinHandle<()>,
}

impl Replica {
    fn start(server: &TestApiServer, name: &'static str) -> Self {
        let mut runtime =
            OperatorRuntime::new(server.client_as(name), OPERATOR, Some("default".to_owned()));
        runtime.backoff = BackoffPolicy {
            initial: Duration::from_millis(50),
            max: Duration::from_millis(500),
            invalid_spec: Duration::from_secs(1),
        };
        let election = Election {
            lease_duration: LEASE_DURATION,
            renew_grace: Duration::from_secs(1),
            ..Election::new(OPERATOR, "default", name)
        };
        let task = tokio::spawn({
            let runtime = runtime.clone();
            async move {
                leader::lead(&runtime, &election, |term| async move {
                    run_controller(&term, &definition(), (), reconcile).await;
                })
                .await;
            }
        });
        Self {
            name,
            runtime,
            task,
        }
    }

    /// Stops the process as SIGTERM would, and waits until it has.
    async fn stop(mut self) {
        self.runtime.shutdown.cancel();
        tokio::time::timeout(TIMEOUT, &mut self.task)
            .await
            .expect("the replica stops within the timeout")
            .expect("the replica's task ends cleanly");
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.runtime.shutdown.cancel();
    }
}

fn holder(server: &TestApiServer) -> Option<String> {
    server
        .get_typed::<Lease>("default", OPERATOR)?
        .spec?
        .holder_identity
}

async fn wait_for_holder(server: &TestApiServer, wanted: impl Fn(&str) -> bool) -> String {
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    loop {
        if let Some(holder) = holder(server).filter(|holder| wanted(holder)) {
            return holder;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the Lease holder is {:?}",
            holder(server)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn wait_for_replicas(server: &TestApiServer, replicas: i32) {
    server
        .wait_for::<StatefulSet>(
            "default",
            "w",
            |sts| sts.spec.replicas == Some(replicas),
            TIMEOUT,
        )
        .await
        .unwrap_or_else(|error| panic!("StatefulSet w never had {replicas} replicas: {error}"));
}

fn is_lease(request: &RequestRecord) -> bool {
    request.is_for("leases.coordination.k8s.io")
}

fn by<'a>(requests: &'a [RequestRecord], user: &str) -> Vec<&'a RequestRecord> {
    requests
        .iter()
        .filter(|request| request.user.as_deref() == Some(user))
        .collect()
}

/// Positions in the log of the writes `user` made to anything but its Lease.
fn reconcile_writes(requests: &[RequestRecord], user: &str) -> Vec<usize> {
    requests
        .iter()
        .enumerate()
        .filter(|(_, request)| request.user.as_deref() == Some(user))
        .filter(|(_, request)| !request.verb.is_read() && !is_lease(request))
        .map(|(position, _)| position)
        .collect()
}

#[tokio::test]
async fn only_the_lease_holder_reconciles_and_a_standby_takes_over_when_it_stops() {
    let server = TestApiServer::new();
    server.register::<Widget>();
    let first = Replica::start(&server, "replica-a");
    let second = Replica::start(&server, "replica-b");
    let holder = wait_for_holder(&server, |_| true).await;
    let (leader, standby) = if holder.starts_with(first.name) {
        (first, second)
    } else {
        (second, first)
    };

    let api = kube::Api::<Widget>::namespaced(server.client(), "default");
    api.create(&Default::default(), &widget("w", 1))
        .await
        .expect("create widget");
    wait_for_replicas(&server, 1).await;
    let during_first_term = server.requests();
    let standby_requests = by(&during_first_term, standby.name);
    assert!(
        standby_requests.iter().all(|request| is_lease(request)),
        "the standby touched nothing but its Lease: {:#?}",
        standby_requests
            .iter()
            .filter(|request| !is_lease(request))
            .collect::<Vec<_>>()
    );
    assert!(
        !reconcile_writes(&during_first_term, leader.name).is_empty(),
        "the leader reconciled"
    );

    let leader_name = leader.name;
    let stopped = tokio::time::Instant::now();
    leader.stop().await;
    wait_for_holder(&server, |holder| holder.starts_with(standby.name)).await;
    let takeover = stopped.elapsed();
    assert!(
        takeover <= LEASE_DURATION + Duration::from_millis(500),
        "the standby took over {takeover:?} after the leader stopped; the lease lasts {LEASE_DURATION:?}"
    );

    api.patch(
        "w",
        &Default::default(),
        &kube::api::Patch::Merge(serde_json::json!({"spec": {"replicas": 2}})),
    )
    .await
    .expect("patch widget");
    wait_for_replicas(&server, 2).await;

    let requests = server.requests();
    let old = reconcile_writes(&requests, leader_name);
    let new = reconcile_writes(&requests, standby.name);
    assert!(!new.is_empty(), "the new leader reconciled");
    assert!(
        old.iter().max() < new.iter().min(),
        "every write of the old leader came before the first of the new one (old {old:?}, new {new:?})"
    );
    assert!(
        by(&requests[during_first_term.len()..], leader_name)
            .iter()
            .all(|request| is_lease(request) || request.verb.is_read()),
        "the stopped leader wrote nothing after it stopped"
    );
    standby.stop().await;
}

#[tokio::test]
async fn every_request_of_both_replicas_is_granted_by_the_chart_roles() {
    let server = TestApiServer::new();
    server.register::<Widget>();
    let first = Replica::start(&server, "replica-a");
    let second = Replica::start(&server, "replica-b");
    wait_for_holder(&server, |_| true).await;
    let api = kube::Api::<Widget>::namespaced(server.client(), "default");
    api.create(&Default::default(), &widget("w", 1))
        .await
        .expect("create widget");
    wait_for_replicas(&server, 1).await;
    first.stop().await;
    second.stop().await;

    let lease_rules = rbac::lease_rules();
    let rules = rbac::rules(&rbac::OperatorRegistration {
        controllers: vec![definition().registration()],
    });
    let denied: Vec<String> = server
        .requests()
        .iter()
        .filter(|request| request.user.is_some())
        .filter(|request| {
            let resource = match &request.subresource {
                Some(sub) => format!("{}/{sub}", request.resource),
                None => request.resource.clone(),
            };
            let verb = request.verb.to_string();
            let granted = if is_lease(request) {
                rbac::allows(&lease_rules, &request.group, &resource, &verb)
            } else {
                rbac::allows(&rules, &request.group, &resource, &verb)
            };
            !granted
        })
        .map(ToString::to_string)
        .collect();
    assert!(denied.is_empty(), "requests outside the roles: {denied:#?}");
}

//! Leader election for real: the leading operator pod is killed as a failing node kills
//! it (its processes, at once, without the shutdown that would release the Lease), and
//! the standby takes the Lease over once it expires.

use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use super::kubectl::Kubectl;
use super::operator_pods::OperatorPods;
use super::{OPERATOR_NAMESPACE, POLL_PERIOD};
use crate::operators::Operator;

/// How long the standby may take: the Lease's 15 s, its retry period, and margin.
const HANDOVER_TIMEOUT: Duration = Duration::from_secs(60);

/// Kills the pod that holds `operator`'s Lease and waits until the other pod holds it.
pub(super) async fn leader_hands_over(
    kubectl: &Kubectl,
    pods: &OperatorPods<'_>,
    operator: &Operator,
) -> anyhow::Result<()> {
    let leader = holder_pod(kubectl, operator)?
        .with_context(|| format!("lease/{} has no holder", operator.name))?;
    eprintln!(
        "==> lease/{} is held by pod {leader}; its processes are killed as a failing node \
         kills them",
        operator.name
    );
    pods.agent
        .runner()
        .lock()
        .await
        .kill(OPERATOR_NAMESPACE, &leader)
        .with_context(|| format!("killing pod {leader}"))?;
    let killed = Instant::now();
    let standby = loop {
        // Between the standby's force-release of the expired Lease and its claim,
        // the Lease names nobody.
        if let Some(holder) = holder_pod(kubectl, operator)?
            && holder != leader
        {
            break holder;
        }
        if killed.elapsed() > HANDOVER_TIMEOUT {
            bail!(
                "lease/{} still names the killed pod {leader} after {} s",
                operator.name,
                HANDOVER_TIMEOUT.as_secs()
            );
        }
        tokio::time::sleep(POLL_PERIOD).await;
    };
    eprintln!(
        "==> the standby {standby} took lease/{} over {:.1} s after the kill; kubectl delete \
         pod {leader}, and the Deployment replaces it",
        operator.name,
        killed.elapsed().as_secs_f64()
    );
    // The killed pod's log goes with the pod.
    pods.keep_logs();
    kubectl.in_namespace(
        "delete",
        OPERATOR_NAMESPACE,
        &["pod", &leader, "--wait=true"],
    )?;
    kubectl.in_namespace(
        "rollout",
        OPERATOR_NAMESPACE,
        &[
            "status",
            &format!("deployment/{}", operator.name),
            "--timeout=120s",
        ],
    )?;
    println!(
        "{}",
        kubectl.in_namespace(
            "get",
            OPERATOR_NAMESPACE,
            &[
                "lease",
                operator.name,
                "-o",
                "custom-columns=HOLDER:.spec.holderIdentity,TRANSITIONS:.spec.leaseTransitions"
            ]
        )?
    );
    Ok(())
}

/// The pod named in the Lease's holder identity (`<pod>_<suffix>`); `None` while it
/// names nobody.
pub(super) fn holder_pod(kubectl: &Kubectl, operator: &Operator) -> anyhow::Result<Option<String>> {
    let holder = kubectl.in_namespace(
        "get",
        OPERATOR_NAMESPACE,
        &[
            "lease",
            operator.name,
            "-o",
            "jsonpath={.spec.holderIdentity}",
        ],
    )?;
    let pod = holder
        .trim()
        .rsplit_once('_')
        .map_or(holder.trim(), |(pod, _)| pod);
    Ok((!pod.is_empty()).then(|| pod.to_owned()))
}

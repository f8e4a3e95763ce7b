//! The operator keeps its own CustomResourceDefinitions current.
//!
//! Helm installs a chart's `crds/` directory on the first install and never again, so a
//! `helm upgrade` to an operator with new fields would leave the old schema in place, and
//! the API server would prune the new fields from every object. Each time an operator
//! becomes the leader it therefore applies the CRDs it was built with (server-side apply,
//! its own field manager), before its controllers start.
//!
//! It never downgrades: a CRD that an operator of a newer version applied
//! ([`VERSION_ANNOTATION`]) is left alone, so rolling back the operator's image does not
//! take fields away from objects that use them. It never creates a CRD either: the chart
//! installs them, and `create` could not be limited to the operator's own names.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams};
use kube::{Client, ResourceExt};

use crate::error::describe_kube_error;
use crate::rbac::Verb;

/// What the operator does with its CRDs, for the chart's ClusterRole.
pub const CRD_VERBS: &[Verb] = &[Verb::Get, Verb::Patch];

/// On each CRD: the version of the operator that last applied it.
pub const VERSION_ANNOTATION: &str = "strata.dev/operator-version";

/// What happened to one CRD.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CrdOutcome {
    /// Applied; unchanged when it already matched.
    Applied,
    /// Not installed: the chart's `crds/` were not applied.
    Missing,
    /// A newer operator applied it; left alone.
    Newer(String),
}

/// Applies every CRD of `crds` that exists and was not applied by a newer operator,
/// as field manager `manager`, stamped with `version`. Returns each CRD's name and
/// outcome; an error names the CRD and the API server's answer.
pub async fn upgrade(
    client: &Client,
    manager: &str,
    version: &str,
    crds: Vec<CustomResourceDefinition>,
) -> Result<Vec<(String, CrdOutcome)>, String> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut outcomes = Vec::new();
    for mut crd in crds {
        let name = crd.name_any();
        let existing = api
            .get_opt(&name)
            .await
            .map_err(|error| format!("reading CRD {name}: {}", describe_kube_error(&error)))?;
        let Some(existing) = existing else {
            outcomes.push((name, CrdOutcome::Missing));
            continue;
        };
        if let Some(stored) = existing.annotations().get(VERSION_ANNOTATION)
            && is_newer(stored, version)
        {
            outcomes.push((name, CrdOutcome::Newer(stored.clone())));
            continue;
        }
        crd.annotations_mut()
            .insert(VERSION_ANNOTATION.to_owned(), version.to_owned());
        api.patch(
            &name,
            &PatchParams::apply(manager).force(),
            &Patch::Apply(&crd),
        )
        .await
        .map_err(|error| format!("applying CRD {name}: {}", describe_kube_error(&error)))?;
        outcomes.push((name, CrdOutcome::Applied));
    }
    Ok(outcomes)
}

/// Whether dotted version `stored` is newer than `ours`, number by number; parts that
/// are not numbers compare as 0.
pub fn is_newer(stored: &str, ours: &str) -> bool {
    let parts = |version: &str| -> Vec<u64> {
        version
            .split(['.', '-', '+'])
            .map(|part| part.parse().unwrap_or(0))
            .collect()
    };
    parts(stored) > parts(ours)
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case::same("0.1.0", "0.1.0", false)]
    #[case::older("0.1.0", "0.2.0", false)]
    #[case::newer_minor("0.2.0", "0.1.9", true)]
    #[case::numeric_not_lexical("0.10.0", "0.9.0", true)]
    fn only_a_newer_operator_version_blocks_the_upgrade(
        #[case] stored: &str,
        #[case] ours: &str,
        #[case] newer: bool,
    ) {
        assert_eq!(is_newer(stored, ours), newer);
    }
}

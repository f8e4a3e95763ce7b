//! What the API server does when a CustomResourceDefinition is stored: its
//! kind becomes servable at once, and the CRD reports itself established, so
//! clients that install CRDs (`kubectl apply`, `helm install`) can use the new
//! kind right away.

use serde_json::{Value, json};

use crate::kinds::{Registry, ResourceInfo, ResourceKey};

/// Whether `key` is the CRD resource.
pub(crate) fn is_crd(key: &ResourceKey) -> bool {
    key.group == "apiextensions.k8s.io" && key.plural == "customresourcedefinitions"
}

/// Registers the kind `crd` defines (its storage version, or its first served
/// one) and marks it `NamesAccepted` and `Established`. A CRD without a group,
/// names or a served version is stored as given and serves nothing.
pub(crate) fn establish(crd: &mut Value, registry: &mut Registry) {
    let spec = &crd["spec"];
    let versions = spec["versions"].as_array().cloned().unwrap_or_default();
    let chosen = versions
        .iter()
        .find(|version| version["storage"] == true && version["served"] == true)
        .or_else(|| versions.iter().find(|version| version["served"] == true));
    let (Some(group), Some(kind), Some(plural), Some(version)) = (
        spec["group"].as_str(),
        spec["names"]["kind"].as_str(),
        spec["names"]["plural"].as_str(),
        chosen,
    ) else {
        return;
    };
    let Some(version_name) = version["name"].as_str() else {
        return;
    };
    let mut info =
        ResourceInfo::new(group, version_name, kind, plural).requiring_resource_version_on_update();
    if spec["scope"] == "Cluster" {
        info = info.cluster_scoped();
    }
    if version["subresources"]["status"].is_object() {
        info = info.with_status();
    }
    registry.insert(info);
    crd["status"] = json!({
        "acceptedNames": spec["names"].clone(),
        "storedVersions": [version_name],
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
             "message": "no conflicts found", "lastTransitionTime": "1970-01-01T00:00:00Z"},
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
             "message": "the initial names have been accepted", "lastTransitionTime": "1970-01-01T00:00:00Z"},
        ],
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd(served: bool, scope: &str) -> Value {
        json!({
            "spec": {
                "group": "example.com",
                "names": {"kind": "Widget", "plural": "widgets"},
                "scope": scope,
                "versions": [{"name": "v1", "served": served, "storage": true,
                              "subresources": {"status": {}}}],
            }
        })
    }

    #[test]
    fn a_served_version_becomes_a_servable_kind_and_the_crd_is_established() {
        let mut registry = Registry::default();
        let mut object = crd(true, "Cluster");
        establish(&mut object, &mut registry);
        let info = registry
            .lookup("example.com", "v1", "widgets")
            .expect("servable");
        assert!(!info.namespaced && info.status_subresource);
        assert!(
            !info.allow_unconditional_update,
            "as for every custom resource"
        );
        let conditions = object["status"]["conditions"]
            .as_array()
            .expect("conditions");
        assert!(
            conditions.iter().any(
                |condition| condition["type"] == "Established" && condition["status"] == "True"
            )
        );
    }

    #[test]
    fn a_crd_without_a_served_version_serves_nothing_and_is_not_established() {
        let mut registry = Registry::default();
        let mut object = crd(false, "Namespaced");
        establish(&mut object, &mut registry);
        assert!(registry.lookup("example.com", "v1", "widgets").is_none());
        assert!(object.get("status").is_none());
    }
}

//! `clusterConfig.nameNodeIngress`: an Ingress per namenode's web UI, each at a host
//! name of its own under one domain.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strata_model::ingress::IngressExposure;

/// An Ingress per namenode for its web UI. One host for every namenode would reach the
/// standby half of the time, and path prefixes cannot work: the UI links to absolute
/// paths (`/dfshealth.html`, `/jmx`). So each namenode gets a host name of its own
/// under `domain`, served at `/`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct NameNodeIngress {
    /// The domain the namenodes' host names are under: the namenode
    /// `simple-hdfs-namenode-default-0` is served at
    /// `simple-hdfs-namenode-default-0.<domain>`. One wildcard DNS record for
    /// `*.<domain>`, pointing at the Ingress controller, covers every namenode,
    /// including ones added later.
    pub domain: String,
    /// The IngressClass of the controller that serves them; the cluster's default
    /// class when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingress_class_name: Option<String>,
    /// Annotations for the controller, passed to each Ingress untouched: the place for
    /// an authenticating proxy (`nginx.ingress.kubernetes.io/auth-url`), since the UI
    /// has no login.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// A Secret with `tls.crt` and `tls.key` for `*.<domain>`, with which the
    /// controller serves HTTPS; plain HTTP without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_secret: Option<String>,
}

impl NameNodeIngress {
    /// The Ingress settings of the namenode `pod`: at `<pod>.<domain>`, path `/`.
    pub fn for_namenode(&self, pod: &str) -> IngressExposure {
        IngressExposure {
            host: format!("{pod}.{}", self.domain),
            path: None,
            ingress_class_name: self.ingress_class_name.clone(),
            annotations: self.annotations.clone(),
            tls_secret: self.tls_secret.clone(),
        }
    }
}

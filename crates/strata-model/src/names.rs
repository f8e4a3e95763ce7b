//! Typed, length-checked names of generated objects.
//!
//! Object names derive from the cluster, role and role group names, and Kubernetes caps
//! them: 63 characters for Services and label values, and effectively 52 for
//! StatefulSets, because the StatefulSet controller labels every Pod with
//! `controller-revision-hash: <statefulset>-<hash>` and that label value must fit in 63
//! characters too. Checking the limits while validating the spec turns an over-long name
//! into a clear message on the cluster object instead of an apply error on a child.
//!
//! Every Strata object name fits in the tightest limit that applies to it:
//!
//! | name | objects | limit |
//! | --- | --- | --- |
//! | `<cluster>` | client Service | 63 ([`ClusterName`]) |
//! | `<cluster>-<role>` | PodDisruptionBudget, role Services | 63 ([`RoleRef`]) |
//! | `<cluster>-<role>-<rolegroup>` | StatefulSet, ConfigMap, headless Service | 52 ([`RoleGroupRef`]) |

use std::fmt;

/// Kubernetes' limit for DNS labels, label values and Service names.
pub const DNS_LABEL_MAX_LENGTH: usize = 63;

/// Longest StatefulSet name whose `controller-revision-hash` label value
/// (`<name>-<10 character hash>`) still fits in 63 characters.
pub const STATEFULSET_NAME_MAX_LENGTH: usize = 52;

/// The kind of object a derived name is checked for, naming its limit in messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, strum::Display)]
pub enum NameKind {
    /// StatefulSets, limited to [`STATEFULSET_NAME_MAX_LENGTH`].
    StatefulSet,
    /// Services (and everything else capped at a DNS label), limited to
    /// [`DNS_LABEL_MAX_LENGTH`].
    Service,
}

impl NameKind {
    /// The longest name this kind allows.
    pub const fn max_length(self) -> usize {
        match self {
            Self::StatefulSet => STATEFULSET_NAME_MAX_LENGTH,
            Self::Service => DNS_LABEL_MAX_LENGTH,
        }
    }
}

/// Why a name cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum NameError {
    /// A cluster, role or role group name is not a DNS label.
    #[error("{what} {name:?} is invalid: {reason}")]
    InvalidLabel {
        /// Which name (`cluster name`, `role name`, `role group name`).
        what: &'static str,
        /// The rejected name.
        name: String,
        /// The rule it breaks.
        reason: &'static str,
    },
    /// A derived object name exceeds its kind's limit.
    #[error(
        "name {name:?} is {length} characters; {kind} names may have at most {max} \
         (shorten the cluster, role or role group name)"
    )]
    TooLong {
        /// The derived name.
        name: String,
        /// Its length.
        length: usize,
        /// The object kind whose limit it exceeds.
        kind: NameKind,
        /// That limit.
        max: usize,
    },
}

/// Checks a DNS label: 1 to 63 characters of `a-z`, `0-9` and `-`, starting and ending
/// alphanumeric; with `letter_first`, the RFC 1035 form Services need.
fn check_label(what: &'static str, name: &str, letter_first: bool) -> Result<(), NameError> {
    let invalid = |reason| NameError::InvalidLabel {
        what,
        name: name.to_owned(),
        reason,
    };
    let (Some(first), Some(last)) = (name.chars().next(), name.chars().last()) else {
        return Err(invalid("it is empty"));
    };
    if name.len() > DNS_LABEL_MAX_LENGTH {
        return Err(invalid("it is longer than 63 characters"));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        return Err(invalid(
            "only lowercase letters, digits and '-' are allowed",
        ));
    }
    if letter_first && !first.is_ascii_lowercase() {
        return Err(invalid("it must start with a lowercase letter"));
    }
    if !first.is_ascii_alphanumeric() || !last.is_ascii_alphanumeric() {
        return Err(invalid("it must start and end with a letter or digit"));
    }
    Ok(())
}

/// Checks a derived name against its kind's limit.
fn check_length(name: String, kind: NameKind) -> Result<String, NameError> {
    let length = name.len();
    let max = kind.max_length();
    if length > max {
        return Err(NameError::TooLong {
            name,
            length,
            kind,
            max,
        });
    }
    Ok(name)
}

/// Defines a validated name newtype with the usual conversions.
macro_rules! label_name {
    ($(#[$doc:meta])* $ty:ident, $what:literal, letter_first = $letter_first:literal) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $ty(String);

        impl $ty {
            /// Validates `name`.
            pub fn new(name: &str) -> Result<Self, NameError> {
                check_label($what, name, $letter_first)?;
                Ok(Self(name.to_owned()))
            }

            /// The name as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl std::str::FromStr for $ty {
            type Err = NameError;

            fn from_str(name: &str) -> Result<Self, Self::Err> {
                Self::new(name)
            }
        }

        impl AsRef<str> for $ty {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

label_name!(
    /// The name of a cluster object, validated as an RFC 1035 label (lowercase, starting
    /// with a letter, at most 63 characters), because it is also the client Service name
    /// and the `app.kubernetes.io/instance` label value.
    ClusterName,
    "cluster name",
    letter_first = true
);

label_name!(
    /// A role name (`server`, `datanode`, ...), validated as an RFC 1123 label.
    RoleName,
    "role name",
    letter_first = false
);

label_name!(
    /// A role group name (a key of `roleGroups`), validated as an RFC 1123 label.
    RoleGroupName,
    "role group name",
    letter_first = false
);

impl ClusterName {
    /// Name of the client Service that spans every Pod of the cluster: the cluster name.
    pub fn client_service_name(&self) -> &str {
        self.as_str()
    }
}

/// One role of one cluster, for role-level objects.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RoleRef {
    cluster: ClusterName,
    role: RoleName,
    object_name: String,
}

impl RoleRef {
    /// Checks that `<cluster>-<role>` fits in a Service name.
    pub fn new(cluster: &ClusterName, role: &RoleName) -> Result<Self, NameError> {
        let object_name = check_length(format!("{cluster}-{role}"), NameKind::Service)?;
        Ok(Self {
            cluster: cluster.clone(),
            role: role.clone(),
            object_name,
        })
    }

    /// The cluster.
    pub fn cluster(&self) -> &ClusterName {
        &self.cluster
    }

    /// The role.
    pub fn role(&self) -> &RoleName {
        &self.role
    }

    /// `<cluster>-<role>`: the PodDisruptionBudget and any role-level Service.
    pub fn object_name(&self) -> &str {
        &self.object_name
    }

    /// A role group of this role; see [`RoleGroupRef::new`].
    pub fn role_group(&self, role_group: &RoleGroupName) -> Result<RoleGroupRef, NameError> {
        RoleGroupRef::new(&self.cluster, &self.role, role_group)
    }
}

/// One role group of one role of one cluster, for per-role-group objects.
///
/// ```
/// use strata_model::names::{ClusterName, RoleGroupName, RoleGroupRef, RoleName};
///
/// let rg = RoleGroupRef::new(
///     &ClusterName::new("simple-zk").unwrap(),
///     &RoleName::new("server").unwrap(),
///     &RoleGroupName::new("default").unwrap(),
/// )
/// .unwrap();
/// assert_eq!(rg.object_name(), "simple-zk-server-default");
/// assert_eq!(
///     rg.pod_fqdn(0, "data", rg.object_name(), "cluster.local"),
///     "simple-zk-server-default-0.simple-zk-server-default.data.svc.cluster.local"
/// );
/// ```
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RoleGroupRef {
    cluster: ClusterName,
    role: RoleName,
    role_group: RoleGroupName,
    object_name: String,
}

impl RoleGroupRef {
    /// Checks that `<cluster>-<role>-<rolegroup>` fits in a StatefulSet name (52), which
    /// also makes it fit for the ConfigMap, the headless Service and the Pod host names.
    pub fn new(
        cluster: &ClusterName,
        role: &RoleName,
        role_group: &RoleGroupName,
    ) -> Result<Self, NameError> {
        let object_name = check_length(
            format!("{cluster}-{role}-{role_group}"),
            NameKind::StatefulSet,
        )?;
        Ok(Self {
            cluster: cluster.clone(),
            role: role.clone(),
            role_group: role_group.clone(),
            object_name,
        })
    }

    /// The cluster.
    pub fn cluster(&self) -> &ClusterName {
        &self.cluster
    }

    /// The role.
    pub fn role(&self) -> &RoleName {
        &self.role
    }

    /// The role group.
    pub fn role_group(&self) -> &RoleGroupName {
        &self.role_group
    }

    /// `<cluster>-<role>-<rolegroup>`: the StatefulSet, its ConfigMap and headless Service.
    pub fn object_name(&self) -> &str {
        &self.object_name
    }

    /// `<statefulset>-<ordinal>`: the name (and host name) of one Pod.
    pub fn pod_name(&self, ordinal: u16) -> String {
        format!("{}-{ordinal}", self.object_name)
    }

    /// The DNS name of one Pod's own Service
    /// ([`pod_service`](crate::build::service::pod_service)):
    /// `<pod>.<namespace>.svc.<cluster_domain>`.
    pub fn pod_service_host(&self, ordinal: u16, namespace: &str, cluster_domain: &str) -> String {
        format!(
            "{}.{namespace}.svc.{cluster_domain}",
            self.pod_name(ordinal)
        )
    }

    /// The stable DNS name of one Pod behind `headless_service`:
    /// `<pod>.<service>.<namespace>.svc.<cluster_domain>`.
    pub fn pod_fqdn(
        &self,
        ordinal: u16,
        namespace: &str,
        headless_service: &str,
        cluster_domain: &str,
    ) -> String {
        format!(
            "{}.{headless_service}.{namespace}.svc.{cluster_domain}",
            self.pod_name(ordinal)
        )
    }
}

#[cfg(test)]
mod tests;

//! Who a cluster, a role and a role group are: checked names, namespace, image and the
//! recommended labels, the same for every product.
//!
//! Everything a product's objects are named and labelled after is checked here, so an
//! over-long or invalid name fails validation with a clear reason instead of failing at
//! apply time, and every operator reports the same problem with the same reason.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::image::{ProductImage, ResolvedImage};
use crate::labels::{LabelError, RecommendedLabels};
use crate::names::{ClusterName, NameError, RoleGroupName, RoleGroupRef, RoleName, RoleRef};
use crate::pdb::PdbConfig;

/// The facts of a product every identity is derived from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Product {
    /// The custom resource kind, for messages (`ZookeeperCluster`).
    pub kind: &'static str,
    /// `app.kubernetes.io/name` (`zookeeper`).
    pub app_name: &'static str,
    /// `app.kubernetes.io/managed-by` (`zookeeper-operator`).
    pub operator_name: &'static str,
    /// The upstream image repository; the tag is the product version.
    pub repository: &'static str,
    /// The product version run when the spec names none.
    pub default_version: &'static str,
}

/// Why a cluster's identity is invalid; each variant's name is the condition reason.
#[derive(Debug, thiserror::Error, strum::IntoStaticStr)]
pub enum IdentityError {
    /// A derived object name exceeds its kind's limit.
    #[error("{0}")]
    NameTooLong(NameError),
    /// The cluster or role name is not a DNS label.
    #[error("{0}")]
    InvalidName(NameError),
    /// A role group name is not a DNS label.
    #[error("{0}")]
    InvalidRoleGroupName(NameError),
    /// Namespaced objects need a namespace.
    #[error("{kind} {name} has no namespace")]
    MissingNamespace {
        /// The kind.
        kind: &'static str,
        /// The object's name.
        name: String,
    },
    /// The image cannot be resolved.
    #[error("spec.image: {0}")]
    InvalidImage(String),
    /// A label value would be refused by the API server.
    #[error("{0}")]
    InvalidLabelValue(LabelError),
    /// The role has no role group, so nothing would run.
    #[error("spec.{role}.roleGroups is empty; define at least one role group")]
    NoRoleGroups {
        /// The role's field name.
        role: String,
    },
    /// The cluster DNS domain cannot be part of a host name.
    #[error("cluster domain {0:?} is not a valid DNS name")]
    InvalidClusterDomain(String),
}

impl IdentityError {
    /// The condition reason: the variant's name.
    pub fn reason(&self) -> &'static str {
        self.into()
    }

    fn of_name(error: NameError) -> Self {
        match &error {
            NameError::TooLong { .. } => Self::NameTooLong(error),
            NameError::InvalidLabel { what, .. } if what.starts_with("role group") => {
                Self::InvalidRoleGroupName(error)
            }
            NameError::InvalidLabel { .. } => Self::InvalidName(error),
        }
    }
}

/// A cluster's checked identity.
#[derive(Clone, Debug, PartialEq)]
pub struct ClusterIdentity {
    /// The cluster's name.
    pub name: ClusterName,
    /// Its namespace, and every built object's.
    pub namespace: String,
    /// The image every pod runs.
    pub image: ResolvedImage,
    /// The labels of cluster-wide objects (client Service, discovery ConfigMap).
    pub labels: RecommendedLabels,
}

/// A role's checked identity.
#[derive(Clone, Debug, PartialEq)]
pub struct RoleIdentity {
    /// `<cluster>-<role>`: the role's PDB name.
    pub name: RoleRef,
    /// Labels of role-wide objects; their selector spans every pod of the role.
    pub labels: RecommendedLabels,
}

/// A role, checked: who it is, its PodDisruptionBudget settings and its role groups,
/// the same for every product. `R` says which role it is (a product's role type, or
/// `()` where the product has one role); `G` is the product's checked role group.
#[derive(Clone, Debug, PartialEq)]
pub struct ValidatedRole<R, G> {
    /// Which role.
    pub role: R,
    /// `<cluster>-<role>`: the role's PodDisruptionBudget name.
    pub name: RoleRef,
    /// Labels of role-wide objects; their selector spans every pod of the role.
    pub labels: RecommendedLabels,
    /// The role's PodDisruptionBudget settings.
    pub pdb: PdbConfig,
    /// The role groups, sorted by name.
    pub groups: Vec<G>,
}

/// A checked role group's replicas, so its role can count its pods.
pub trait Replicas {
    /// Pods the role group runs, as the spec asks.
    fn replicas(&self) -> u16;
}

impl<R, G: Replicas> ValidatedRole<R, G> {
    /// Pods of every role group of the role, as the spec asks.
    pub fn replicas(&self) -> u16 {
        self.groups.iter().map(Replicas::replicas).sum()
    }
}

impl<R, G> ValidatedRole<R, G> {
    /// The role's PodDisruptionBudget (ADR030 option 1), `<cluster>-<role>` in
    /// `namespace`, spanning every role group of the role, with the user's
    /// `maxUnavailable` or the product's `default_max_unavailable`. `None` when the user
    /// disabled it, so the apply step prunes an existing one.
    pub fn pdb(
        &self,
        namespace: &str,
        default_max_unavailable: u16,
    ) -> Option<k8s_openapi::api::policy::v1::PodDisruptionBudget> {
        crate::pdb::RolePdb {
            cluster: self.name.cluster().as_str().to_owned(),
            namespace: namespace.to_owned(),
            app_name: self.labels.app_name().to_owned(),
            role: self.name.role().as_str().to_owned(),
            labels: self.labels.labels(),
            default_max_unavailable,
        }
        .build(&self.pdb)
    }

    /// The role `role` with `identity`, the PodDisruptionBudget settings `pdb` and
    /// its checked `groups`.
    pub fn new(role: R, identity: RoleIdentity, pdb: PdbConfig, groups: Vec<G>) -> Self {
        Self {
            role,
            name: identity.name,
            labels: identity.labels,
            pdb,
            groups,
        }
    }
}

/// A role group's checked identity.
#[derive(Clone, Debug, PartialEq)]
pub struct RoleGroupIdentity {
    /// `<cluster>-<role>-<group>`: StatefulSet, headless Service and ConfigMap.
    pub name: RoleGroupRef,
    /// Labels of the group's objects and pods.
    pub labels: RecommendedLabels,
}

impl ClusterIdentity {
    /// Checks the identity of the cluster with `metadata` and `image`.
    pub fn new(
        product: Product,
        metadata: &ObjectMeta,
        image: &ProductImage,
    ) -> Result<Self, IdentityError> {
        let name = ClusterName::new(metadata.name.as_deref().unwrap_or_default())
            .map_err(IdentityError::of_name)?;
        let namespace =
            metadata
                .namespace
                .clone()
                .ok_or_else(|| IdentityError::MissingNamespace {
                    kind: product.kind,
                    name: name.to_string(),
                })?;
        let image = image
            .resolve(product.repository, product.default_version)
            .map_err(|error| IdentityError::InvalidImage(error.to_string()))?;
        let labels = RecommendedLabels::new(
            product.app_name,
            name.as_str(),
            product.operator_name,
            &image.product_version,
        )
        .map_err(IdentityError::InvalidLabelValue)?;
        Ok(Self {
            name,
            namespace,
            image,
            labels,
        })
    }

    /// The identity of the cluster's role `role` (`server`, `namenode`).
    pub fn role(&self, role: &str) -> Result<RoleIdentity, IdentityError> {
        let role_name = RoleName::new(role).map_err(IdentityError::of_name)?;
        Ok(RoleIdentity {
            name: RoleRef::new(&self.name, &role_name).map_err(IdentityError::of_name)?,
            labels: self
                .labels
                .for_role(role)
                .map_err(IdentityError::InvalidLabelValue)?,
        })
    }

    /// The identity of the role `role` whose spec field `field` holds `role_groups`; a
    /// role without a role group is refused, since nothing of it would run.
    pub fn role_with_groups<T>(
        &self,
        role: &str,
        field: &str,
        role_groups: &std::collections::BTreeMap<String, T>,
    ) -> Result<RoleIdentity, IdentityError> {
        let identity = self.role(role)?;
        if role_groups.is_empty() {
            return Err(IdentityError::NoRoleGroups {
                role: field.to_owned(),
            });
        }
        Ok(identity)
    }

    /// The identity of the role group `group` of `role`.
    pub fn role_group(
        &self,
        role: &RoleIdentity,
        group: &str,
    ) -> Result<RoleGroupIdentity, IdentityError> {
        let group_name = RoleGroupName::new(group).map_err(IdentityError::of_name)?;
        Ok(RoleGroupIdentity {
            name: role
                .name
                .role_group(&group_name)
                .map_err(IdentityError::of_name)?,
            labels: self
                .labels
                .for_role_group(role.name.role().as_str(), group_name.as_str())
                .map_err(IdentityError::InvalidLabelValue)?,
        })
    }
}

/// Kubernetes' default cluster DNS domain.
pub const DEFAULT_CLUSTER_DOMAIN: &str = "cluster.local";

/// Checks a cluster DNS domain (`cluster.local`): it becomes part of every host name.
pub fn check_cluster_domain(domain: &str) -> Result<(), IdentityError> {
    let label_ok = |label: &str| {
        !label.is_empty()
            && label.len() <= 63
            && label
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            && !label.starts_with('-')
            && !label.ends_with('-')
    };
    if domain.len() <= 253 && domain.split('.').all(label_ok) {
        Ok(())
    } else {
        Err(IdentityError::InvalidClusterDomain(domain.to_owned()))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use rstest::rstest;

    use super::*;

    pub(crate) const PRODUCT: Product = Product {
        kind: "ExampleCluster",
        app_name: "example",
        operator_name: "example-operator",
        repository: "example",
        default_version: "1.0.0",
    };

    fn meta(name: &str, namespace: Option<&str>) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.to_owned()),
            namespace: namespace.map(str::to_owned),
            ..ObjectMeta::default()
        }
    }

    #[rstest]
    #[case::capitals("Example", Some("ns"), "InvalidName")]
    #[case::no_namespace("example", None, "MissingNamespace")]
    fn cluster_problems(#[case] name: &str, #[case] namespace: Option<&str>, #[case] reason: &str) {
        let result =
            ClusterIdentity::new(PRODUCT, &meta(name, namespace), &ProductImage::default());
        assert_eq!(result.err().map(|error| error.reason()), Some(reason));
    }

    #[test]
    fn role_groups_are_named_and_labelled_after_cluster_and_role() {
        let cluster = ClusterIdentity::new(
            PRODUCT,
            &meta("simple", Some("ns")),
            &ProductImage::default(),
        )
        .expect("valid");
        let role = cluster.role("server").expect("valid role");
        let group = cluster.role_group(&role, "default").expect("valid group");
        assert_eq!(group.name.object_name(), "simple-server-default");
        assert_eq!(cluster.image.image, "example:1.0.0");
        assert_eq!(
            cluster
                .role_group(&role, "Default")
                .err()
                .map(|error| error.reason()),
            Some("InvalidRoleGroupName")
        );
    }

    #[rstest]
    #[case::default_domain("cluster.local", true)]
    #[case::capitals("Cluster.Local", false)]
    #[case::empty_label("cluster..local", false)]
    fn cluster_domains(#[case] domain: &str, #[case] valid: bool) {
        assert_eq!(check_cluster_domain(domain).is_ok(), valid);
    }
}

//! The cluster's DNS domain, which every product needs for the fully
//! qualified host names it writes into config files
//! (`<pod>.<service>.<namespace>.svc.<domain>`).
//!
//! Most clusters use `cluster.local`, but not all, and a wrong domain makes
//! every product pod crash-loop on names that do not resolve. So the domain is
//! taken, in this order, from:
//! 1. the `--cluster-domain` flag or `KUBERNETES_CLUSTER_DOMAIN` (the chart's
//!    `clusterDomain` value);
//! 2. the operator pod's own resolver configuration: the kubelet writes
//!    `search <namespace>.svc.<domain> svc.<domain> <domain>` into
//!    `/etc/resolv.conf` of every pod with the default DNS policy;
//! 3. `cluster.local`.

pub use strata_model::identity::DEFAULT_CLUSTER_DOMAIN;
use strata_model::identity::check_cluster_domain;

/// Where a pod's resolver configuration lives.
pub const RESOLV_CONF: &str = "/etc/resolv.conf";

/// Where the domain came from, for the start-up log line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, strum::Display)]
pub enum DomainSource {
    /// `--cluster-domain` or `KUBERNETES_CLUSTER_DOMAIN`.
    #[strum(serialize = "the --cluster-domain flag")]
    Flag,
    /// The `search` line of the pod's resolver configuration.
    #[strum(serialize = "/etc/resolv.conf")]
    ResolvConf,
    /// Neither said anything.
    #[strum(serialize = "the default")]
    Default,
}

/// The cluster domain from the `search` line of a resolver configuration:
/// the part after `svc.` of its first `svc.<domain>` entry.
pub fn from_resolv_conf(resolv_conf: &str) -> Option<String> {
    resolv_conf
        .lines()
        .filter_map(|line| line.trim().strip_prefix("search"))
        .filter(|rest| rest.starts_with(char::is_whitespace))
        .flat_map(str::split_whitespace)
        .find_map(|entry| entry.strip_prefix("svc."))
        .map(|domain| domain.trim_end_matches('.').to_owned())
        .filter(|domain| check_cluster_domain(domain).is_ok())
}

/// The domain to use: the flag's when given (refused when it is not a valid
/// domain), else the resolver configuration's, else the default.
pub fn resolve(flag: &str, resolv_conf: Option<&str>) -> Result<(String, DomainSource), String> {
    let flag = flag.trim().trim_end_matches('.');
    if !flag.is_empty() {
        check_cluster_domain(flag)
            .map_err(|error| format!("--cluster-domain {flag:?}: {error}"))?;
        return Ok((flag.to_owned(), DomainSource::Flag));
    }
    Ok(resolv_conf.and_then(from_resolv_conf).map_or_else(
        || (DEFAULT_CLUSTER_DOMAIN.to_owned(), DomainSource::Default),
        |domain| (domain, DomainSource::ResolvConf),
    ))
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case::kubelet_default(
        "search operators.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.96.0.10\noptions ndots:5\n",
        Some("cluster.local")
    )]
    #[case::custom_domain(
        "nameserver 10.0.0.10\nsearch team-a.svc.k8s.example.com svc.k8s.example.com k8s.example.com corp.example.com\n",
        Some("k8s.example.com")
    )]
    #[case::trailing_dot("search svc.cluster.local.\n", Some("cluster.local"))]
    #[case::no_search_line("nameserver 127.0.0.53\n", None)]
    #[case::search_without_svc_entry("search corp.example.com\n", None)]
    #[case::searchlist_is_not_search("searchlist svc.cluster.local\n", None)]
    #[case::empty("", None)]
    fn the_domain_is_read_from_the_search_line(
        #[case] resolv_conf: &str,
        #[case] expected: Option<&str>,
    ) {
        assert_eq!(from_resolv_conf(resolv_conf).as_deref(), expected);
    }

    #[rstest]
    #[case::flag_wins(
        "example.org",
        Some("search svc.cluster.local"),
        "example.org",
        DomainSource::Flag
    )]
    #[case::resolv_conf_without_flag(
        "",
        Some("search svc.k8s.example.com"),
        "k8s.example.com",
        DomainSource::ResolvConf
    )]
    #[case::default_outside_a_pod("", None, "cluster.local", DomainSource::Default)]
    #[case::default_when_resolv_conf_says_nothing(
        "",
        Some("nameserver 1.1.1.1"),
        "cluster.local",
        DomainSource::Default
    )]
    fn the_flag_wins_then_the_resolver_then_the_default(
        #[case] flag: &str,
        #[case] resolv_conf: Option<&str>,
        #[case] domain: &str,
        #[case] source: DomainSource,
    ) {
        assert_eq!(resolve(flag, resolv_conf), Ok((domain.to_owned(), source)));
    }

    #[test]
    fn an_invalid_flag_is_refused_naming_it() {
        let error = resolve("Not A Domain", None).unwrap_err();
        assert!(
            error.contains("--cluster-domain \"Not A Domain\""),
            "{error}"
        );
    }
}

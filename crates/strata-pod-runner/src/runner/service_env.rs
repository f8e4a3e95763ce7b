//! The kubelet's variables for the API server's Service.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Service;

/// The variables the kubelet gives every container for the `kubernetes` Service of
/// the `default` namespace (the API server), once the runner knows that Service:
/// `KUBERNETES_SERVICE_HOST` and `_PORT`, which in-cluster clients read, and the
/// Docker-link style `KUBERNETES_PORT_*`.
pub(super) fn master_service_env(
    services: &BTreeMap<(String, String), Service>,
) -> Vec<(String, String)> {
    let Some(spec) = services
        .get(&("default".to_owned(), "kubernetes".to_owned()))
        .and_then(|service| service.spec.as_ref())
    else {
        return Vec::new();
    };
    let (Some(host), Some(port)) = (
        spec.cluster_ip.clone().filter(|ip| ip != "None"),
        spec.ports.iter().flatten().next(),
    ) else {
        return Vec::new();
    };
    let number = port.port;
    let protocol = port.protocol.clone().unwrap_or_else(|| "TCP".to_owned());
    let lower = protocol.to_lowercase();
    let url = format!("{lower}://{host}:{number}");
    let link = format!("KUBERNETES_PORT_{number}_{protocol}");
    let mut env = vec![
        ("KUBERNETES_SERVICE_HOST".to_owned(), host.clone()),
        ("KUBERNETES_SERVICE_PORT".to_owned(), number.to_string()),
    ];
    if let Some(name) = &port.name {
        env.push((
            format!(
                "KUBERNETES_SERVICE_PORT_{}",
                name.to_uppercase().replace('-', "_")
            ),
            number.to_string(),
        ));
    }
    env.extend([
        ("KUBERNETES_PORT".to_owned(), url.clone()),
        (link.clone(), url),
        (format!("{link}_PROTO"), lower),
        (format!("{link}_PORT"), number.to_string()),
        (format!("{link}_ADDR"), host),
    ]);
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_api_servers_service_gives_the_kubelets_variables() {
        let service: Service = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "kubernetes", "namespace": "default"},
            "spec": {"clusterIP": "10.96.0.1", "ports": [{"name": "https", "port": 443, "protocol": "TCP"}]}
        }))
        .expect("a Service");
        let services = BTreeMap::from([(("default".to_owned(), "kubernetes".to_owned()), service)]);
        let env: BTreeMap<String, String> = master_service_env(&services).into_iter().collect();
        assert_eq!(env["KUBERNETES_SERVICE_HOST"], "10.96.0.1");
        assert_eq!(env["KUBERNETES_SERVICE_PORT"], "443");
        assert_eq!(env["KUBERNETES_SERVICE_PORT_HTTPS"], "443");
        assert_eq!(env["KUBERNETES_PORT"], "tcp://10.96.0.1:443");
        assert_eq!(env["KUBERNETES_PORT_443_TCP_ADDR"], "10.96.0.1");
        assert!(master_service_env(&BTreeMap::new()).is_empty());
    }
}

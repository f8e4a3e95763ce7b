//! A container's environment and command line as the kubelet builds them: the image's
//! environment, then `envFrom`, then `env` in order, with `valueFrom` resolved from the
//! pod (the downward API), its ConfigMaps and its Secrets, and `$(NAME)` references
//! expanded in values, `command` and `args`.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, EnvVar, Pod};

use crate::volume::Sources;

/// Why a container's environment could not be built: the kubelet refuses to start the
/// container (`CreateContainerConfigError`) for the same reasons.
#[derive(Debug, thiserror::Error)]
pub enum EnvError {
    /// A referenced object or key is missing and not optional.
    #[error("env {variable}: {what} not found")]
    Missing {
        /// The variable.
        variable: String,
        /// The object and key.
        what: String,
    },
    /// A `valueFrom` the runner does not resolve.
    #[error("env {variable}: the pod runner does not resolve {what}")]
    Unsupported {
        /// The variable.
        variable: String,
        /// What it asked for.
        what: String,
    },
}

/// A downward-API field of the pod, as `fieldRef.fieldPath` names it.
pub fn field_value(pod: &Pod, path: &str) -> Option<String> {
    let metadata = &pod.metadata;
    let spec = pod.spec.as_ref();
    let status = pod.status.as_ref();
    let keyed = |map: Option<&BTreeMap<String, String>>, prefix: &str| {
        let key = path.strip_prefix(prefix)?.strip_suffix("']")?;
        map.and_then(|map| map.get(key)).cloned()
    };
    match path {
        "metadata.name" => metadata.name.clone(),
        "metadata.namespace" => Some(
            metadata
                .namespace
                .clone()
                .unwrap_or_else(|| "default".to_owned()),
        ),
        "metadata.uid" => metadata.uid.clone(),
        "spec.nodeName" => spec.and_then(|spec| spec.node_name.clone()),
        "spec.serviceAccountName" => spec.and_then(|spec| spec.service_account_name.clone()),
        "status.podIP" => status.and_then(|status| status.pod_ip.clone()),
        "status.hostIP" => status.and_then(|status| status.host_ip.clone()),
        _ if path.starts_with("metadata.labels['") => {
            keyed(metadata.labels.as_ref(), "metadata.labels['")
        }
        _ if path.starts_with("metadata.annotations['") => {
            keyed(metadata.annotations.as_ref(), "metadata.annotations['")
        }
        _ => None,
    }
}

/// The container's whole environment, in order: the image's first, each later entry
/// replacing an earlier one of the same name.
pub fn environment(
    pod: &Pod,
    container: &Container,
    image_env: &[(String, String)],
    sources: &Sources,
) -> Result<Vec<(String, String)>, EnvError> {
    let mut env: Vec<(String, String)> = image_env.to_vec();
    let set = |env: &mut Vec<(String, String)>, name: String, value: String| {
        env.retain(|(existing, _)| *existing != name);
        env.push((name, value));
    };
    for from in container.env_from.iter().flatten() {
        let prefix = from.prefix.clone().unwrap_or_default();
        let entries = if let Some(config_map) = &from.config_map_ref {
            optional(
                sources.config_map(&config_map.name),
                config_map.optional,
                &prefix,
                "ConfigMap",
                &config_map.name,
            )?
        } else if let Some(secret) = &from.secret_ref {
            optional(
                sources.secret(&secret.name),
                secret.optional,
                &prefix,
                "Secret",
                &secret.name,
            )?
        } else {
            BTreeMap::new()
        };
        for (key, bytes) in entries {
            set(
                &mut env,
                format!("{prefix}{key}"),
                String::from_utf8_lossy(&bytes).into_owned(),
            );
        }
    }
    for variable in container.env.iter().flatten() {
        let value = match &variable.value_from {
            None => expand(variable.value.as_deref().unwrap_or_default(), &env),
            Some(_) => match value_from(pod, variable, sources)? {
                Some(value) => value,
                None => continue,
            },
        };
        set(&mut env, variable.name.clone(), value);
    }
    Ok(env)
}

fn optional(
    found: Option<BTreeMap<String, Vec<u8>>>,
    optional: Option<bool>,
    prefix: &str,
    kind: &str,
    name: &str,
) -> Result<BTreeMap<String, Vec<u8>>, EnvError> {
    match found {
        Some(entries) => Ok(entries),
        None if optional == Some(true) => Ok(BTreeMap::new()),
        None => Err(EnvError::Missing {
            variable: format!("{prefix}*"),
            what: format!("{kind} {name}"),
        }),
    }
}

/// The value of a `valueFrom`, or `None` for an optional key that is absent (the
/// variable is then left unset).
fn value_from(pod: &Pod, variable: &EnvVar, sources: &Sources) -> Result<Option<String>, EnvError> {
    let name = variable.name.clone();
    let Some(from) = &variable.value_from else {
        return Ok(None);
    };
    let keyed = |entries: Option<BTreeMap<String, Vec<u8>>>,
                 key: &str,
                 optional: Option<bool>,
                 what: String| {
        match entries.and_then(|entries| entries.get(key).cloned()) {
            Some(bytes) => Ok(Some(String::from_utf8_lossy(&bytes).into_owned())),
            None if optional == Some(true) => Ok(None),
            None => Err(EnvError::Missing {
                variable: name.clone(),
                what,
            }),
        }
    };
    if let Some(field) = &from.field_ref {
        return field_value(pod, &field.field_path)
            .map(Some)
            .ok_or_else(|| EnvError::Unsupported {
                variable: name.clone(),
                what: format!("fieldRef {}", field.field_path),
            });
    }
    if let Some(secret) = &from.secret_key_ref {
        return keyed(
            sources.secret(&secret.name),
            &secret.key,
            secret.optional,
            format!("key {} of Secret {}", secret.key, secret.name),
        );
    }
    if let Some(config_map) = &from.config_map_key_ref {
        return keyed(
            sources.config_map(&config_map.name),
            &config_map.key,
            config_map.optional,
            format!("key {} of ConfigMap {}", config_map.key, config_map.name),
        );
    }
    Err(EnvError::Unsupported {
        variable: name,
        what: "resourceFieldRef".to_owned(),
    })
}

/// `$(NAME)` replaced by the variable's value when it is set; `$$` escapes a `$`;
/// anything else is kept as written, as the kubelet does.
pub fn expand(text: &str, env: &[(String, String)]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(escaped) = after.strip_prefix('$') {
            out.push('$');
            rest = escaped;
        } else if let Some(reference) = after.strip_prefix('(')
            && let Some(end) = reference.find(')')
            && let Some((_, value)) = env.iter().rev().find(|(name, _)| *name == reference[..end])
        {
            out.push_str(value);
            rest = &reference[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// `command` then `args`, expanded; the image's entrypoint and command when the
/// container gives neither.
pub fn command_line(
    container: &Container,
    entrypoint: &[String],
    env: &[(String, String)],
) -> Vec<String> {
    let expanded = |words: &[String]| {
        words
            .iter()
            .map(|word| expand(word, env))
            .collect::<Vec<_>>()
    };
    match (&container.command, &container.args) {
        (Some(command), args) => [
            expanded(command),
            expanded(args.as_deref().unwrap_or_default()),
        ]
        .concat(),
        (None, Some(args)) => [entrypoint.to_vec(), expanded(args)].concat(),
        (None, None) => entrypoint.to_vec(),
    }
}

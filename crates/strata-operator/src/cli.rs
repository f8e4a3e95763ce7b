//! The command line every operator shares: `run`, `crd` and `render -f FILE`.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::Value;

use crate::cluster_domain;
use crate::controller::OperatorRuntime;
use crate::crds;
use crate::http::{self, HealthState};
use crate::leader::{self, Election};
use crate::pod_security::{PodSecurity, PodSecuritySetting};
use crate::render::{self, RenderError, Rendered};

/// What a product operator provides to the shared CLI.
pub trait Operator {
    /// The operator's name, e.g. `zookeeper-operator`. Used as field manager,
    /// `app.kubernetes.io/managed-by` value and Event reporter.
    const NAME: &'static str;

    /// The operator's CustomResourceDefinitions, derived from its types: for `crd`,
    /// `cargo xtask gen-crds` and the Helm chart.
    fn crds() -> Vec<CustomResourceDefinition>;

    /// The operator's controllers as their RBAC rules see them, derived from the same
    /// definitions `run` starts: for `cargo xtask gen-helm`.
    fn registration() -> crate::rbac::OperatorRegistration;

    /// Every object that would be applied for the custom resources in
    /// `documents`, without a cluster, and the resources that cannot be rendered
    /// offline. The documents are of the operator's kinds only, already checked
    /// against the CRDs (see [`crate::render`] for the rules).
    fn render(documents: &[Value]) -> Result<Rendered, RenderError>;

    /// Runs the operator's controllers until the runtime shuts down.
    fn run(runtime: OperatorRuntime) -> impl Future<Output = ()> + Send;
}

#[derive(Debug, Parser)]
#[command(version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the controllers against the cluster from the kubeconfig or the
    /// in-cluster service account.
    Run(RunArgs),
    /// Print the CustomResourceDefinitions as YAML.
    Crd,
    /// Print, offline, every object the operator would apply for the custom
    /// resources in FILE, as sorted multi-document YAML.
    ///
    /// Fails, printing nothing on stdout, when a document is not one of the
    /// operator's kinds or would be refused by `kubectl apply` (unknown field,
    /// wrong type), or when nothing at all is rendered. Resources that cannot
    /// be rendered offline are skipped with a note on stderr.
    Render {
        /// A YAML file with one or more documents; `-` reads stdin.
        #[arg(short = 'f', long = "filename")]
        file: PathBuf,
        /// Render as an operator with this pod security policy would apply it:
        /// `openshift` leaves every uid, gid and `fsGroup` to the platform.
        #[arg(long, value_enum, default_value_t = PodSecurity::Standard)]
        pod_security: PodSecurity,
    },
}

#[derive(Debug, clap::Args)]
struct RunArgs {
    /// Watch only this namespace; empty watches all namespaces.
    #[arg(long, env = "WATCH_NAMESPACE", default_value = "")]
    watch_namespace: String,
    /// Address of the /healthz, /readyz and /metrics endpoints.
    #[arg(long, env = "HTTP_ADDRESS", default_value = "0.0.0.0:8080")]
    http_address: SocketAddr,
    /// Log filter in tracing's EnvFilter syntax, e.g. `info` or `debug,kube=info`.
    #[arg(long, env = "LOG_LEVEL", default_value = "info")]
    log_level: String,
    /// Namespace of the leader-election Lease; empty means the watched
    /// namespace, else the namespace of the kubeconfig context or of the
    /// in-cluster service account. The chart sets the operator's own.
    #[arg(long, env = "POD_NAMESPACE", default_value = "")]
    lease_namespace: String,
    /// This instance's pod name, the readable part of its Lease holder identity.
    #[arg(long, env = "POD_NAME", default_value = "")]
    pod_name: String,
    /// The cluster's DNS domain; empty reads it from the pod's /etc/resolv.conf,
    /// and falls back to cluster.local.
    #[arg(long, env = "KUBERNETES_CLUSTER_DOMAIN", default_value = "")]
    cluster_domain: String,
    /// Log line format.
    #[arg(long, env = "LOG_FORMAT", value_enum, default_value_t = LogFormat::Json)]
    log_format: LogFormat,
    /// Apply this operator's CRDs when it becomes the leader, so `helm upgrade`
    /// upgrades them (Helm never upgrades a chart's `crds/`); see `crate::crds`.
    #[arg(long, env = "MANAGE_CRDS", default_value_t = true, action = clap::ArgAction::Set)]
    manage_crds: bool,
    /// Who product pods run as: `standard` (each image's fixed uid), `openshift`
    /// (none: restricted-v2 assigns it) or `auto` (openshift when the cluster serves
    /// `security.openshift.io`); see `crate::pod_security`.
    #[arg(long, env = "POD_SECURITY", value_enum, default_value_t = PodSecuritySetting::Auto)]
    pod_security: PodSecuritySetting,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum LogFormat {
    Json,
    Text,
}

/// Parses the command line and runs the chosen command for operator `O`.
pub fn main<O: Operator>() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Crd => print_crds::<O>(),
        Command::Render { file, pod_security } => print_render::<O>(&file, pod_security),
        Command::Run(args) => run::<O>(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("{}: {message}", O::NAME);
            ExitCode::FAILURE
        }
    }
}

fn print_crds<O: Operator>() -> Result<(), String> {
    let mut out = String::new();
    for crd in O::crds() {
        out.push_str("---\n");
        out.push_str(&serde_yaml_ng::to_string(&crd).map_err(|error| error.to_string())?);
    }
    print!("{out}");
    Ok(())
}

/// Renders the file for operator `O` into YAML, by the rules of
/// [`render::render_manifest`], which also says what was skipped.
pub fn render_file<O: Operator>(yaml: &str) -> Result<String, RenderError> {
    render::render_manifest::<O>(yaml).map(|manifest| manifest.yaml)
}

fn print_render<O: Operator>(file: &PathBuf, pod_security: PodSecurity) -> Result<(), String> {
    let yaml = if file.as_os_str() == "-" {
        std::io::read_to_string(std::io::stdin())
            .map_err(|error| format!("reading stdin: {error}"))?
    } else {
        std::fs::read_to_string(file)
            .map_err(|error| format!("reading {}: {error}", file.display()))?
    };
    let manifest = render::render_manifest_for::<O>(&yaml, pod_security)
        .map_err(|error| format!("{}: {error}", file.display()))?;
    for skipped in &manifest.skipped {
        eprintln!("{}: {}: skipped {skipped}", O::NAME, file.display());
    }
    print!("{}", manifest.yaml);
    Ok(())
}

/// How long `run` waits for running reconciles after SIGTERM or Ctrl-C before it exits
/// anyway: shorter than the chart's `terminationGracePeriodSeconds` (30 s), so the
/// process ends on its own even when the API server is unreachable and a reconcile
/// can neither finish nor fail.
pub const SHUTDOWN_BOUND: std::time::Duration = std::time::Duration::from_secs(20);

fn run<O: Operator>(args: RunArgs) -> Result<(), String> {
    init_tracing(&args.log_level, args.log_format)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|error| format!("starting the async runtime: {error}"))?;
    runtime.block_on(async move {
        let config = kube::Config::infer()
            .await
            .map_err(|error| format!("finding the Kubernetes API server: {error}"))?;
        let api_server = config.cluster_url.to_string();
        let client = kube::Client::try_from(config)
            .map_err(|error| format!("connecting to the API server {api_server}: {error}"))?;
        let namespace = Some(args.watch_namespace).filter(|namespace| !namespace.is_empty());
        let lease_namespace = Some(args.lease_namespace)
            .filter(|namespace| !namespace.is_empty())
            .or_else(|| namespace.clone())
            .unwrap_or_else(|| client.default_namespace().to_owned());
        let election = Election::new(
            O::NAME,
            lease_namespace,
            leader::identity(Some(&args.pod_name)),
        );
        let resolv_conf = std::fs::read_to_string(cluster_domain::RESOLV_CONF).ok();
        let (domain, domain_source) =
            cluster_domain::resolve(&args.cluster_domain, resolv_conf.as_deref())?;
        let mut operator = OperatorRuntime::new(client, O::NAME, namespace);
        operator.api_server = api_server;
        operator.cluster_domain = domain;
        operator.pod_security = args.pod_security.detect(&operator.client).await;
        let state = HealthState {
            ready: operator.ready_flag(),
            metrics: operator.metrics.clone(),
        };
        let http = tokio::spawn(http::serve(
            args.http_address,
            state,
            operator.shutdown.clone(),
        ));
        let shutdown = operator.shutdown.clone();
        tokio::spawn(async move {
            wait_for_termination().await;
            tracing::info!("termination requested; finishing running reconciles");
            shutdown.cancel();
        });
        tracing::info!(
            operator = O::NAME,
            namespace = ?operator.namespace,
            api_server = %operator.api_server,
            lease = %election.lease_name,
            lease_namespace = %election.namespace,
            identity = %election.identity,
            cluster_domain = %operator.cluster_domain,
            cluster_domain_from = %domain_source,
            pod_security = %operator.pod_security,
            pod_security_setting = %args.pod_security,
            "starting; the controllers run while this instance holds the Lease"
        );
        let shutdown = operator.shutdown.clone();
        tokio::select! {
            () = leader::lead(&operator, &election, |term| {
                let manage_crds = args.manage_crds;
                async move {
                    if manage_crds {
                        upgrade_crds::<O>(&term).await;
                    }
                    O::run(term).await;
                }
            }) => {}
            () = async {
                shutdown.cancelled().await;
                tokio::time::sleep(SHUTDOWN_BOUND).await;
            } => {
                tracing::warn!(
                    api_server = %operator.api_server,
                    "reconciles did not finish within {}s of the termination request; exiting anyway",
                    SHUTDOWN_BOUND.as_secs()
                );
            }
        }
        operator.shutdown.cancel();
        match http.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(error)) => Err(format!("serving {}: {error}", args.http_address)),
            Err(error) => Err(format!("the HTTP task failed: {error}")),
        }
    })
}

/// Applies the operator's CRDs; a failure is logged, and the controllers start anyway
/// with the CRDs as installed.
async fn upgrade_crds<O: Operator>(runtime: &OperatorRuntime) {
    match crds::upgrade(
        &runtime.client,
        O::NAME,
        env!("CARGO_PKG_VERSION"),
        O::crds(),
    )
    .await
    {
        Ok(outcomes) => {
            for (crd, outcome) in outcomes {
                match outcome {
                    crds::CrdOutcome::Applied => tracing::info!(crd, "applied the CRD"),
                    crds::CrdOutcome::Missing => tracing::warn!(
                        crd,
                        "the CRD is not installed; install the chart, whose crds/ directory has it"
                    ),
                    crds::CrdOutcome::Newer(version) => tracing::warn!(
                        crd,
                        version,
                        "the CRD was applied by a newer operator; leaving it as it is"
                    ),
                }
            }
        }
        Err(error) => tracing::warn!(
            %error,
            "could not upgrade the CRDs; the controllers run with the CRDs as installed \
             (set manageCrds in the chart, or --manage-crds=false to skip this)"
        ),
    }
}

async fn wait_for_termination() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut terminate) => {
                tokio::select! {
                    _ = ctrl_c => {},
                    _ = terminate.recv() => {},
                }
            }
            Err(_) => {
                let _ = ctrl_c.await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}

fn init_tracing(filter: &str, format: LogFormat) -> Result<(), String> {
    let filter = tracing_subscriber::EnvFilter::try_new(filter)
        .map_err(|error| format!("invalid log level {filter:?}: {error}"))?;
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    let result = match format {
        LogFormat::Json => builder.json().try_init(),
        LogFormat::Text => builder.try_init(),
    };
    result.map_err(|error| format!("initialising logging: {error}"))
}

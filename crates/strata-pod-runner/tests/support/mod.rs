//! What the pod runner's real-kernel tests share: an image that is the host's own
//! tools, and a runner with a short restart back-off.

use std::path::Path;
use std::time::Duration;

use strata_pod_runner::image::{Images, MANIFEST, Manifest};
use strata_pod_runner::pod::Backoff;
use strata_pod_runner::runner::{PodRunner, RunnerOptions};

/// The image the tests' pods name.
pub const IMAGE: &str = "strata.test/host-tools:1";

/// A runner whose one image, [`IMAGE`], binds nothing of its own: its containers see
/// the host's tools (`sh`, `curl`, `python3`) through the overlay root. The manifest is
/// written into `image_dir`.
pub fn host_tools_runner(image_dir: &Path, backoff: Backoff) -> PodRunner {
    let manifest = Manifest {
        references: vec![IMAGE.to_owned()],
        paths: Vec::new(),
        env: vec![("PATH".to_owned(), "/usr/local/bin:/usr/bin:/bin".to_owned())],
        working_dir: "/".into(),
        user: (1000, 1000),
        entrypoint: Vec::new(),
    };
    let text = serde_json::to_string(&manifest).expect("a manifest");
    std::fs::write(image_dir.join(MANIFEST), text).expect("the image manifest");
    let mut images = Images::default();
    images.add(image_dir).expect("the image directory");
    let mut options = RunnerOptions::new(images);
    options.backoff = backoff;
    PodRunner::new(options).unwrap_or_else(|error| panic!("{error}"))
}

/// A short back-off, so a test does not wait out the kubelet's 10 s.
pub fn short_backoff(initial_millis: u64) -> Backoff {
    Backoff {
        initial: Duration::from_millis(initial_millis),
        max: Duration::from_secs(2),
    }
}

//! CRDs read from a live API server (feature `cluster`): `gen --from-cluster NAME... | --all-crds`.
//!
//! Each CRD is fetched as JSON and handed to the [`Builder`] as the text input
//! `cluster:<crd-name>`, so loading, warnings and [`crate::ResourceInfo::source`] work exactly as
//! for files. The objects are read untyped ([`DynamicObject`]) rather than as k8s-openapi's
//! `CustomResourceDefinition`: a server newer than our k8s-openapi may send schema fields the
//! typed struct would drop, and the loader reads the JSON itself anyway.

use std::path::{Path, PathBuf};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{ApiResource, DynamicObject, ListParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client, Config};

use crate::{Builder, Error};

/// Page size of `--all-crds` lists (what kubectl uses).
const PAGE: u32 = 500;

/// Which CRDs to read from which cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterSource {
    /// `None`: every CRD on the server.
    names: Option<Vec<String>>,
    kubeconfig: Option<PathBuf>,
    context: Option<String>,
}

impl ClusterSource {
    /// The CRDs with these `metadata.name`s (e.g. `foos.samplecontroller.k8s.io`); each must exist.
    pub fn named<I, S>(names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut unique: Vec<String> = Vec::new();
        for n in names {
            let n = n.into();
            // A name given twice would load the same CRD twice and clash with itself.
            if !unique.contains(&n) {
                unique.push(n);
            }
        }
        Self {
            names: Some(unique),
            kubeconfig: None,
            context: None,
        }
    }

    /// Every CRD on the server.
    pub fn all() -> Self {
        Self {
            names: None,
            kubeconfig: None,
            context: None,
        }
    }

    /// Read this kubeconfig file instead of kube's default inference (`$KUBECONFIG`,
    /// `~/.kube/config`, then the in-cluster service account).
    pub fn kubeconfig(mut self, path: impl AsRef<Path>) -> Self {
        self.kubeconfig = Some(path.as_ref().to_path_buf());
        self
    }

    /// Use this kubeconfig context instead of the current one.
    pub fn context(mut self, name: impl Into<String>) -> Self {
        self.context = Some(name.into());
        self
    }

    /// Fetches the CRDs: `(name, JSON text)` pairs, in the order asked for (by name for all).
    fn fetch(&self) -> Result<Vec<(String, String)>, Error> {
        // A sync API: run on a private runtime, on a thread of its own when the caller is
        // already inside a Tokio runtime (blocking on one there would panic).
        if tokio::runtime::Handle::try_current().is_ok() {
            std::thread::scope(|s| {
                s.spawn(|| self.fetch_blocking())
                    .join()
                    .unwrap_or_else(|_| {
                        Err(Error::Cluster("reading CRDs failed unexpectedly".into()))
                    })
            })
        } else {
            self.fetch_blocking()
        }
    }

    fn fetch_blocking(&self) -> Result<Vec<(String, String)>, Error> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Error::Cluster(format!("cannot start the async runtime: {e}")))?;
        rt.block_on(self.fetch_async())
    }

    async fn fetch_async(&self) -> Result<Vec<(String, String)>, Error> {
        let (config, server) = self.config().await?;
        let client = Client::try_from(config)
            .map_err(|e| Error::Cluster(format!("cannot create a client for {server}: {e}")))?;
        let api: Api<DynamicObject> =
            Api::all_with(client, &ApiResource::erase::<CustomResourceDefinition>(&()));
        let objects = match &self.names {
            Some(names) => get_named(&api, names, &server).await?,
            None => list_all(&api, &server).await?,
        };
        objects.into_iter().map(to_json).collect()
    }

    /// The client config and a description of the server for messages (URL and context).
    async fn config(&self) -> Result<(Config, String), Error> {
        let options = KubeConfigOptions {
            context: self.context.clone(),
            ..Default::default()
        };
        let (config, context) = match (&self.kubeconfig, &self.context) {
            (Some(path), _) => {
                // kube's message repeats the path; the innermost cause is what is new.
                let kubeconfig = Kubeconfig::read_from(path).map_err(|e| {
                    Error::Cluster(format!(
                        "cannot read kubeconfig {}: {}",
                        path.display(),
                        root_cause(&e)
                    ))
                })?;
                let context = self
                    .context
                    .clone()
                    .or_else(|| kubeconfig.current_context.clone());
                let config = Config::from_custom_kubeconfig(kubeconfig, &options)
                    .await
                    .map_err(|e| {
                        Error::Cluster(format!("kubeconfig {}: {}", path.display(), chain(&e)))
                    })?;
                (config, context)
            }
            // A named context only exists in a kubeconfig, so no in-cluster fallback here.
            (None, Some(context)) => {
                let config = Config::from_kubeconfig(&options).await.map_err(|e| {
                    Error::Cluster(format!(
                        "cannot load context {context:?} from the default kubeconfig \
                         ($KUBECONFIG or ~/.kube/config): {}",
                        chain(&e)
                    ))
                })?;
                (config, Some(context.clone()))
            }
            (None, None) => {
                let config = Config::infer().await.map_err(|e| {
                    Error::Cluster(format!(
                        "no Kubernetes configuration found (pass --kubeconfig, set $KUBECONFIG, \
                         or run in a pod): {}",
                        chain(&e)
                    ))
                })?;
                (config, None)
            }
        };
        let server = match context {
            Some(c) => format!("the API server at {} (context {c})", config.cluster_url),
            None => format!("the API server at {}", config.cluster_url),
        };
        Ok((config, server))
    }

    /// Adds the fetched CRDs to `builder` as `cluster:<crd-name>` inputs.
    fn add_to(&self, mut builder: Builder) -> Result<Builder, Error> {
        for (name, json) in self.fetch()? {
            builder = builder.input_text(format!("cluster:{name}"), json);
        }
        Ok(builder)
    }
}

impl Builder {
    /// Reads CRDs from a live API server now and adds each as the input `cluster:<crd-name>`
    /// (alongside any file inputs). Blocks the calling thread until every CRD is read (from async
    /// code, call it in `spawn_blocking`); errors are [`Error::Cluster`] naming the server, and
    /// every requested CRD that does not exist.
    pub fn from_cluster(self, source: &ClusterSource) -> Result<Self, Error> {
        source.add_to(self)
    }
}

async fn get_named(
    api: &Api<DynamicObject>,
    names: &[String],
    server: &str,
) -> Result<Vec<DynamicObject>, Error> {
    let mut found = Vec::new();
    // Every missing name is reported at once, not one per run.
    let mut missing = Vec::new();
    for name in names {
        match api.get(name).await {
            Ok(o) => found.push(o),
            Err(kube::Error::Api(status)) if status.is_not_found() => {
                missing.push(format!("{name:?} ({})", status.message));
            }
            Err(e) => return Err(request_error(&format!("reading CRD {name:?}"), server, &e)),
        }
    }
    if !missing.is_empty() {
        return Err(Error::Cluster(format!(
            "CustomResourceDefinition not found on {server}: {}",
            missing.join(", ")
        )));
    }
    Ok(found)
}

async fn list_all(api: &Api<DynamicObject>, server: &str) -> Result<Vec<DynamicObject>, Error> {
    let mut all = Vec::new();
    let mut params = ListParams::default().limit(PAGE);
    loop {
        let page = api
            .list(&params)
            .await
            .map_err(|e| request_error("listing CRDs", server, &e))?;
        all.extend(page.items);
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => break,
        }
    }
    all.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    Ok(all)
}

fn request_error(what: &str, server: &str, e: &kube::Error) -> Error {
    match e {
        kube::Error::Api(status) => Error::Cluster(format!(
            "{what} from {server}: {} ({} {})",
            status.message, status.code, status.reason
        )),
        _ => Error::Cluster(format!("{what}: cannot reach {server}: {}", chain(e))),
    }
}

/// The object as a CRD document, pretty-printed so syntax and schema errors point at a useful line.
fn to_json(object: DynamicObject) -> Result<(String, String), Error> {
    let name = object.metadata.name.clone().unwrap_or_default();
    let mut value = serde_json::to_value(&object)
        .map_err(|e| Error::Cluster(format!("CRD {name:?}: cannot encode as JSON: {e}")))?;
    // List items come without apiVersion/kind; the loader needs them to recognise a CRD.
    if let Some(map) = value.as_object_mut() {
        map.insert("apiVersion".into(), "apiextensions.k8s.io/v1".into());
        map.insert("kind".into(), "CustomResourceDefinition".into());
    }
    let text = serde_json::to_string_pretty(&value)
        .map_err(|e| Error::Cluster(format!("CRD {name:?}: cannot encode as JSON: {e}")))?;
    Ok((name, text))
}

/// An error with its causes ("connection refused" is usually a few sources deep).
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        // Wrappers often repeat their source's message; print each cause once.
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

fn root_cause(e: &dyn std::error::Error) -> String {
    let mut e = e;
    while let Some(s) = e.source() {
        e = s;
    }
    e.to_string()
}

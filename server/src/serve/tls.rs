//! Native TLS (`--tls-cert-file`, `--tls-key-file`), with rustls.
//!
//! The certificate and key are read at start, where a bad pair stops the
//! server with the file and what was wrong. Then a worker reads both files
//! every [`RELOAD_EVERY`] and, when their bytes changed and the new pair
//! loads, swaps it in for the connections that open from then on (as
//! cert-manager renews a Secret's files in place). A pair that does not
//! load is logged and the old one kept: a half-written renewal never takes
//! the server down. Connections speak HTTP/1.1 only, as the server does.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::sync::watch;

/// How often the files are read for a renewal.
pub const RELOAD_EVERY: Duration = Duration::from_secs(10);

/// What can go wrong loading a certificate and key.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be read.
    #[error("{path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The certificate file holds no PEM certificate, or a broken one.
    #[error("{path}: no PEM certificate could be read ({reason})")]
    Certificate {
        /// The file.
        path: PathBuf,
        /// What the PEM reader said.
        reason: String,
    },
    /// The key file holds no PEM private key, or a broken one.
    #[error("{path}: no PEM private key could be read ({reason})")]
    Key {
        /// The file.
        path: PathBuf,
        /// What the PEM reader said.
        reason: String,
    },
    /// rustls refused the pair (the key does not match the certificate, or
    /// an unsupported key type).
    #[error("{cert} and {key}: {source}")]
    Pair {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
        /// What rustls said.
        source: rustls::Error,
    },
}

/// The two files of a certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// PEM certificate chain, leaf first.
    pub cert: PathBuf,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
}

/// The file bytes a configuration was built from, to tell a renewal.
#[derive(PartialEq, Eq)]
struct Loaded {
    cert: Vec<u8>,
    key: Vec<u8>,
}

/// The current TLS configuration, swapped when the files change.
pub struct TlsConfig {
    files: TlsFiles,
    current: RwLock<(Arc<Loaded>, Arc<rustls::ServerConfig>)>,
}

impl std::fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key's bytes never print.
        f.debug_struct("TlsConfig")
            .field("files", &self.files)
            .finish_non_exhaustive()
    }
}

fn read(path: &Path) -> Result<Vec<u8>, Error> {
    std::fs::read(path).map_err(|source| Error::Read {
        path: path.to_owned(),
        source,
    })
}

fn build(files: &TlsFiles, loaded: &Loaded) -> Result<rustls::ServerConfig, Error> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&loaded.cert)
        .collect::<Result<_, _>>()
        .map_err(|e| Error::Certificate {
            path: files.cert.clone(),
            reason: e.to_string(),
        })?;
    if certs.is_empty() {
        return Err(Error::Certificate {
            path: files.cert.clone(),
            reason: "the file has no CERTIFICATE block".into(),
        });
    }
    let key = PrivateKeyDer::from_pem_slice(&loaded.key).map_err(|e| Error::Key {
        path: files.key.clone(),
        reason: e.to_string(),
    })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .and_then(|builder| builder.with_no_client_auth().with_single_cert(certs, key))
        .map_err(|source| Error::Pair {
            cert: files.cert.clone(),
            key: files.key.clone(),
            source,
        })?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

impl TlsConfig {
    /// Loads `files`; an error names the file and what was wrong.
    pub fn load(files: TlsFiles) -> Result<Self, Error> {
        let loaded = Loaded {
            cert: read(&files.cert)?,
            key: read(&files.key)?,
        };
        let config = build(&files, &loaded)?;
        Ok(TlsConfig {
            files,
            current: RwLock::new((Arc::new(loaded), Arc::new(config))),
        })
    }

    /// The acceptor for a connection opening now.
    pub fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
        let current = self.current.read().unwrap_or_else(|p| p.into_inner());
        tokio_rustls::TlsAcceptor::from(current.1.clone())
    }

    /// Reads the files again and swaps in the new pair if their bytes
    /// changed: `Ok(true)` when it did, `Ok(false)` when nothing changed,
    /// an error (and the old pair kept) when the new one does not load.
    pub fn reload_if_changed(&self) -> Result<bool, Error> {
        let loaded = Loaded {
            cert: read(&self.files.cert)?,
            key: read(&self.files.key)?,
        };
        let unchanged = {
            let current = self.current.read().unwrap_or_else(|p| p.into_inner());
            *current.0 == loaded
        };
        if unchanged {
            return Ok(false);
        }
        let config = build(&self.files, &loaded)?;
        *self.current.write().unwrap_or_else(|p| p.into_inner()) =
            (Arc::new(loaded), Arc::new(config));
        Ok(true)
    }

    /// Reloads every `every` until shutdown (a supervised worker).
    pub async fn watch_files(
        self: Arc<Self>,
        every: Duration,
        mut shutdown: watch::Receiver<bool>,
    ) {
        let mut ticks = tokio::time::interval(every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticks.tick().await;
        loop {
            tokio::select! {
                _ = ticks.tick() => {}
                _ = shutdown.wait_for(|down| *down) => return,
            }
            match self.reload_if_changed() {
                Ok(true) => {
                    tracing::info!(cert = %self.files.cert.display(), "TLS certificate reloaded")
                }
                Ok(false) => {}
                Err(e) => tracing::error!(
                    error = %e,
                    "the new TLS certificate does not load; still serving the old one"
                ),
            }
        }
    }
}

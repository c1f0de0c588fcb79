//! A TLS endpoint in front of the emulator, for `devstack bench`: on AWS every first request of
//! a container pays a TLS handshake (and the loading of the trust store), so the benchmark's
//! functions reach the emulator through one too. The certificate is generated per run and
//! trusted through `SSL_CERT_FILE`, the trust-store setting the SDK's rustls client reads
//! (rustls-native-certs); the file also holds the system's roots, so loading it costs what
//! loading the real store costs.

use std::path::PathBuf;
use std::sync::Arc;

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;

use crate::error::DevError;

/// Where Debian (and Lambda's Amazon Linux, at /etc/pki/tls/certs/ca-bundle.crt) keep the roots.
const SYSTEM_ROOTS: [&str; 2] = [
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
];

pub struct TlsProxy {
    /// `https://127.0.0.1:<port>`, for `AWS_ENDPOINT_URL`.
    pub endpoint: String,
    /// The system's roots plus this run's certificate, for `SSL_CERT_FILE`.
    pub trust_store: PathBuf,
    /// This run's certificate alone, for a trust store that has another proxy's too.
    pub certificate_pem: String,
    task: tokio::task::JoinHandle<()>,
}

impl TlsProxy {
    /// Terminates TLS on a free loopback port and forwards each connection to `upstream`
    /// (e.g. `http://127.0.0.1:4566`) byte for byte.
    pub async fn start(upstream: &str) -> Result<Self, DevError> {
        let upstream = upstream
            .strip_prefix("http://")
            .ok_or_else(|| DevError::from("the emulator's endpoint is not http://"))?
            .trim_end_matches('/')
            .to_owned();
        let certified = rcgen::generate_simple_self_signed(vec![
            "localhost".to_owned(),
            "127.0.0.1".to_owned(),
        ])
        .map_err(|e| DevError::Unexpected(format!("generating a certificate: {e}")))?;
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
            certified.signing_key.serialize_der(),
        ));
        let chain = vec![CertificateDer::from(certified.cert.der().to_vec())];
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::aws_lc_rs::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(|e| DevError::Unexpected(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| DevError::Unexpected(format!("the TLS configuration: {e}")))?;
        let acceptor = TlsAcceptor::from(Arc::new(config));

        let mut pem = SYSTEM_ROOTS
            .iter()
            .find_map(|path| std::fs::read_to_string(path).ok())
            .unwrap_or_default();
        let certificate_pem = certified.cert.pem();
        pem.push_str(&certificate_pem);
        let trust_store = std::env::temp_dir().join(format!(
            "devstack-bench-{}.pem",
            ulid::Ulid::new().to_string().to_lowercase()
        ));
        std::fs::write(&trust_store, pem).map_err(DevError::Io)?;

        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(DevError::Io)?;
        let port = listener.local_addr().map_err(DevError::Io)?.port();
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                let upstream = upstream.clone();
                tokio::spawn(async move {
                    let _ = client.set_nodelay(true);
                    let Ok(mut tls) = acceptor.accept(client).await else {
                        return;
                    };
                    let Ok(mut emulator) = TcpStream::connect(upstream.as_str()).await else {
                        return;
                    };
                    let _ = emulator.set_nodelay(true);
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut emulator).await;
                });
            }
        });
        Ok(Self {
            endpoint: format!("https://127.0.0.1:{port}"),
            trust_store,
            certificate_pem,
            task,
        })
    }
}

impl Drop for TlsProxy {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_file(&self.trust_store);
    }
}

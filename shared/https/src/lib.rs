//! The outbound HTTPS client of the adapters that are not AWS SDKs (the user pool's JWKS,
//! Stripe): hyper over rustls (aws-lc) with the system's roots. Plain HTTP is allowed only to
//! a loopback address (the emulator, a test's fake), never to anything across a network.

use std::sync::Arc;

use hyper_util::client::legacy::connect::HttpConnector;

/// A client whose requests have bodies of type `B`.
pub type Client<B> =
    hyper_util::client::legacy::Client<hyper_rustls::HttpsConnector<HttpConnector>, B>;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("TLS set-up failed: {0}")]
    Tls(String),
    #[error("{0} is neither https nor http to a loopback address")]
    Insecure(String),
}

/// A client for `base` (`https://...`, or `http://` to 127.0.0.1, ::1 or localhost).
pub fn client_for<B>(base: &hyper::Uri) -> Result<Client<B>, ClientError>
where
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
{
    let plain_allowed = match base.scheme_str() {
        Some("https") => false,
        Some("http") if is_loopback(base.host().unwrap_or_default()) => true,
        _ => return Err(ClientError::Insecure(base.to_string())),
    };
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let builder = hyper_rustls::HttpsConnectorBuilder::new()
        .with_provider_and_native_roots(provider)
        .map_err(|e| ClientError::Tls(e.to_string()))?;
    let connector = if plain_allowed {
        builder.https_or_http().enable_http1().build()
    } else {
        builder.https_only().enable_http1().build()
    };
    Ok(
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .build(connector),
    )
}

fn is_loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Any body type: the client is only built here, never used.
    type Empty = String;

    #[test]
    fn plain_http_only_to_loopback() {
        for ok in [
            "https://cognito-idp.eu-west-1.amazonaws.com/x",
            "http://127.0.0.1:4566/x",
            "http://localhost:9/",
            "http://[::1]:8/",
        ] {
            assert!(client_for::<Empty>(&ok.parse().unwrap()).is_ok(), "{ok}");
        }
        for refused in [
            "http://cognito-idp.eu-west-1.amazonaws.com/x",
            "http://10.0.0.1/",
            "ftp://127.0.0.1/",
        ] {
            assert!(
                matches!(
                    client_for::<Empty>(&refused.parse().unwrap()),
                    Err(ClientError::Insecure(_))
                ),
                "{refused}"
            );
        }
    }
}

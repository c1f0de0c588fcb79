//! The AWS SDK configuration a function builds once per container, before its first request.

use std::time::Duration;

use aws_credential_types::provider::SharedCredentialsProvider;
use aws_credential_types::Credentials;
use aws_smithy_http_client::tls;
use aws_smithy_runtime_api::client::behavior_version::BehaviorVersion;
use aws_smithy_runtime_api::client::http::{http_client_fn, HttpClient, SharedHttpClient};
use aws_smithy_types::retry::RetryConfig;
use aws_smithy_types::timeout::TimeoutConfig;
use aws_types::region::Region;
use aws_types::service_config::{LoadServiceConfig, ServiceConfigKey};

mod xray;

pub use aws_types::SdkConfig;

pub use xray::XRaySubsegments;

/// An error with its whole source chain: the SDK's own message is terse, the causes say what
/// happened.
pub fn describe(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}

/// A client of one AWS service (`$service`: its SDK crate, e.g. `aws_sdk_dynamodb`) on the
/// function's SDK configuration, each of its operations an X-Ray subsegment of the invocation.
#[macro_export]
macro_rules! client {
    ($service:ident, $sdk:expr) => {
        $service::Client::from_conf(
            $service::config::Builder::from($sdk)
                .interceptor($crate::XRaySubsegments)
                .build(),
        )
    };
}

/// A client made at its first call instead of at init: for clients only some requests need,
/// whose construction (every SDK client builds and validates its runtime plugins) would
/// otherwise lengthen every cold start.
pub type LazyClient<C> = std::sync::LazyLock<C, Box<dyn FnOnce() -> C + Send>>;

/// [`client!`], made at its first call: `lazy_client!(aws_sdk_iot, &sdk)`.
#[macro_export]
macro_rules! lazy_client {
    ($service:ident, $sdk:expr) => {{
        let sdk = ::std::clone::Clone::clone($sdk);
        $crate::LazyClient::new(Box::new(move || $crate::client!($service, &sdk)))
    }};
}

/// Settings that mean the credentials are to come from somewhere else than the environment:
/// not a Lambda function's (nor the local cloud's) environment.
const OTHER_SOURCES: [&str; 6] = [
    "AWS_PROFILE",
    "AWS_CONFIG_FILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
];

/// A process that is not a Lambda function (nor one of the local cloud's): init fails.
#[derive(Debug, thiserror::Error)]
pub enum NotLambdaEnvironment {
    #[error(
        "{0} is not set: a function reads its region and credentials from Lambda's environment"
    )]
    Missing(&'static str),
    #[error("{0} is set: a function takes its credentials from Lambda's environment only")]
    OtherSource(&'static str),
}

/// The SDK configuration of a function, built once per container from the Lambda environment:
/// the region and the function's credentials are environment variables there, set for the
/// life of the execution environment (and in the local cloud, which also sets
/// `AWS_ENDPOINT_URL`). The SDK's general provider chain (`aws-config`) would first look for
/// profile files and a dozen optional settings, costing a cold start milliseconds, and find
/// nothing on Lambda; not depending on it also keeps its STS client out of every function's
/// build. Each attempt is bounded so one slow call cannot eat the whole Lambda deadline; the
/// pipeline's own deadline bounds the sum.
pub fn aws_sdk_config() -> Result<SdkConfig, NotLambdaEnvironment> {
    let LambdaEnvironment {
        region,
        endpoint_url,
        service_endpoint_urls,
        credentials,
    } = lambda_environment(|name| std::env::var(name).ok())?;
    let timeouts = TimeoutConfig::builder()
        .connect_timeout(Duration::from_secs(1))
        .operation_attempt_timeout(Duration::from_secs(2))
        .operation_timeout(Duration::from_secs(5))
        .build();
    let mut config = SdkConfig::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new(region))
        .credentials_provider(SharedCredentialsProvider::new(credentials))
        .retry_config(RetryConfig::standard())
        .timeout_config(timeouts)
        .http_client(https_client_made_at_first_request());
    config.set_endpoint_url(endpoint_url);
    Ok(config.service_config(service_endpoint_urls).build())
}

/// The per-service endpoints of the local cloud (`AWS_ENDPOINT_URL_DYNAMODB`,
/// `AWS_ENDPOINT_URL_DYNAMODB_STREAMS`, ...), which the SDK asks for before the general
/// `AWS_ENDPOINT_URL`, as its standard environment settings document. Read once at init, like
/// the rest of the environment; empty on Lambda.
#[derive(Debug, Default, PartialEq, Eq)]
struct ServiceEndpointUrls(Vec<(String, String)>);

impl ServiceEndpointUrls {
    const PREFIX: &'static str = "AWS_ENDPOINT_URL_";

    /// The variable the SDK's standard settings name for a service: its id upper-cased, spaces
    /// as underscores (`DynamoDB Streams` -> `AWS_ENDPOINT_URL_DYNAMODB_STREAMS`).
    fn variable(service_id: &str) -> String {
        format!(
            "{}{}",
            Self::PREFIX,
            service_id.to_ascii_uppercase().replace([' ', '-'], "_")
        )
    }
}

impl LoadServiceConfig for ServiceEndpointUrls {
    fn load_config(&self, key: ServiceConfigKey<'_>) -> Option<String> {
        if key.env() != "AWS_ENDPOINT_URL" {
            return None;
        }
        let variable = Self::variable(key.service_id());
        self.0
            .iter()
            .find(|(name, _)| *name == variable)
            .map(|(_, url)| url.clone())
    }
}

/// The SDK's default HTTPS client, made when the first request needs it. Every SDK client
/// validates its HTTP client when it is constructed, and the default one then builds its TLS
/// configuration, loading and parsing the system's root certificates: work a cold start's init
/// would pay (and a hello world does not) though only the first request needs it.
fn https_client_made_at_first_request() -> SharedHttpClient {
    let client = std::sync::OnceLock::<SharedHttpClient>::new();
    http_client_fn(move |settings, components| {
        client
            .get_or_init(|| {
                aws_smithy_http_client::Builder::new()
                    .tls_provider(tls::Provider::Rustls(
                        tls::rustls_provider::CryptoMode::AwsLc,
                    ))
                    .build_https()
            })
            .http_connector(settings, components)
    })
}

/// What [`aws_sdk_config`] reads from a Lambda function's environment.
#[derive(Debug, PartialEq, Eq)]
struct LambdaEnvironment {
    region: String,
    endpoint_url: Option<String>,
    service_endpoint_urls: ServiceEndpointUrls,
    credentials: Credentials,
}

/// The services whose own endpoint the local cloud may set (the ones the functions call).
const SERVICE_IDS: [&str; 2] = ["DynamoDB", "DynamoDB Streams"];

fn lambda_environment(
    var: impl Fn(&str) -> Option<String>,
) -> Result<LambdaEnvironment, NotLambdaEnvironment> {
    let set = |name: &str| var(name).filter(|value| !value.is_empty());
    if let Some(other) = OTHER_SOURCES.iter().find(|name| set(name).is_some()) {
        return Err(NotLambdaEnvironment::OtherSource(other));
    }
    let required = |name: &'static str| set(name).ok_or(NotLambdaEnvironment::Missing(name));
    let credentials = Credentials::new(
        required("AWS_ACCESS_KEY_ID")?,
        required("AWS_SECRET_ACCESS_KEY")?,
        set("AWS_SESSION_TOKEN"),
        None,
        "LambdaEnvironment",
    );
    Ok(LambdaEnvironment {
        region: required("AWS_REGION")?,
        endpoint_url: set("AWS_ENDPOINT_URL"),
        service_endpoint_urls: ServiceEndpointUrls(
            SERVICE_IDS
                .iter()
                .map(|id| ServiceEndpointUrls::variable(id))
                .filter_map(|name| set(&name).map(|url| (name, url)))
                .collect(),
        ),
        credentials,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn environment(pairs: &[(&str, &str)]) -> Option<LambdaEnvironment> {
        let vars: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        lambda_environment(|name| vars.get(name).cloned()).ok()
    }

    const LAMBDA: [(&str, &str); 4] = [
        ("AWS_REGION", "eu-west-1"),
        ("AWS_ACCESS_KEY_ID", "AKIA"),
        ("AWS_SECRET_ACCESS_KEY", "secret"),
        ("AWS_SESSION_TOKEN", "token"),
    ];

    #[test]
    fn a_lambda_environment_is_read_directly() {
        assert_eq!(
            environment(&LAMBDA),
            Some(LambdaEnvironment {
                region: "eu-west-1".into(),
                endpoint_url: None,
                service_endpoint_urls: ServiceEndpointUrls::default(),
                credentials: Credentials::new(
                    "AKIA",
                    "secret",
                    Some("token".into()),
                    None,
                    "LambdaEnvironment"
                ),
            })
        );
        let local = [
            LAMBDA.as_slice(),
            &[("AWS_ENDPOINT_URL", "http://127.0.0.1:4566")],
        ]
        .concat();
        assert_eq!(
            environment(&local).and_then(|e| e.endpoint_url).as_deref(),
            Some("http://127.0.0.1:4566")
        );
    }

    #[test]
    fn a_service_of_its_own_endpoint_is_asked_before_the_general_one() {
        let local = [
            LAMBDA.as_slice(),
            &[
                ("AWS_ENDPOINT_URL", "http://127.0.0.1:4566"),
                ("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:4567"),
                ("AWS_ENDPOINT_URL_DYNAMODB_STREAMS", "http://127.0.0.1:4568"),
            ],
        ]
        .concat();
        let urls = environment(&local).unwrap().service_endpoint_urls;
        let key = |service_id| {
            ServiceConfigKey::builder()
                .service_id(service_id)
                .env("AWS_ENDPOINT_URL")
                .profile("endpoint_url")
                .build()
                .unwrap()
        };
        assert_eq!(
            urls.load_config(key("DynamoDB")).as_deref(),
            Some("http://127.0.0.1:4567")
        );
        assert_eq!(
            urls.load_config(key("DynamoDB Streams")).as_deref(),
            Some("http://127.0.0.1:4568")
        );
        assert_eq!(urls.load_config(key("SQS")), None, "the general endpoint");
    }

    #[test]
    fn anything_else_is_refused_at_init() {
        assert_eq!(environment(&LAMBDA[1..]), None, "no region");
        assert_eq!(environment(&[LAMBDA[0], LAMBDA[2]]), None, "no key id");
        assert_eq!(environment(&[]), None);
        for setting in OTHER_SOURCES {
            let with = [LAMBDA.as_slice(), &[(setting, "x")]].concat();
            assert_eq!(environment(&with), None, "{setting}");
        }
        let empty_region = [&LAMBDA[1..], &[("AWS_REGION", "")]].concat();
        assert_eq!(environment(&empty_region), None);
        let vars: HashMap<&str, &str> = LAMBDA[1..].iter().copied().collect();
        let refused = lambda_environment(|name| vars.get(name).map(|v| v.to_string()));
        assert_eq!(
            refused.unwrap_err().to_string(),
            "AWS_REGION is not set: a function reads its region and credentials from Lambda's environment"
        );
    }
}

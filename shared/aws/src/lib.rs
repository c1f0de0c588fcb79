//! The AWS SDK configuration a function builds once per container, before its first request.

use std::time::Duration;

use aws_config::environment::EnvironmentVariableCredentialsProvider;
use aws_config::identity::IdentityCache;
use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use aws_config::BehaviorVersion;
use aws_credential_types::provider::SharedCredentialsProvider;

/// The settings the environment of a Lambda function holds; anything else (a profile, a
/// container credentials endpoint, web identity) takes the SDK's general provider chain.
const CHAIN_ONLY_SETTINGS: [&str; 6] = [
    "AWS_PROFILE",
    "AWS_CONFIG_FILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
];

/// Shared SDK configuration, built once per container. Each attempt is bounded so one slow call
/// cannot eat the whole Lambda deadline; the pipeline's own deadline bounds the sum.
///
/// Lambda puts the region and the function's credentials in the environment, so there the
/// configuration is built from them directly: the general provider chain (`aws_config::defaults`)
/// would first look for profile files and a dozen optional settings, which costs a cold start
/// milliseconds and finds nothing on Lambda. `AWS_ENDPOINT_URL` (the local cloud) is honoured.
/// Anywhere the environment does not hold a region and keys, the general chain runs.
pub async fn aws_sdk_config() -> aws_config::SdkConfig {
    let timeouts = TimeoutConfig::builder()
        .connect_timeout(Duration::from_secs(1))
        .operation_attempt_timeout(Duration::from_secs(2))
        .operation_timeout(Duration::from_secs(5))
        .build();
    match lambda_environment(|name| std::env::var(name).ok()) {
        Some(LambdaEnvironment {
            region,
            endpoint_url,
        }) => {
            let mut config = aws_config::SdkConfig::builder()
                .behavior_version(BehaviorVersion::latest())
                .region(aws_config::Region::new(region))
                .credentials_provider(SharedCredentialsProvider::new(
                    EnvironmentVariableCredentialsProvider::new(),
                ))
                .identity_cache(IdentityCache::lazy().build())
                .retry_config(RetryConfig::standard())
                .timeout_config(timeouts);
            config.set_endpoint_url(endpoint_url);
            config.build()
        }
        None => {
            aws_config::defaults(BehaviorVersion::latest())
                .timeout_config(timeouts)
                .load()
                .await
        }
    }
}

/// What [`aws_sdk_config`] reads when the environment is a Lambda function's.
#[derive(Debug, PartialEq, Eq)]
struct LambdaEnvironment {
    region: String,
    endpoint_url: Option<String>,
}

fn lambda_environment(var: impl Fn(&str) -> Option<String>) -> Option<LambdaEnvironment> {
    let set = |name: &str| var(name).filter(|value| !value.is_empty());
    if CHAIN_ONLY_SETTINGS.iter().any(|name| set(name).is_some()) {
        return None;
    }
    set("AWS_ACCESS_KEY_ID")?;
    set("AWS_SECRET_ACCESS_KEY")?;
    Some(LambdaEnvironment {
        region: set("AWS_REGION").or_else(|| set("AWS_DEFAULT_REGION"))?,
        endpoint_url: set("AWS_ENDPOINT_URL"),
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
        lambda_environment(|name| vars.get(name).cloned())
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
                endpoint_url: None
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
    fn anything_else_takes_the_general_chain() {
        assert_eq!(environment(&LAMBDA[1..]), None, "no region");
        assert_eq!(environment(&[LAMBDA[0], LAMBDA[2]]), None, "no key id");
        assert_eq!(environment(&[]), None);
        for setting in CHAIN_ONLY_SETTINGS {
            let with = [LAMBDA.as_slice(), &[(setting, "x")]].concat();
            assert_eq!(environment(&with), None, "{setting}");
        }
        let empty_region = [&LAMBDA[1..], &[("AWS_REGION", "")]].concat();
        assert_eq!(environment(&empty_region), None);
    }
}

//! [`DeviceRegistry`] on the AWS SDK.

use aws_sdk_iot::types::{AttributePayload, CertificateStatus};
use aws_sdk_iot::Client;
use tokio::sync::OnceCell;

use crate::{
    Certificate, DeviceRegistry, IotError, NewThing, Page, Thing, POLICY_ATTRIBUTE,
    REGISTERED_AT_ATTRIBUTE, VENDOR_ATTRIBUTE,
};

pub struct AwsDeviceRegistry {
    client: bouquet_aws::LazyClient<Client>,
    /// The data endpoint does not change for an account and region: asked once per container.
    endpoint: OnceCell<String>,
}

impl AwsDeviceRegistry {
    pub fn new(client: Client) -> Self {
        Self {
            client: bouquet_aws::LazyClient::new(Box::new(move || client)),
            endpoint: OnceCell::new(),
        }
    }

    /// IoT Core on the function's SDK configuration, its client made at the first call.
    pub fn lazy(sdk: &bouquet_aws::SdkConfig) -> Self {
        Self {
            client: bouquet_aws::lazy_client!(aws_sdk_iot, sdk),
            endpoint: OnceCell::new(),
        }
    }
}

fn failed<E: std::error::Error + Send + Sync + 'static>(
    operation: &'static str,
) -> impl Fn(E) -> IotError {
    move |error| IotError::new(operation, error)
}

/// Sends a request whose answer the registry has no use for: only whether it succeeded.
async fn sent_for_effect<O, E: std::error::Error + Send + Sync + 'static>(
    operation: &'static str,
    request: impl std::future::Future<Output = Result<O, E>>,
) -> Result<(), IotError> {
    request.await.map(|_| ()).map_err(failed(operation))
}

#[async_trait::async_trait]
impl DeviceRegistry for AwsDeviceRegistry {
    async fn data_endpoint(&self) -> Result<String, IotError> {
        self.endpoint
            .get_or_try_init(|| async {
                let output = self
                    .client
                    .describe_endpoint()
                    .endpoint_type("iot:Data-ATS")
                    .send()
                    .await
                    .map_err(failed("DescribeEndpoint"))?;
                output.endpoint_address.ok_or_else(|| {
                    IotError::new("DescribeEndpoint", "no endpoint address in the answer")
                })
            })
            .await
            .cloned()
    }

    async fn create_thing<'a>(&self, thing: &NewThing<'a>) -> Result<(), IotError> {
        self.client
            .create_thing()
            .thing_name(thing.name)
            .attribute_payload(
                AttributePayload::builder()
                    .attributes(VENDOR_ATTRIBUTE, thing.vendor_id)
                    .attributes(POLICY_ATTRIBUTE, thing.policy)
                    .attributes(REGISTERED_AT_ATTRIBUTE, thing.registered_at.to_string())
                    .build(),
            )
            .send()
            .await
            .map(|_| ())
            .map_err(failed("CreateThing"))
    }

    async fn create_certificate(&self) -> Result<Certificate, IotError> {
        let output = self
            .client
            .create_keys_and_certificate()
            .set_as_active(true)
            .send()
            .await
            .map_err(failed("CreateKeysAndCertificate"))?;
        let missing = |what: &str| {
            IotError::new(
                "CreateKeysAndCertificate",
                format!("no {what} in the answer"),
            )
        };
        Ok(Certificate {
            arn: output
                .certificate_arn
                .ok_or_else(|| missing("certificateArn"))?,
            id: output
                .certificate_id
                .ok_or_else(|| missing("certificateId"))?,
            pem: output
                .certificate_pem
                .ok_or_else(|| missing("certificatePem"))?,
            private_key: output
                .key_pair
                .and_then(|k| k.private_key)
                .ok_or_else(|| missing("keyPair.privateKey"))?,
        })
    }

    async fn attach_policy(&self, policy: &str, certificate_arn: &str) -> Result<(), IotError> {
        let request = self
            .client
            .attach_policy()
            .policy_name(policy)
            .target(certificate_arn);
        sent_for_effect("AttachPolicy", request.send()).await
    }

    async fn attach_thing_principal(
        &self,
        thing: &str,
        certificate_arn: &str,
    ) -> Result<(), IotError> {
        let request = self
            .client
            .attach_thing_principal()
            .thing_name(thing)
            .principal(certificate_arn);
        sent_for_effect("AttachThingPrincipal", request.send()).await
    }

    async fn detach_thing_principal(
        &self,
        thing: &str,
        certificate_arn: &str,
    ) -> Result<(), IotError> {
        let request = self
            .client
            .detach_thing_principal()
            .thing_name(thing)
            .principal(certificate_arn);
        sent_for_effect("DetachThingPrincipal", request.send()).await
    }

    async fn detach_policy(&self, policy: &str, certificate_arn: &str) -> Result<(), IotError> {
        let request = self
            .client
            .detach_policy()
            .policy_name(policy)
            .target(certificate_arn);
        sent_for_effect("DetachPolicy", request.send()).await
    }

    async fn delete_certificate(&self, certificate_id: &str) -> Result<(), IotError> {
        self.client
            .update_certificate()
            .certificate_id(certificate_id)
            .new_status(CertificateStatus::Inactive)
            .send()
            .await
            .map_err(failed("UpdateCertificate"))?;
        let request = self
            .client
            .delete_certificate()
            .certificate_id(certificate_id);
        sent_for_effect("DeleteCertificate", request.send()).await
    }

    async fn delete_thing(&self, thing: &str) -> Result<(), IotError> {
        let request = self.client.delete_thing().thing_name(thing);
        sent_for_effect("DeleteThing", request.send()).await
    }

    async fn thing_principals(&self, thing: &str) -> Result<Vec<String>, IotError> {
        // A vase has one certificate, two during a rotation: one page is all of them.
        self.client
            .list_thing_principals()
            .thing_name(thing)
            .send()
            .await
            .map(|output| output.principals.unwrap_or_default())
            .map_err(failed("ListThingPrincipals"))
    }

    async fn vase_things(&self, policy: &str, next: Option<&str>) -> Result<Page<Thing>, IotError> {
        let output = self
            .client
            .list_things()
            .attribute_name(POLICY_ATTRIBUTE)
            .attribute_value(policy)
            .max_results(250)
            .set_next_token(next.map(str::to_owned))
            .send()
            .await
            .map_err(failed("ListThings"))?;
        Ok(Page {
            items: output
                .things
                .unwrap_or_default()
                .into_iter()
                .filter_map(|thing| {
                    Some(Thing {
                        name: thing.thing_name?,
                        attributes: thing.attributes.unwrap_or_default(),
                    })
                })
                .collect(),
            next: output.next_token.filter(|t| !t.is_empty()),
        })
    }

    async fn policy_certificates(
        &self,
        policy: &str,
        next: Option<&str>,
    ) -> Result<Page<String>, IotError> {
        let output = self
            .client
            .list_targets_for_policy()
            .policy_name(policy)
            .page_size(250)
            .set_marker(next.map(str::to_owned))
            .send()
            .await
            .map_err(failed("ListTargetsForPolicy"))?;
        Ok(Page {
            items: output
                .targets
                .unwrap_or_default()
                .into_iter()
                .filter(|target| target.contains(":cert/"))
                .collect(),
            next: output.next_marker.filter(|m| !m.is_empty()),
        })
    }

    async fn principal_things(&self, certificate_arn: &str) -> Result<Vec<String>, IotError> {
        self.client
            .list_principal_things()
            .principal(certificate_arn)
            .send()
            .await
            .map(|output| output.things.unwrap_or_default())
            .map_err(failed("ListPrincipalThings"))
    }

    async fn certificate_created_at(&self, certificate_id: &str) -> Result<i64, IotError> {
        let output = self
            .client
            .describe_certificate()
            .certificate_id(certificate_id)
            .send()
            .await
            .map_err(failed("DescribeCertificate"))?;
        output
            .certificate_description
            .and_then(|d| d.creation_date)
            .map(|at| at.secs())
            .ok_or_else(|| IotError::new("DescribeCertificate", "no creationDate in the answer"))
    }
}

//! Least privilege: every AWS request a function sends is allowed by that function's
//! `Policies` in template.yaml.
//!
//! Each function's real handler runs a flow against the emulator with SDK clients that
//! record, per request, the IAM actions and resources it needs (`system_tests::iam`:
//! transactions item by item, index queries on `table/<t>/index/<i>`, SQS batches as
//! `sqs:SendMessage`, IoT on things and certificates). The policies are resolved to this
//! test's table, queues, bus and vase policy the way the dev stack resolves `!GetAtt`/`!Sub`.
//! The test fails naming, per function, each (action, resource) its policy does not grant.
//!
//! Its limit: it proves the paths the flows exercise (the usual success paths, cart and
//! direct reservation, a payment left pending and resolved by the sweeper, an undone vase
//! registration, a dead-lettered vase message), not every branch of every handler.
//! A route with no flow of its own yet is run on its example request (its reads only).
//! `publish-events` and `redrive-outbox` are checked statically: their AWS calls are
//! bouquet-bus's adapters, on the bus and the queue their environment names.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use bouquet_app::domain::{Timestamp, VaseId};
use bouquet_app::iot::Registrar;
use bouquet_app::realtime::ApiGatewayPusher;
use bouquet_iot::{AwsDeviceRegistry, DeviceRegistry, NewThing};
use bouquet_template::Template;
use devstack::websocket::{Limits, LocalWebSocketApi};
use ingest_vase_messages::Ingest;
use system_tests::iam::{
    event_bus_arn, queue_arn, queue_url_arn, table_arn, Access, AccessRecorder, Names, Policy,
};
use system_tests::in_process::{run_event_function, run_websocket_function, HTTP_FUNCTIONS};
use system_tests::vases::{heartbeat, reading, sqs_records};
use system_tests::{
    by_customer, by_vendor, delivery_details, fixture, repository_root, routed_binary,
    verified_email, ApiRequest, ApiResponse, PathParams, TestCloud, T0,
};

const MINUTE: Duration = Duration::from_secs(60);

/// What each function was seen to access.
struct Observed {
    recorder: AccessRecorder,
    by_function: BTreeMap<String, BTreeSet<Access>>,
}

impl Observed {
    /// Runs `work` as `binary`: only the requests it sends are counted for `binary` (set up
    /// data before, through other functions, and it does not count).
    async fn of<T>(&mut self, binary: &str, work: impl Future<Output = T>) -> T {
        self.recorder.clear();
        let output = work.await;
        self.by_function
            .entry(binary.to_owned())
            .or_default()
            .extend(self.recorder.take());
        output
    }

    /// Sends `request` to the HTTP function its route names and checks it answered `status`.
    async fn http(&mut self, cloud: &TestCloud, request: ApiRequest, status: u16) -> ApiResponse {
        let binary = routed_binary(&request);
        let response = self.of(&binary, cloud.call(&binary, request)).await;
        assert_eq!(response.status, status, "{binary}: {}", response.body);
        response
    }

    /// A photo as the console sends one: `request` asks for the upload (its S3 PutObject,
    /// authorized by the asking function's role when the browser posts the form, is recorded
    /// as that function's access), the file lands, and the photo function processes it.
    async fn photo(
        &mut self,
        cloud: &TestCloud,
        request: ApiRequest,
        photographing: &system_tests::in_process::InProcess,
        uploads: &str,
    ) -> ApiResponse {
        let binary = routed_binary(&request);
        let ticket = self.http(cloud, request, 201).await;
        let key = ticket.body["fields"]["key"].as_str().unwrap().to_owned();
        self.by_function
            .entry(binary)
            .or_default()
            .insert(Access::new(
                "s3:PutObject",
                format!("arn:aws:s3:::{uploads}/{key}"),
            ));
        cloud
            .s3
            .put_object()
            .bucket(uploads)
            .key(&key)
            .body(aws_sdk_s3::primitives::ByteStream::from(tiny_png()))
            .send()
            .await
            .unwrap();
        let s3_event = json!({"Records": [{"eventName": "ObjectCreated:Post",
            "s3": {"bucket": {"name": uploads}, "object": {"key": key}}}]});
        let processed = self
            .of(
                "process-bouquet-photos",
                run_event_function(
                    "process-bouquet-photos",
                    photographing,
                    json!({ "Records": sqs_records(&[s3_event.to_string()]) }),
                ),
            )
            .await
            .expect("the photo is processed");
        assert_eq!(processed["batchItemFailures"], json!([]), "{processed}");
        ticket
    }
}

/// A 2 × 2 PNG.
fn tiny_png() -> Vec<u8> {
    use image::ImageEncoder;
    let mut out = Vec::new();
    image::codecs::png::PngEncoder::new(&mut out)
        .write_image(&[200u8; 12], 2, 2, image::ExtendedColorType::Rgb8)
        .unwrap();
    out
}

/// The first day the fixture's shop (Paris, Tuesday to Saturday) delivers, by the cloud's clock.
fn paris_day(cloud: &TestCloud) -> String {
    let fixture = ApiRequest::fixture("put-delivery-settings");
    let body: Value = serde_json::from_str(fixture.event()["body"].as_str().unwrap()).unwrap();
    let settings: bouquet_app::domain::delivery::DeliverySettings =
        serde_json::from_value(body).unwrap();
    settings.first_date(cloud.app.clock.now()).unwrap()
}

fn id(response: &ApiResponse, field: &str) -> String {
    response.body[field]
        .as_str()
        .unwrap_or_else(|| panic!("{field} in {}", response.body))
        .to_owned()
}

/// The environment `binary` gets from the template, resolved to `names`.
fn environment(template: &Template, binary: &str, names: &Names) -> HashMap<String, String> {
    let function = template
        .functions()
        .unwrap()
        .into_iter()
        .find(|f| f.binary == binary)
        .unwrap_or_else(|| panic!("{binary} in template.yaml"));
    template
        .environment(&function, &|v| {
            devstack::provision::resolve(template, v, names)
        })
        .into_iter()
        .collect()
}

/// Each function's policy, resolved to `names`.
fn policies(template: &Template, names: &Names) -> BTreeMap<String, (String, Policy)> {
    template
        .functions()
        .unwrap()
        .into_iter()
        .map(|f| {
            let policy = Policy::of(template, &f, names).unwrap_or_else(|e| panic!("{e}"));
            (f.binary.clone(), (f.logical_id, policy))
        })
        .collect()
}

/// Per function, what it accessed that its policy does not grant.
fn gaps(
    policies: &BTreeMap<String, (String, Policy)>,
    observed: &BTreeMap<String, BTreeSet<Access>>,
) -> BTreeMap<String, Vec<Access>> {
    observed
        .iter()
        .map(|(binary, accesses)| {
            let (_, policy) = policies
                .get(binary)
                .unwrap_or_else(|| panic!("{binary} is not a function of template.yaml"));
            (binary.clone(), policy.missing(accesses))
        })
        .filter(|(_, missing)| !missing.is_empty())
        .collect()
}

fn report(
    policies: &BTreeMap<String, (String, Policy)>,
    gaps: &BTreeMap<String, Vec<Access>>,
) -> String {
    let mut text =
        String::from("functions call AWS actions their Policies in template.yaml do not grant:\n");
    for (binary, missing) in gaps {
        text.push_str(&format!("  {binary} ({}):\n", policies[binary].0));
        for access in missing {
            text.push_str(&format!("    {access}\n"));
        }
    }
    text
}

/// The bus event of `order`'s `OrderPaid`, from its outbox item.
async fn paid_event_of(cloud: &TestCloud, order: &str) -> Value {
    let item = cloud
        .items_of("event")
        .await
        .into_iter()
        .find(|i| {
            i["eventName"].as_s().unwrap() == "OrderPaid"
                && i["detail"].as_s().unwrap().contains(order)
        })
        .expect("the order's OrderPaid");
    let detail: Value = serde_json::from_str(item["detail"].as_s().unwrap()).unwrap();
    json!({ "source": "bouquet.marketplace", "detail-type": "OrderPaid", "detail": detail })
}

fn paid_event(vendor: &str, bouquet_ids: &[&str]) -> Value {
    let mut event = system_tests::event_fixture("project-vendor-analytics");
    event["detail"]["data"]["vendorId"] = json!(vendor);
    event["detail"]["data"]["bouquetIds"] = json!(bouquet_ids);
    event
}

/// Every function's flow in one test: its future, with the in-process handlers it awaits, is
/// deeper than a test thread's default 2 MiB stack in a debug build, so it runs on its own.
#[test]
fn every_aws_call_a_function_makes_is_granted_by_its_policy() {
    std::thread::Builder::new()
        .stack_size(16 << 20)
        .spawn(|| {
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(every_function_flow())
        })
        .unwrap()
        .join()
        .unwrap();
}

async fn every_function_flow() {
    let recorder = AccessRecorder::default();
    let mut cloud = TestCloud::recording(&recorder).await;
    let template = Template::repository().expect("template.yaml");
    // This test's user pool; the member route's directory records its calls.
    let pool = system_tests::identity::TestPool::new().await;
    cloud.directory = Arc::new(bouquet_directory::cognito::CognitoDirectory::new(
        recorder.cognito().await,
        &pool.pool.id,
    ));

    // This test's resources under the template's logical ids.
    let sqs = recorder.sqs().await;
    let recorder_ses = recorder.ses().await;
    let dlq_name = format!("{}-vase-dlq", cloud.table);
    let dlq_url = system_tests::create_queue(&sqs, &dlq_name).await;
    let mut fanout_urls = Vec::new();
    for suffix in ["fanout", "fanout-dlq"] {
        fanout_urls
            .push(system_tests::create_queue(&sqs, &format!("{}-{suffix}", cloud.table)).await);
    }
    let bus = format!("{}-bus", cloud.table);
    let names: Names = [
        ("FanoutQueue", fanout_urls[0].clone()),
        ("FanoutQueue.QueueName", format!("{}-fanout", cloud.table)),
        (
            "FanoutQueue.Arn",
            queue_arn(&format!("{}-fanout", cloud.table)),
        ),
        ("FanoutDeadLetterQueue", fanout_urls[1].clone()),
        (
            "FanoutDeadLetterQueue.QueueName",
            format!("{}-fanout-dlq", cloud.table),
        ),
        ("MarketTable", cloud.table.clone()),
        ("MarketTable.Arn", table_arn(&cloud.table)),
        ("LiveTable", cloud.live_table.clone()),
        ("LiveTable.Arn", table_arn(&cloud.live_table)),
        ("UserPool", pool.pool.id.clone()),
        (
            "UserPool.Arn",
            system_tests::iam::arn("cognito-idp", &format!("userpool/{}", pool.pool.id)),
        ),
        ("VaseMessagesDeadLetterQueue", dlq_url),
        ("VaseMessagesDeadLetterQueue.QueueName", dlq_name.clone()),
        ("VaseMessagesDeadLetterQueue.Arn", queue_arn(&dlq_name)),
        (
            "OutboxFailureQueue.QueueName",
            format!("{}-outbox", cloud.table),
        ),
        (
            "OutboxDeadLetterQueue",
            format!(
                "http://sqs.eu-west-1.localhost:4566/123456789012/{}-parked",
                cloud.table
            ),
        ),
        (
            "OutboxDeadLetterQueue.QueueName",
            format!("{}-parked", cloud.table),
        ),
        ("MarketEventBus", bus.clone()),
        ("PhotoUploadBucket", cloud.photo_buckets.uploads.clone()),
        (
            "PhotoUploadBucket.Arn",
            format!("arn:aws:s3:::{}", cloud.photo_buckets.uploads),
        ),
        ("PhotoBucket", cloud.photo_buckets.photos.clone()),
        (
            "PhotoBucket.Arn",
            format!("arn:aws:s3:::{}", cloud.photo_buckets.photos),
        ),
        // The dev stack's WebSocket API id (its @connections ARNs).
        ("WebSocketApi", "local-ws".to_owned()),
        // Its own: the reconciliation sweep below is scoped by it.
        ("VasePolicy", system_tests::vases::test_vase_policy().await),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    let policies = policies(&template, &names);
    let mut seen = Observed {
        recorder: recorder.clone(),
        by_function: BTreeMap::new(),
    };

    // Vendors and bouquets.
    let created = seen
        .http(
            &cloud,
            fixture("create-vendor")
                .admin()
                .json(json!({ "name": "Bloom" })),
            201,
        )
        .await;
    let vendor = id(&created, "vendorId");
    // Its payouts: the account opened, and the provider's report that it takes charges.
    let onboarding = seen
        .http(
            &cloud,
            fixture("start-payout-onboarding").own_shop(&vendor),
            200,
        )
        .await;
    let now = bouquet_app::domain::Clock::now(cloud.clock.as_ref()).as_epoch_seconds();
    let account = id(&onboarding, "accountId");
    let reported = seen
        .http(
            &cloud,
            system_tests::account_report(&account, &vendor, true, now),
            200,
        )
        .await;
    assert_eq!(reported.body["outcome"], "changed", "{}", reported.body);

    // Memberships: an invitation, and a user who signed up.
    let member = |email: &str| {
        ApiRequest::fixture("add-vendor-member")
            .admin()
            .vendor_id(&vendor)
            .json(json!({ "email": email }))
    };
    seen.http(&cloud, member("new@example.com"), 201).await;
    pool.sign_up("flo@example.com", &[]).await.unwrap();
    pool.confirm("flo@example.com").await;
    seen.http(&cloud, member("flo@example.com"), 200).await;

    let env = environment(&template, "register-vase", &names);
    let registrar = Registrar {
        registry: Arc::new(AwsDeviceRegistry::new(recorder.iot().await)),
        policy: env["VASE_POLICY_NAME"].clone(),
    };
    let register = ApiRequest::fixture("register-vase").own_shop(&vendor);
    let registered = seen
        .of(
            "register-vase",
            cloud.register_vase_with(&registrar, register.clone()),
        )
        .await;
    assert_eq!(registered.status, 201, "{}", registered.body);
    let vase = registered.body["vase"]["vaseId"]
        .as_str()
        .unwrap()
        .to_owned();
    // Two registrations racing with one key: the loser undoes its thing and certificate.
    let racing = register.idempotency_key("racing-registration");
    let raced = seen
        .of(
            "register-vase",
            futures::future::join(
                cloud.register_vase_with(&registrar, racing.clone()),
                cloud.register_vase_with(&registrar, racing),
            ),
        )
        .await;
    for response in [raced.0, raced.1] {
        assert!(
            response.status == 201 || response.code() == Some("idempotency.in_progress"),
            "{} {}",
            response.status,
            response.body
        );
    }

    let listed = seen
        .http(&cloud, fixture("create-bouquet").own_shop(&vendor), 201)
        .await;
    let bouquet = id(&listed, "bouquetId");
    seen.http(&cloud, fixture("create-bouquet")
            .own_shop(&vendor)
            .idempotency_key("in-a-vase")
            .json(json!({ "name": "Tulips", "price": { "amount": "20.00", "currency": "EUR" }, "vaseId": vase })),
        201,
    )
    .await;
    let [second, third, fourth, withdrawn] = cloud
        .bouquets(&vendor, ["10.00", "11.00", "12.00", "13.00"])
        .await;

    // Each index the catalogue reads: by id, one shop's, by score, by price.
    for query in [
        None,
        Some(("vendorId", vendor.as_str())),
        Some(("sort", "freshness")),
        Some(("sort", "-price")),
    ] {
        let mut request = ApiRequest::fixture("list-bouquets").anonymous();
        if let Some((name, value)) = query {
            request = request.query(name, value);
        }
        seen.http(&cloud, request, 200).await;
    }
    seen.http(
        &cloud,
        fixture("get-bouquet").anonymous().bouquet_id(&bouquet),
        200,
    )
    .await;
    seen.http(
        &cloud,
        by_vendor("update-bouquet", &vendor).bouquet_id(&bouquet),
        200,
    )
    .await;
    seen.http(
        &cloud,
        by_vendor("withdraw-bouquet", &vendor)
            .bouquet_id(&withdrawn)
            .header("if-match", "\"1\""),
        200,
    )
    .await;

    // Cart, orders, payment.
    let cart_item = |id: &str| {
        ApiRequest::fixture("put-cart-item")
            .customer("c1")
            .bouquet_id(id)
    };
    seen.http(&cloud, cart_item(&second), 200).await;
    seen.http(&cloud, cart_item(&third), 200).await;
    seen.http(&cloud, by_customer("get-cart", "c1"), 200).await;
    seen.http(
        &cloud,
        by_customer("delete-cart-item", "c1").bouquet_id(&third),
        200,
    )
    .await;
    let from_cart = seen
        .http(
            &cloud,
            by_customer("create-order", "c1")
                .no_body()
                .idempotency_key("from-the-cart"),
            201,
        )
        .await;
    let paid_order = id(&from_cart, "orderId");
    let direct = seen
        .http(
            &cloud,
            by_customer("create-order", "c2").json(json!({ "bouquetIds": [bouquet] })),
            201,
        )
        .await;
    let cancelled_order = id(&direct, "orderId");

    seen.http(&cloud, by_customer("list-orders", "c1"), 200)
        .await;
    seen.http(&cloud, by_vendor("list-orders", &vendor), 200)
        .await;
    seen.http(
        &cloud,
        by_customer("get-order", "c1").order_id(&paid_order),
        200,
    )
    .await;
    seen.http(
        &cloud,
        fixture("put-delivery-settings").own_shop(&vendor),
        200,
    )
    .await;
    seen.http(
        &cloud,
        fixture("get-delivery-settings").vendor_id(&vendor),
        200,
    )
    .await;
    let in_paris = paris_day(&cloud);
    let mut details = delivery_details(&in_paris);
    details["address"]["postcode"] = "75011".into();
    seen.http(
        &cloud,
        by_customer("put-order-delivery", "c1")
            .order_id(&paid_order)
            .header("if-match", "\"1\"")
            .json(details.clone()),
        200,
    )
    .await;
    seen.http(
        &cloud,
        by_customer("pay-order", "c1").order_id(&paid_order),
        200,
    )
    .await;
    seen.http(
        &cloud,
        by_vendor("list-orders", &vendor)
            .query("deliveryFrom", &in_paris)
            .query("status", "paid"),
        200,
    )
    .await;
    for step in ["accept-order", "dispatch-order", "fulfil-order"] {
        seen.http(&cloud, by_vendor(step, &vendor).order_id(&paid_order), 200)
            .await;
    }
    // Its customer reviews the delivered order; the shop's page lists it (issue 42).
    seen.http(
        &cloud,
        by_customer("create-review", "c1")
            .order_id(&paid_order)
            .json(json!({ "stars": 5, "text": "Fresh and on time" })),
        201,
    )
    .await;
    seen.http(
        &cloud,
        by_customer("edit-review", "c1")
            .order_id(&paid_order)
            .json(json!({ "stars": 4 })),
        200,
    )
    .await;
    seen.http(
        &cloud,
        by_vendor("answer-review", &vendor)
            .order_id(&paid_order)
            .json(json!({ "text": "Thank you!" })),
        200,
    )
    .await;
    seen.http(&cloud, fixture("list-shop-reviews").vendor_id(&vendor), 200)
        .await;
    seen.http(
        &cloud,
        fixture("hide-review")
            .order_id(&paid_order)
            .json(json!({ "reason": "A test of hiding" })),
        200,
    )
    .await;
    seen.http(
        &cloud,
        by_customer("cancel-order", "c2").order_id(&cancelled_order),
        200,
    )
    .await;
    // A paid order its vendor rejects: the refund goes through the gateway.
    let rejected_bouquet = cloud.bouquet(&vendor, "7.00").await;
    let to_reject = seen
        .http(
            &cloud,
            by_customer("create-order", "c3").json(json!({ "bouquetIds": [rejected_bouquet] })),
            201,
        )
        .await;
    let to_reject = id(&to_reject, "orderId");
    let mut mailed_to_c3 = details.clone();
    mailed_to_c3["contactEmail"] = json!(verified_email("c3"));
    seen.http(
        &cloud,
        by_customer("put-order-delivery", "c3")
            .order_id(&to_reject)
            .header("if-match", "\"1\"")
            .json(mailed_to_c3),
        200,
    )
    .await;
    seen.http(
        &cloud,
        by_customer("pay-order", "c3").order_id(&to_reject),
        200,
    )
    .await;
    seen.http(
        &cloud,
        by_vendor("reject-order", &vendor).order_id(&to_reject),
        200,
    )
    .await;

    // The sweeper with something due: a lapsed hold, and a payment whose gateway charged
    // but never answered (left payment_pending).
    let lapsed = cloud.reserve("c3", &[&third]).await;
    assert_eq!(lapsed.status, 201, "{}", lapsed.body);
    let pending = cloud.reserve("c4", &[&fourth]).await;
    assert_eq!(pending.status, 201, "{}", pending.body);
    let timeout = cloud
        .pay("c4", &id(&pending, "orderId"), "tok_timeout", Some("t"))
        .await;
    assert_eq!(timeout.status, 503, "{}", timeout.body);
    let swept = seen
        .of(
            "expire-reservations",
            cloud.run_scheduled_with("expire-reservations", cloud.app_at(T0.plus(MINUTE * 30))),
        )
        .await;
    assert_eq!(
        (
            swept["expired"].as_u64(),
            swept["paymentsCompleted"].as_u64()
        ),
        (Some(1), Some(1)),
        "{swept}"
    );

    // Stripe's webhook settles an attempt that got no answer: payment_pending → paid.
    let fifth = cloud.bouquet(&vendor, "14.00").await;
    let settling = cloud.reserve("c5", &[&fifth]).await;
    assert_eq!(settling.status, 201, "{}", settling.body);
    let settling = id(&settling, "orderId");
    let interrupted = cloud.pay("c5", &settling, "tok_timeout", Some("w")).await;
    assert_eq!(interrupted.status, 503, "{}", interrupted.body);
    let event = json!({
        "id": "evt_least_privilege", "type": "payment_intent.succeeded",
        "data": {"object": {"id": "pi_lp", "metadata": {"orderId": settling, "attemptKey": format!("{settling}-0")}}},
    })
    .to_string();
    let signature = bouquet_app::payments::stripe_webhook::sign(
        event.as_bytes(),
        system_tests::WEBHOOK_SECRET,
        bouquet_app::domain::Clock::now(cloud.clock.as_ref()).as_epoch_seconds(),
    );
    let settled = seen
        .http(
            &cloud,
            fixture("payment-webhook")
                .raw_body(&event)
                .header("stripe-signature", &signature),
            200,
        )
        .await;
    assert_eq!(settled.body["outcome"], "paid", "{}", settled.body);

    // Analytics.
    let projected = seen
        .of(
            "project-vendor-analytics",
            cloud.run_event_function("project-vendor-analytics", paid_event(&vendor, &[&second])),
        )
        .await;
    assert_eq!(projected["applied"], true, "{projected}");
    seen.http(
        &cloud,
        fixture("get-vendor-analytics").own_shop(&vendor),
        200,
    )
    .await;
    // Money (issue 41): the shop's earnings, the marketplace's commission, an invoice.
    seen.http(
        &cloud,
        fixture("get-vendor-earnings").own_shop(&vendor),
        200,
    )
    .await;
    seen.http(&cloud, fixture("get-marketplace-commission"), 200)
        .await;
    seen.http(
        &cloud,
        by_customer("get-order-invoice", "c5").order_id(&settling),
        200,
    )
    .await;

    // Photos: the upload policy, whose S3 PutObject is authorized by request-photo-upload's
    // role when the browser posts the form (recorded here as that access), then the photo
    // function reading and deleting the upload and writing the sizes, and the status route.
    let buckets = cloud.photos().await.clone();
    let mut photographing = cloud.in_process(cloud.app.clone());
    photographing.photo_objects = Arc::new(bouquet_photos::s3::S3Objects::with_client(
        recorder.s3().await,
        &buckets.uploads,
        &buckets.photos,
    ));
    let ticket = seen
        .photo(
            &cloud,
            by_vendor("request-photo-upload", &vendor)
                .bouquet_id(&bouquet)
                .json(json!({ "contentType": "image/png" })),
            &photographing,
            &buckets.uploads,
        )
        .await;
    seen.http(
        &cloud,
        by_vendor("get-photo-upload", &vendor)
            .bouquet_id(&bouquet)
            .path("uploadId", ticket.body["uploadId"].as_str().unwrap()),
        200,
    )
    .await;

    // Proof of delivery: the shop's upload for the delivered order (its form authorized by
    // request-delivery-photo-upload's role), processed into private sizes under the order,
    // and the order read with a URL get-order signs (authorized by its own role's read).
    let delivery_ticket = seen
        .photo(
            &cloud,
            by_vendor("request-delivery-photo-upload", &vendor)
                .order_id(&paid_order)
                .json(json!({ "contentType": "image/png" })),
            &photographing,
            &buckets.uploads,
        )
        .await;
    let status = seen
        .http(
            &cloud,
            by_vendor("get-delivery-photo-upload", &vendor)
                .order_id(&paid_order)
                .path(
                    "uploadId",
                    delivery_ticket.body["uploadId"].as_str().unwrap(),
                ),
            200,
        )
        .await;
    assert_eq!(status.body["status"], "ready", "{}", status.body);
    let delivered = seen
        .http(
            &cloud,
            by_customer("get-order", "c1").order_id(&paid_order),
            200,
        )
        .await;
    let signed = delivered.body["deliveryPhoto"]["url"]
        .as_str()
        .expect("a signed photo URL")
        .to_owned();
    let signed_key = signed
        .split('?')
        .next()
        .and_then(|base| base.split_once(&format!("{}/", buckets.uploads)))
        .map(|(_, key)| key.to_owned())
        .expect("the URL names a key of the upload bucket");
    assert!(
        signed_key.starts_with(&format!("delivered/{paid_order}/")),
        "{signed}"
    );
    seen.by_function
        .entry("get-order".into())
        .or_default()
        .insert(Access::new(
            "s3:GetObject",
            format!("arn:aws:s3:::{}/{signed_key}", buckets.uploads),
        ));

    // c1 asks for erasure: the delivered order is redacted at once, its photo with it.
    let erased = seen
        .http(&cloud, by_customer("erase-personal-data", "c1"), 200)
        .await;
    assert_eq!(erased.body["redacted"], 1, "{}", erased.body);
    let redacted = seen
        .http(
            &cloud,
            by_customer("get-order", "c1").order_id(&paid_order),
            200,
        )
        .await;
    assert!(
        redacted.body.get("deliveryPhoto").is_none(),
        "{}",
        redacted.body
    );

    // Shops: the administrators' list, a suspension and a reinstatement of the flow's shop.
    seen.http(&cloud, fixture("list-vendors").admin(), 200)
        .await;
    seen.http(
        &cloud,
        fixture("set-vendor-commission").admin().vendor_id(&vendor),
        200,
    )
    .await;
    for binary in ["suspend-vendor", "reinstate-vendor"] {
        seen.http(&cloud, fixture(binary).admin().vendor_id(&vendor), 200)
            .await;
    }

    // Order emails through SES, from the stack's sender (verified, as an operator does).
    let env = environment(&template, "send-order-emails", &names);
    let sender = env["EMAIL_SENDER"].clone();
    devstack::provision::verify_sender(
        &aws_sdk_sesv2::Client::new(&system_tests::emulator_sdk_config().await),
        &sender,
    )
    .await
    .unwrap();
    let mut emailing = cloud.in_process(cloud.app.clone());
    emailing.mailer = Arc::new(bouquet_mail::ses::SesMailer::with_client(
        recorder_ses.clone(),
        sender,
        None,
    ));
    let sent = seen
        .of(
            "send-order-emails",
            run_event_function(
                "send-order-emails",
                &emailing,
                paid_event_of(&cloud, &to_reject).await,
            ),
        )
        .await
        .expect("the emails are sent");
    assert_eq!(sent["sent"], 1, "the customer's receipt: {sent}");

    // Vases: messages (one malformed, to the dead-letter queue), routes, the offline sweep.
    let env = environment(&template, "ingest-vase-messages", &names);
    let ingest = Ingest::new(
        cloud.app.clone(),
        sqs.clone(),
        env["DEAD_LETTER_QUEUE_URL"].clone(),
    );
    let bodies = [
        heartbeat(&vase, T0).to_string(),
        reading(&vase, T0.plus(MINUTE), 40.0, 19.5).to_string(),
        "{not json".to_owned(),
    ];
    let (response, batch) = seen
        .of("ingest-vase-messages", ingest.ingest(sqs_records(&bodies)))
        .await;
    assert!(response.batch_item_failures.is_empty(), "{batch:?}");
    assert_eq!(
        (batch.heartbeats, batch.readings, batch.dead_lettered),
        (1, 1, 1),
        "{batch:?}"
    );
    seen.http(&cloud, fixture("list-vases").own_shop(&vendor), 200)
        .await;
    seen.http(
        &cloud,
        by_vendor("get-vase-telemetry", &vendor).path("vaseId", &vase),
        200,
    )
    .await;
    let offline = seen
        .of(
            "flag-offline-vases",
            cloud.run_scheduled_with("flag-offline-vases", cloud.app_at(T0.plus(MINUTE * 120))),
        )
        .await;
    assert_eq!(offline["wentOffline"], 1, "{offline}");
    // The backfill an operator runs after an upgrade: its Scan and UpdateItem (everything here
    // was written with its keys, so one item is made to lack them).
    use aws_sdk_dynamodb::types::AttributeValue;
    cloud
        .client
        .update_item()
        .table_name(&cloud.table)
        .key("pk", AttributeValue::S(format!("BOUQUET#{second}")))
        .key("sk", AttributeValue::S("BOUQUET".into()))
        .update_expression("REMOVE priceSort")
        .send()
        .await
        .unwrap();
    let backfilled = seen
        .of(
            "backfill-index-keys",
            cloud.run_operator_function("backfill-index-keys", json!({ "cursor": null })),
        )
        .await;
    assert_eq!(
        (backfilled["rewritten"].as_u64(), &backfilled["nextCursor"]),
        (Some(1), &Value::Null),
        "{backfilled}"
    );

    // A vase's credentials: rotated, then decommissioned; and the sweep removing an orphan.
    let spare = registered_vase(&mut seen, &cloud, &registrar, &vendor).await;
    let rotated = seen
        .of(
            "rotate-vase-certificate",
            system_tests::in_process::routes::rotate_vase_certificate::handler(
                &system_tests::with_registrar(&cloud.app, &registrar),
                ApiRequest::fixture("rotate-vase-certificate")
                    .vendor(&vendor)
                    .path("vaseId", &spare)
                    .build(),
            ),
        )
        .await
        .unwrap();
    assert_eq!(rotated.status(), 200);
    let decommissioned = seen
        .of(
            "decommission-vase",
            system_tests::in_process::routes::decommission_vase::handler(
                &system_tests::with_registrar(&cloud.app, &registrar),
                ApiRequest::fixture("decommission-vase")
                    .vendor(&vendor)
                    .path("vaseId", &spare)
                    .build(),
            ),
        )
        .await
        .unwrap();
    assert_eq!(decommissioned.status(), 204);
    let orphan = VaseId::generate().to_string();
    let plain = AwsDeviceRegistry::new(iot_client().await);
    plain
        .create_thing(&NewThing {
            name: &orphan,
            vendor_id: &vendor,
            policy: &registrar.policy,
            registered_at: 0,
        })
        .await
        .unwrap();
    let certificate = plain.create_certificate().await.unwrap();
    plain
        .attach_policy(&registrar.policy, &certificate.arn)
        .await
        .unwrap();
    plain
        .attach_thing_principal(&orphan, &certificate.arn)
        .await
        .unwrap();
    let loose = plain.create_certificate().await.unwrap();
    plain
        .attach_policy(&registrar.policy, &loose.arn)
        .await
        .unwrap();
    let later = Timestamp::from_millis(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64,
    )
    .plus(reconcile_vase_things::GRACE * 2);
    let reconciled = seen
        .of(
            "reconcile-vase-things",
            reconcile_vase_things::handler(
                &system_tests::with_registrar(&cloud.app_at(later), &registrar),
                lambda_runtime::LambdaEvent::new(
                    json!({"id": "least-privilege"}),
                    lambda_runtime::Context::default(),
                ),
            ),
        )
        .await
        .unwrap();
    assert_eq!(
        (reconciled.things_removed, reconciled.certificates_revoked),
        (vec![orphan], vec![loose.arn])
    );

    // Live updates: the WebSocket API's functions and the broadcaster, pushing through the
    // management API of a local WebSocket API.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let mut live = cloud.in_process(cloud.app.clone());
    live.pusher = Some(Arc::new(ApiGatewayPusher::with_client(
        recorder.connections(&endpoint).await,
    )));
    live.queue = Some(Arc::new(bouquet_app::realtime::SqsWorkQueue::new(
        recorder.sqs().await,
        fanout_urls[0].clone(),
        fanout_urls[1].clone(),
    )));
    let websocket = LocalWebSocketApi::from_template(&template, &live, Limits::default())
        .unwrap()
        .unwrap();
    tokio::spawn(websocket.serve_on(listener));
    let fixture = system_tests::event_fixture;
    let mut authorize = fixture("ws-authorize");
    authorize["queryStringParameters"]["token"] = json!(devstack::jwt::mint(
        &devstack::jwt::secret_from_env(),
        "customer",
        "customer-1",
        None,
        60
    )
    .unwrap());
    let allowed = seen
        .of(
            "ws-authorize",
            run_websocket_function("ws-authorize", &live, authorize),
        )
        .await
        .unwrap();
    assert_eq!(allowed["context"]["role"], "customer", "{allowed}");
    let pong = seen
        .of(
            "ws-ping",
            run_websocket_function("ws-ping", &live, fixture("ws-ping")),
        )
        .await
        .unwrap();
    assert_eq!(pong["body"], r#"{"type":"pong"}"#);
    seen.of(
        "ws-connect",
        run_websocket_function("ws-connect", &live, fixture("ws-connect")),
    )
    .await
    .unwrap();
    let mut subscribe = fixture("ws-subscribe");
    subscribe["body"] = json!(json!({"action": "subscribe", "channels": ["catalogue", "orders", format!("vendor:{vendor}")]}).to_string());
    let subscribed = seen
        .of(
            "ws-subscribe",
            run_websocket_function("ws-subscribe", &live, subscribe.clone()),
        )
        .await
        .unwrap();
    assert!(
        subscribed["body"].as_str().unwrap().contains("subscribed"),
        "{subscribed}"
    );
    subscribe["requestContext"]["routeKey"] = json!("unsubscribe");
    subscribe["body"] = json!(json!({"action": "unsubscribe", "channels": ["orders"]}).to_string());
    seen.of(
        "ws-subscribe",
        run_websocket_function("ws-subscribe", &live, subscribe),
    )
    .await
    .unwrap();
    let mut listed = fixture("broadcast-events");
    listed["detail"]["data"]["vendorId"] = json!(vendor);
    let broadcast = seen
        .of(
            "broadcast-events",
            run_event_function("broadcast-events", &live, listed),
        )
        .await
        .unwrap();
    // The public channels' units are queued: a worker takes them all in one batch, with a
    // body that is no unit (parked). The fixture's connection is in the table but not on the
    // local API: its push finds it gone (410) and removes it.
    let fixture_connection =
        work_the_queued_units(&mut seen, &live, &fanout_urls[0], &broadcast, fixture).await;
    assert!(
        cloud
            .app
            .store
            .connection(&fixture_connection)
            .await
            .unwrap()
            .is_none(),
        "the gone connection was removed"
    );
    close_a_crowded_digest(&mut seen, &live, fixture).await;
    seen.of(
        "ws-connect",
        run_websocket_function("ws-connect", &live, fixture("ws-connect")),
    )
    .await
    .unwrap();
    seen.of(
        "ws-disconnect",
        run_websocket_function("ws-disconnect", &live, fixture("ws-disconnect")),
    )
    .await
    .unwrap();

    // publish-events and redrive-outbox, statically: their AWS calls are bouquet-bus's
    // adapters (PutEvents; SendMessageBatch to park, ReceiveMessage, DeleteMessageBatch and
    // ChangeMessageVisibilityBatch to redrive), on the bus and the dead-letter queue their environment names. (The parking
    // and redrive path itself runs against the emulator in the outbox tests.)
    let bus_source = std::fs::read_to_string(repository_root().join("shared/bus/src/lib.rs"))
        .unwrap()
        + &std::fs::read_to_string(repository_root().join("shared/bus/src/parking.rs")).unwrap();
    let calls = [
        ".put_events()",
        ".send_message_batch()",
        ".receive_message()",
        ".delete_message_batch()",
        ".change_message_visibility_batch()",
    ];
    assert_eq!(
        bus_source.matches(".send()").count(),
        calls
            .iter()
            .map(|c| bus_source.matches(c).count())
            .sum::<usize>(),
        "bouquet-bus sends something other than {calls:?}"
    );
    let sdks_of = |dir: std::path::PathBuf| -> BTreeSet<String> {
        std::fs::read_to_string(dir.join("Cargo.toml"))
            .unwrap()
            .lines()
            .filter(|l| l.trim_start().starts_with("aws-sdk-"))
            .map(|l| l.split('.').next().unwrap_or_default().trim().to_owned())
            .collect()
    };
    assert_eq!(
        sdks_of(repository_root().join("shared/bus")),
        BTreeSet::from(["aws-sdk-eventbridge".to_owned(), "aws-sdk-sqs".to_owned()]),
        "bouquet-bus's AWS SDKs"
    );
    for binary in ["publish-events", "redrive-outbox"] {
        let crate_dir = repository_root().join("functions").join(binary);
        assert!(
            sdks_of(crate_dir.clone()).is_empty(),
            "{binary} calls AWS only through bouquet-bus"
        );
        let source = std::fs::read_to_string(crate_dir.join("src/lib.rs")).unwrap();
        assert_eq!(
            source.matches(".send()").count(),
            0,
            "{binary} calls AWS itself"
        );
        let env = environment(&template, binary, &names);
        let queue = queue_url_arn(&env["OUTBOX_DEAD_LETTER_QUEUE_URL"]);
        let bus = event_bus_arn(&env["EVENT_BUS_NAME"]);
        let accesses = match binary {
            "publish-events" => vec![
                Access::new("events:PutEvents", bus),
                Access::new("sqs:SendMessage", queue),
            ],
            _ => vec![
                Access::new("events:PutEvents", bus),
                Access::new("sqs:ReceiveMessage", queue.clone()),
                Access::new("sqs:DeleteMessage", queue.clone()),
                Access::new("sqs:ChangeMessageVisibility", queue),
            ],
        };
        seen.by_function
            .insert(binary.into(), accesses.into_iter().collect());
    }

    // A route without a flow above (a new one) runs its example request on this table, so
    // its reads are checked from the start; a flow of its own, on data, proves its writes.
    for (binary, _, _) in HTTP_FUNCTIONS {
        if !seen.by_function.contains_key(*binary) {
            let response = seen
                .of(binary, cloud.call(binary, ApiRequest::fixture(binary)))
                .await;
            assert!(response.status < 500, "{binary}: {}", response.body);
            eprintln!(
                "{binary}: checked on its example request only ({})",
                response.status
            );
        }
    }

    // Every function of the template was exercised, and did something; a function whose
    // policy grants nothing (the authorizer, ping) must have run and called nothing.
    let untested: Vec<&String> = policies
        .iter()
        .filter(|(b, (_, policy))| match seen.by_function.get(*b) {
            None => true,
            Some(accesses) => accesses.is_empty() != policy.statements.is_empty(),
        })
        .map(|(b, _)| b)
        .collect();
    assert!(
        untested.is_empty(),
        "functions without a flow here: {untested:?}"
    );

    let gaps = gaps(&policies, &seen.by_function);
    assert!(gaps.is_empty(), "{}", report(&policies, &gaps));

    // Not vacuous: what was recorded really is checked. Without DeleteItem, the cart's
    // delete inside create-order's transaction is reported; without iot:AttachPolicy,
    // register-vase's attachment of the vase policy to its certificate is.
    let observed = &seen.by_function;
    let (_, create_order) = &policies["create-order"];
    assert_eq!(
        create_order
            .without_action("dynamodb:DeleteItem")
            .missing(&observed["create-order"]),
        vec![Access::new("dynamodb:DeleteItem", table_arn(&cloud.table))]
    );
    let (_, register_vase) = &policies["register-vase"];
    assert!(
        !register_vase
            .without_action("iot:AttachPolicy")
            .missing(&observed["register-vase"])
            .is_empty(),
        "register-vase attached a policy: {:?}",
        observed["register-vase"]
    );
}

/// The matcher on its own: a missing action, a resource outside the grant, an index
/// query against a policy for the table only, and a transaction read item by item.
#[test]
fn the_matcher_reports_what_a_policy_does_not_grant() {
    use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsInput;
    use aws_sdk_dynamodb::types::{ConditionCheck, Delete, Put, TransactWriteItem, Update};
    use aws_smithy_runtime_api::client::interceptors::context::Input;

    let template = Template::repository().unwrap();
    let table = "least-privilege";
    let names: Names = [
        ("MarketTable".to_owned(), table.to_owned()),
        ("MarketTable.Arn".to_owned(), table_arn(table)),
    ]
    .into();
    let policies = policies(&template, &names);
    let on_table = |action: &str| Access::new(action, table_arn(table));
    let on_index = |action: &str, index: &str| {
        Access::new(action, format!("{}/index/{index}", table_arn(table)))
    };

    // create-order's transaction, as the recorder sees it.
    let put = Put::builder()
        .table_name(table)
        .set_item(Some(HashMap::new()));
    let transaction = TransactWriteItemsInput::builder()
        .transact_items(
            TransactWriteItem::builder()
                .put(put.build().unwrap())
                .build(),
        )
        .transact_items(
            TransactWriteItem::builder()
                .update(
                    Update::builder()
                        .table_name(table)
                        .set_key(Some(HashMap::new()))
                        .update_expression("SET a = :a")
                        .build()
                        .unwrap(),
                )
                .build(),
        )
        .transact_items(
            TransactWriteItem::builder()
                .delete(
                    Delete::builder()
                        .table_name(table)
                        .set_key(Some(HashMap::new()))
                        .build()
                        .unwrap(),
                )
                .build(),
        )
        .transact_items(
            TransactWriteItem::builder()
                .condition_check(
                    ConditionCheck::builder()
                        .table_name(table)
                        .set_key(Some(HashMap::new()))
                        .condition_expression("attribute_exists(pk)")
                        .build()
                        .unwrap(),
                )
                .build(),
        )
        .build()
        .unwrap();
    let accesses = system_tests::iam::accesses(&Input::erase(transaction)).unwrap();
    assert_eq!(
        accesses,
        vec![
            on_table("dynamodb:PutItem"),
            on_table("dynamodb:UpdateItem"),
            on_table("dynamodb:DeleteItem"),
            on_table("dynamodb:ConditionCheckItem"),
        ]
    );
    let (_, create_order) = &policies["create-order"];
    assert!(create_order.missing(&accesses).is_empty());
    assert_eq!(
        create_order
            .without_action("dynamodb:DeleteItem")
            .missing(&accesses),
        vec![on_table("dynamodb:DeleteItem")]
    );
    // pay-order may neither delete nor make bare condition checks.
    assert_eq!(
        policies["pay-order"].1.missing(&accesses),
        vec![
            on_table("dynamodb:DeleteItem"),
            on_table("dynamodb:ConditionCheckItem")
        ]
    );
    // Another table is outside every grant.
    let elsewhere = Access::new("dynamodb:GetItem", table_arn("another-table"));
    assert!(!policies["get-order"].1.allows(&elsewhere));
    // list-vases may query VendorIndex only; get-vase-telemetry the table only.
    let (_, list_vases) = &policies["list-vases"];
    assert!(list_vases.allows(&on_index("dynamodb:Query", "VendorIndex")));
    assert!(!list_vases.allows(&on_index("dynamodb:Query", "CatalogueIndex")));
    assert!(!list_vases.allows(&on_table("dynamodb:Query")));
    assert!(!policies["get-vase-telemetry"]
        .1
        .allows(&on_index("dynamodb:Query", "VendorIndex")));
}

async fn iot_client() -> aws_sdk_iot::Client {
    aws_sdk_iot::Client::new(&system_tests::emulator_sdk_config().await)
}

/// Registers another vase through `register-vase` (recorded); returns its id.
async fn registered_vase(
    seen: &mut Observed,
    cloud: &TestCloud,
    registrar: &Registrar,
    vendor: &str,
) -> String {
    let response = seen
        .of(
            "register-vase",
            cloud.register_vase_with(
                registrar,
                ApiRequest::fixture("register-vase")
                    .own_shop(vendor)
                    .no_idempotency_key(),
            ),
        )
        .await;
    assert_eq!(response.status, 201, "{}", response.body);
    response.body["vase"]["vaseId"].as_str().unwrap().to_owned()
}

/// Runs `push-frames` on the units the broadcaster queued (and one body that is no unit);
/// returns the fixture connection's id. Boxed: the test's future is large enough already.
fn work_the_queued_units<'a>(
    seen: &'a mut Observed,
    live: &'a system_tests::in_process::InProcess,
    fanout_url: &'a str,
    broadcast: &'a Value,
    fixture: impl Fn(&str) -> Value + Send + 'a,
) -> futures::future::BoxFuture<'a, String> {
    Box::pin(async move {
        let queued = broadcast["queued"].as_u64().unwrap() as usize;
        assert!(queued > 0, "{broadcast}");
        let plain = aws_sdk_sqs::Client::new(&system_tests::emulator_sdk_config().await);
        let mut bodies = Vec::new();
        while bodies.len() < queued {
            let received = plain
                .receive_message()
                .queue_url(fanout_url)
                .max_number_of_messages(10)
                .send()
                .await
                .unwrap();
            bodies.extend(
                received
                    .messages
                    .unwrap_or_default()
                    .into_iter()
                    .filter_map(|m| m.body),
            );
        }
        bodies.push("not a unit".into());
        let mut units = fixture("push-frames");
        let record = units["Records"][0].clone();
        units["Records"] = bodies
            .iter()
            .enumerate()
            .map(|(i, body)| {
                let mut record = record.clone();
                record["messageId"] = json!(format!("m-{i}"));
                record["body"] = json!(body);
                record
            })
            .collect();
        let pushed = seen
            .of(
                "push-frames",
                run_event_function("push-frames", live, units),
            )
            .await
            .unwrap();
        assert_eq!(pushed["batchItemFailures"], json!([]), "{pushed}");
        fixture("ws-connect")["requestContext"]["connectionId"]
            .as_str()
            .unwrap()
            .to_owned()
    })
}

/// A crowded catalogue: the planner adds the event to the window's digest and schedules its
/// flush; the worker closes the window and queues its units. Boxed, as above.
fn close_a_crowded_digest<'a>(
    seen: &'a mut Observed,
    live: &'a system_tests::in_process::InProcess,
    fixture: impl Fn(&str) -> Value + Send + 'a,
) -> futures::future::BoxFuture<'a, ()> {
    Box::pin(async move {
        let app = &live.app;
        let mut of = bouquet_app::store::CATALOGUE_SUBSCRIPTION_SHARDS;
        while of < bouquet_app::store::DIGEST_FROM_SHARDS {
            app.store
                .grow_subscription_shards("catalogue", of, of * 2)
                .await
                .unwrap();
            of *= 2;
        }
        let planned = seen
            .of(
                "broadcast-events",
                run_event_function("broadcast-events", live, fixture("broadcast-events")),
            )
            .await
            .unwrap();
        assert_eq!(planned["digested"], 1, "{planned}");
        let window = app
            .clock
            .now()
            .as_millis()
            .div_euclid(bouquet_app::live::DIGEST_WINDOW.as_millis() as i64);
        let mut closing = fixture("push-frames");
        closing["Records"][0]["body"] =
            json!(json!({ "digest": "catalogue", "window": window }).to_string());
        let closed = seen
            .of(
                "push-frames",
                run_event_function("push-frames", live, closing),
            )
            .await
            .unwrap();
        assert_eq!(closed["batchItemFailures"], json!([]), "{closed}");
    })
}

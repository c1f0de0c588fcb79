//! The local cloud over real sockets: the dev stack's API Gateway (routes from the template,
//! JWT authorizer) in front of the handlers; and the real function binaries under a local
//! Lambda Runtime API giving the same answers as the in-process path.

use std::time::Duration;

use serde_json::{json, Value};

use devstack::lambda::Resolver;
use devstack::runtime_api::{http_response, FunctionProcess};
use system_tests::http_client::send;
use system_tests::{
    bearer, delivery_details, function_binary, list_over_http, reserve_cart_over_http, token,
    vendor_over_http, ApiRequest, Outcome, PathParams, TestCloud,
};

/// The customer whose bearer token is `authorization` pays `order_id` by card over the local
/// API at `api`, under `idempotency_key`.
async fn pay_over_http(
    api: std::net::SocketAddr,
    authorization: &str,
    order_id: &str,
    idempotency_key: &str,
) -> system_tests::http_client::HttpReply {
    bearer(api, authorization)
        .send(
            "POST",
            &format!("/v1/orders/{order_id}/payment"),
            &[("idempotency-key", idempotency_key)],
            Some(&json!({ "paymentToken": "tok_visa" })),
        )
        .await
}

#[tokio::test]
async fn browse_cart_reserve_pay_fulfil_and_reserve_expire_over_http() {
    let cloud = TestCloud::new().await;
    let (api, _) = cloud.local_api().await;
    let (vendor_id, seller) = vendor_over_http(api, "Bloom & Vase").await;
    cloud
        .onboard_payouts_over_http(api, &seller, &vendor_id)
        .await;
    let mut bouquets = Vec::new();
    for (name, amount) in [("Peonies", "34.90"), ("Tulips", "24.50")] {
        let listed = list_over_http(api, &seller, &vendor_id, name, amount).await;
        assert_eq!(listed.status, 201);
        bouquets.push(listed.body["bouquetId"].as_str().unwrap().to_owned());
    }

    // Browse (public), put one in the cart, reserve the cart, pay, and the vendor fulfils.
    let catalogue = send(api, "GET", "/v1/bouquets?limit=10", &[], None).await;
    assert_eq!(catalogue.body["items"].as_array().map(Vec::len), Some(2));
    let alice = token("customer", "alice", None);
    let cart = bearer(api, &alice)
        .put(&format!("/v1/cart/items/{}", bouquets[0]))
        .await;
    assert_eq!(
        (cart.status, cart.body["total"]["amount"].as_str()),
        (200, Some("34.90"))
    );
    let order = reserve_cart_over_http(api, &alice, "checkout-1").await;
    let order_id = order.body["orderId"].as_str().unwrap().to_owned();
    let unpaid = pay_over_http(api, &alice, &order_id, "pay-0").await;
    assert_eq!(
        (unpaid.status, unpaid.body["code"].as_str()),
        (409, Some("order.delivery_required")),
        "no payment without the delivery details: {:?}",
        unpaid.body
    );
    let tomorrow =
        bouquet_app::domain::delivery::date_after(cloud.app.clock.now(), 1, "UTC").unwrap();
    let given = bearer(api, &alice)
        .send(
            "PUT",
            &format!("/v1/orders/{order_id}/delivery"),
            &[("if-match", "\"1\"")],
            Some(&delivery_details(&tomorrow)),
        )
        .await;
    assert_eq!(
        (given.status, given.headers.get("etag").map(String::as_str)),
        (200, Some("\"2\"")),
        "{:?}",
        given.body
    );
    let paid = pay_over_http(api, &alice, &order_id, "pay-1").await;
    paid.assert_state(200, "paid");
    let fulfilled = bearer(api, &seller)
        .send("POST", &format!("/v1/orders/{order_id}/fulfil"), &[], None)
        .await;
    assert_eq!(fulfilled.status_and_state(), (200, Some("fulfilled")));
    assert_eq!(
        cloud.order_status(&order_id).await.as_deref(),
        Some("fulfilled")
    );

    // Reserve the other one and let it lapse: the scheduled sweeper expires it.
    let bob = token("customer", "bob", None);
    let held = bearer(api, &bob)
        .post("/v1/orders", &json!({ "bouquetIds": [bouquets[1]] }))
        .await;
    assert_eq!(held.status, 201);
    let held_id = held.body["orderId"].as_str().unwrap().to_owned();
    cloud.clock.advance(Duration::from_secs(15 * 60 + 1));
    assert_eq!(
        cloud.run_scheduled("expire-reservations").await["expired"],
        1
    );
    let seen = bearer(api, &bob)
        .get(&format!("/v1/orders/{held_id}"))
        .await;
    assert_eq!(seen.body["status"], "expired");
    let again = send(api, "GET", "/v1/bouquets", &[], None).await;
    assert_eq!(
        again.body["items"][0]["bouquetId"],
        bouquets[1].as_str(),
        "released to the catalogue"
    );
    assert!(again.headers.contains_key("x-correlation-id"));
}

#[tokio::test]
async fn the_authorizer_refuses_bad_tokens_without_invoking_the_function() {
    let cloud = TestCloud::new().await;
    let (api, local) = cloud.local_api().await;
    let body = json!({ "bouquetIds": ["01JF0000000000000000000000"] });
    let forged = format!(
        "Bearer {}",
        devstack::jwt::mint("not-the-secret", "customer", "mallory", None, 600).unwrap()
    );
    let expired = format!(
        "Bearer {}",
        devstack::jwt::mint(system_tests::JWT_SECRET, "customer", "late", None, -10).unwrap()
    );
    let wrong_audience = {
        use jsonwebtoken::{encode, EncodingKey, Header};
        let claims = json!({ "sub": "x", "role": "customer", "iss": "bouquet-local", "aud": "another-api", "exp": 4102444800u64 });
        format!(
            "Bearer {}",
            encode(
                &Header::default(),
                &claims,
                &EncodingKey::from_secret(system_tests::JWT_SECRET.as_bytes())
            )
            .unwrap()
        )
    };
    for (what, headers) in [
        ("no token", vec![]),
        (
            "not a bearer token",
            vec![("authorization", "Basic YWxpY2U6c2VjcmV0")],
        ),
        ("wrong signature", vec![("authorization", forged.as_str())]),
        ("expired", vec![("authorization", expired.as_str())]),
        (
            "wrong audience",
            vec![("authorization", wrong_audience.as_str())],
        ),
    ] {
        let reply = send(api, "POST", "/v1/orders", &headers, Some(&body)).await;
        assert_eq!(
            (reply.status, reply.body.clone()),
            (401, json!({ "message": "Unauthorized" })),
            "{what}"
        );
    }
    assert_eq!(local.invocations(), 0, "the function never ran");
    assert_eq!(
        send(api, "GET", "/v1/nothing-here", &[], None).await.body,
        json!({ "message": "Not Found" })
    );

    // A valid token of the wrong role reaches the function, which refuses it; claims arrive.
    let vendor = token("vendor", "seller", Some("01JF0000000000000000000000"));
    let refused = bearer(api, &vendor).post("/v1/orders", &body).await;
    assert_eq!(refused.status_and_code(), (403, Some("auth.forbidden")));
    let alice = token("customer", "alice", None);
    let cart = bearer(api, &alice).get("/v1/cart").await;
    assert_eq!(
        cart.body["customerId"], "alice",
        "the token's sub reached the handler"
    );
    assert_eq!(local.invocations(), 2);
}

/// Deterministic requests whose answers can be compared byte for byte.
async fn comparable_requests(cloud: &TestCloud) -> Vec<(&'static str, ApiRequest)> {
    let vendor = cloud.vendor("Bloom").await;
    let bouquet = cloud.bouquet(&vendor, "24.50").await;
    let taken = cloud.bouquet(&vendor, "10.00").await;
    assert_eq!(cloud.reserve("customer-1", &[&taken]).await.status, 201);
    vec![
        (
            "get-bouquet",
            ApiRequest::fixture("get-bouquet").bouquet_id(&bouquet),
        ),
        (
            "get-bouquet",
            ApiRequest::fixture("get-bouquet").bouquet_id("01JF0000000000000000000000"),
        ),
        (
            "get-bouquet",
            ApiRequest::fixture("get-bouquet").bouquet_id("bad id"),
        ),
        (
            "list-bouquets",
            ApiRequest::fixture("list-bouquets").query("vendorId", &vendor),
        ),
        (
            "create-order",
            ApiRequest::fixture("create-order")
                .json(json!({ "bouquetIds": [taken] }))
                .no_idempotency_key(),
        ),
        (
            "create-order",
            ApiRequest::fixture("create-order").raw_body("{nope"),
        ),
        (
            "create-order",
            ApiRequest::fixture("create-order").anonymous(),
        ),
    ]
}

fn sorted_headers(headers: Vec<(String, String)>) -> Vec<(String, String)> {
    let mut headers: Vec<_> = headers
        .into_iter()
        .map(|(k, v)| (k.to_ascii_lowercase(), v))
        .collect();
    headers.sort();
    headers
}

/// `process` invoked with `request`, as API Gateway invokes a function: its response payload.
async fn invoked(process: &FunctionProcess, request: &ApiRequest) -> Value {
    process
        .api
        .invoke(request.event().clone(), Duration::from_secs(10))
        .await
        .expect("invoke")
}

/// The value of `name` in the function environment `env`.
fn env_var(env: &[(String, String)], name: &str) -> Option<String> {
    env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
}

/// No path around the edge (issue 38): the deployed binary, with the template's
/// `ORIGIN_VERIFY`, answers 404 to a request without the edge's header (the execute-api
/// endpoint called directly) and serves the same request with it.
#[tokio::test]
async fn a_binary_answers_404_to_a_request_that_did_not_come_through_the_edge() {
    let (cloud, vendor) = TestCloud::with_vendor("Bloom").await;
    let bouquet = cloud.bouquet(&vendor, "12.00").await;
    let env = cloud.function_env_behind_the_edge("get-bouquet");
    let secret =
        env_var(&env, "ORIGIN_VERIFY").expect("the template gives the functions the edge's secret");
    let process = FunctionProcess::spawn(&function_binary("get-bouquet"), "get-bouquet", &env)
        .await
        .expect("spawn");
    let request = ApiRequest::fixture("get-bouquet").bouquet_id(&bouquet);
    for (header, expected) in [
        (None, 404),
        (Some("a guess"), 404),
        (Some(secret.as_str()), 200),
    ] {
        let mut sent = request.clone();
        if let Some(value) = header {
            sent = sent.header("x-origin-verify", value);
        }
        let payload: Value = invoked(&process, &sent).await;
        let (status, headers, _) = http_response(&payload);
        assert_eq!(status.as_u16(), expected, "{header:?}: {payload}");
        assert!(
            headers
                .iter()
                .any(|(k, v)| k == "x-content-type-options" && v == "nosniff"),
            "{header:?}: {headers:?}"
        );
    }
    process.stop().await;
}

#[tokio::test]
async fn the_real_binaries_answer_exactly_as_the_in_process_handlers() {
    let cloud = TestCloud::new().await;
    // The binaries run on the wall clock; so must the in-process side here.
    cloud.clock.set(bouquet_app::domain::Clock::now(
        &bouquet_app::domain::SystemClock,
    ));
    let requests = comparable_requests(&cloud).await;
    let mut processes = std::collections::HashMap::new();
    for (binary, request) in requests {
        if !processes.contains_key(binary) {
            let process = FunctionProcess::spawn(
                &function_binary(binary),
                binary,
                &cloud.function_env(binary),
            )
            .await
            .expect("spawn");
            assert!(
                process
                    .init_duration(Duration::from_secs(20))
                    .await
                    .is_some(),
                "{binary} did not start"
            );
            processes.insert(binary, process);
        }
        let in_process = cloud.call(binary, request.clone()).await;
        let payload: Value = invoked(&processes[binary], &request).await;
        let (status, headers, body) = http_response(&payload);
        assert_eq!(status.as_u16(), in_process.status, "{binary}: {payload}");
        let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        assert_eq!(body, in_process.body, "{binary}");
        let in_process_headers = sorted_headers(in_process.headers.clone().into_iter().collect());
        assert_eq!(sorted_headers(headers), in_process_headers, "{binary}");
    }
    for (_, process) in processes {
        process.stop().await;
    }
}

#[tokio::test]
async fn provisioning_twice_changes_nothing() {
    let template = bouquet_template::Template::repository().unwrap();
    let sdk = system_tests::emulator_sdk_config().await;
    let stack = format!("t{}", ulid::Ulid::new().to_string().to_lowercase());
    let mut first = devstack::provision::provision_resources(&template, &stack, &sdk)
        .await
        .unwrap();
    let (policies, rules) = devstack::iot_core::provision(&template, &stack, &sdk, &mut first)
        .await
        .unwrap();
    let mut second = devstack::provision::provision_resources(&template, &stack, &sdk)
        .await
        .unwrap();
    let (policies_again, rules_again) =
        devstack::iot_core::provision(&template, &stack, &sdk, &mut second)
            .await
            .unwrap();
    assert_eq!(first, second);
    assert_eq!(policies, policies_again);
    assert_eq!(rules.len(), 2);
    assert_eq!(rules_again.len(), 2);
    // Every table, queue, bus, IoT policy and topic rule of the template, by logical id.
    for kind in [
        "AWS::DynamoDB::Table",
        "AWS::SQS::Queue",
        "AWS::Events::EventBus",
        "AWS::IoT::Policy",
        "AWS::IoT::TopicRule",
    ] {
        for (id, _) in template.resources_of_type(kind) {
            assert!(first.contains_key(id), "{kind} {id} was not provisioned");
        }
    }
    // The vase queue's redrive policy names its dead-letter queue.
    let sqs = aws_sdk_sqs::Client::new(&sdk);
    let attributes = sqs
        .get_queue_attributes()
        .queue_url(&first["VaseMessagesQueue"])
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::RedrivePolicy)
        .send()
        .await
        .unwrap()
        .attributes
        .unwrap_or_default();
    let redrive: serde_json::Value =
        serde_json::from_str(&attributes[&aws_sdk_sqs::types::QueueAttributeName::RedrivePolicy])
            .unwrap();
    assert_eq!(
        redrive["deadLetterTargetArn"],
        first["VaseMessagesDeadLetterQueue.Arn"].as_str()
    );
}

#[tokio::test]
async fn the_sqs_mapping_deletes_what_succeeded_and_redrives_a_failing_message_to_its_dlq() {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};

    use aws_sdk_sqs::types::QueueAttributeName;

    let sdk = system_tests::emulator_sdk_config().await;
    let sqs = aws_sdk_sqs::Client::new(&sdk);
    let name = format!("t{}", ulid::Ulid::new().to_string().to_lowercase());
    let dlq = system_tests::create_queue(&sqs, &format!("{name}-dlq")).await;
    let arn = |queue: &str| format!("arn:aws:sqs:eu-west-1:123456789012:{queue}");
    let queue = sqs
        .create_queue()
        .queue_name(&name)
        .attributes(QueueAttributeName::VisibilityTimeout, "1")
        .attributes(
            QueueAttributeName::RedrivePolicy,
            json!({ "deadLetterTargetArn": arn(&format!("{name}-dlq")), "maxReceiveCount": "2" })
                .to_string(),
        )
        .send()
        .await
        .unwrap()
        .queue_url
        .unwrap();
    for body in ["ok-0", "ok-1", "ok-2", "ok-3", "poison"] {
        sqs.send_message()
            .queue_url(&queue)
            .message_body(body)
            .send()
            .await
            .unwrap();
    }
    let seen: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
    let counter = seen.clone();
    let invoke = system_tests::in_process::invoke(move |event: serde_json::Value| {
        let counter = counter.clone();
        async move {
            let mut failures = Vec::new();
            for record in event["Records"].as_array().unwrap() {
                let body = record["body"].as_str().unwrap().to_owned();
                if body == "poison" {
                    failures.push(json!({ "itemIdentifier": record["messageId"] }));
                }
                *counter.lock().unwrap().entry(body).or_default() += 1;
            }
            Ok(json!({ "batchItemFailures": failures }))
        }
    });
    let event = json!({ "Properties": { "BatchSize": 10, "FunctionResponseTypes": ["ReportBatchItemFailures"] } });
    let mapping = devstack::queues::QueueMapping::new(
        "test".into(),
        queue.clone(),
        arn(&name),
        &event,
        invoke,
        sqs.clone(),
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    while std::time::Instant::now() < deadline {
        mapping.poll().await.unwrap();
        let dead = sqs
            .get_queue_attributes()
            .queue_url(&dlq)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
            .send()
            .await
            .unwrap()
            .attributes
            .unwrap_or_default();
        if dead[&QueueAttributeName::ApproximateNumberOfMessages] == "1" {
            break;
        }
    }
    let seen = seen.lock().unwrap().clone();
    for ok in ["ok-0", "ok-1", "ok-2", "ok-3"] {
        assert_eq!(seen.get(ok), Some(&1), "{ok} delivered once: {seen:?}");
    }
    assert_eq!(
        seen.get("poison"),
        Some(&2),
        "maxReceiveCount deliveries: {seen:?}"
    );
    let moved = sqs
        .receive_message()
        .queue_url(&dlq)
        .send()
        .await
        .unwrap()
        .messages
        .unwrap_or_default();
    assert_eq!(moved.len(), 1);
    assert_eq!(moved[0].body(), Some("poison"));
}

#[tokio::test]
async fn a_route_added_to_the_template_runs_its_built_binary_and_a_rebuild_is_picked_up() {
    let (cloud, vendor) = TestCloud::with_vendor("Bloom").await;
    let bouquet = cloud.bouquet(&vendor, "12.00").await;
    // A new function, only in the template: its binary is a copy of get-bouquet's under a new
    // name. Nothing else names it.
    let text = std::fs::read_to_string(system_tests::repository_root().join("template.yaml"))
        .unwrap()
        .replacen(
            "\nResources:\n",
            "\nResources:\n  AgainFunction:\n    Type: AWS::Serverless::Function\n    Metadata:\n      BuildMethod: rust-cargolambda\n      BuildProperties:\n        Binary: get-bouquet-again\n    Properties:\n      CodeUri: .\n      Events:\n        Api:\n          Type: HttpApi\n          Properties:\n            ApiId: !Ref HttpApi\n            Method: GET\n            Path: /v1/again/{bouquetId}\n            Auth:\n              Authorizer: NONE\n\n",
            1,
        );
    let template = bouquet_template::Template::parse(&text).unwrap();
    let dir = std::env::temp_dir().join(format!("bins-{}", cloud.table));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(
        function_binary("get-bouquet"),
        dir.join("get-bouquet-again"),
    )
    .unwrap();
    let names = std::collections::HashMap::from([("MarketTable".to_owned(), cloud.table.clone())]);
    let binaries =
        devstack::lambda::Functions::from_template(&template, &names, &dir, &Default::default())
            .unwrap();
    // The existing routes in process (this test's clock); the new one runs its binary, as
    // every function does under `devstack up`.
    let in_process = cloud.in_process(cloud.app.clone());
    let functions = move |binary: &str| {
        in_process
            .invoker(binary)
            .or_else(|| binaries.invoker(binary))
    };
    // The edge in front, as under `devstack up`: its header is what the binary's
    // environment (the template's ORIGIN_VERIFY) asks for.
    let address = serve_behind_the_edge(&template, &names, &functions).await;
    let again = send(address, "GET", &format!("/v1/again/{bouquet}"), &[], None).await;
    assert_eq!(again.status, 200, "{:?}", again.body);
    assert_eq!(again.body["bouquetId"], bouquet.as_str());
    let same = send(
        address,
        "GET",
        &format!("/v1/bouquets/{bouquet}"),
        &[],
        None,
    )
    .await;
    assert_eq!(same.body, again.body);

    // A rebuilt binary is picked up while the stack runs: the running process is replaced.
    // (Unlink first, as cargo does: a running executable cannot be written over.)
    std::fs::remove_file(dir.join("get-bouquet-again")).unwrap();
    std::fs::copy(
        function_binary("list-bouquets"),
        dir.join("get-bouquet-again"),
    )
    .unwrap();
    let rebuilt = send(address, "GET", &format!("/v1/again/{bouquet}"), &[], None).await;
    assert_eq!(rebuilt.status, 200, "{:?}", rebuilt.body);
    assert!(
        rebuilt.body["items"].is_array() && rebuilt.body.get("bouquetId").is_none(),
        "the rebuilt binary (a listing) answers: {:?}",
        rebuilt.body
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// The real binary `name` under its own Runtime API, started, its stdout going to a new file.
async fn started_logging_to_a_file(
    name: &str,
    env: &[(String, String)],
) -> (FunctionProcess, std::path::PathBuf) {
    let log_path = std::env::temp_dir().join(format!("{name}-{}.log", ulid::Ulid::new()));
    let log = std::fs::File::create(&log_path).unwrap();
    let process = FunctionProcess::spawn_logging_to(&function_binary(name), name, env, log.into())
        .await
        .expect("spawn");
    assert!(process
        .init_duration(Duration::from_secs(20))
        .await
        .is_some());
    (process, log_path)
}

/// `LoggingConfig: LogFormat: JSON` (template Globals): the real binary under the Runtime API
/// writes one JSON object per line, and each line of a request names the invocation's
/// `requestId` and the request's correlation id.
#[tokio::test]
async fn a_functions_log_lines_are_json_with_request_and_correlation_ids() {
    let cloud = TestCloud::new().await;
    let env = cloud.function_env("get-bouquet");
    assert!(
        env.contains(&("AWS_LAMBDA_LOG_FORMAT".into(), "JSON".into())),
        "{env:?}"
    );
    let env: Vec<(String, String)> = env
        .into_iter()
        .filter(|(k, _)| k != "RUST_LOG")
        .chain([("RUST_LOG".to_owned(), "debug".to_owned())])
        .collect();
    let (process, log_path) = started_logging_to_a_file("get-bouquet", &env).await;
    for correlation in ["log-check-1", "log-check-2"] {
        let request = ApiRequest::fixture("get-bouquet")
            .bouquet_id("01JF0000000000000000000000")
            .header("x-correlation-id", correlation);
        let payload = invoked(&process, &request).await;
        assert_eq!(http_response(&payload).0.as_u16(), 404);
    }
    process.stop().await;
    let text = std::fs::read_to_string(&log_path).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    for correlation in ["log-check-1", "log-check-2"] {
        let of_request: Vec<&Value> = lines
            .iter()
            .filter(|l| l.to_string().contains(correlation))
            .collect();
        assert!(!of_request.is_empty(), "no line of {correlation}:\n{text}");
        for line in of_request {
            let spans = line["spans"].as_array().expect("spans");
            assert!(
                spans
                    .iter()
                    .any(|s| s["requestId"].as_str().is_some_and(|id| !id.is_empty())),
                "no requestId: {line}"
            );
            assert!(
                spans.iter().any(|s| s["correlation_id"] == correlation),
                "no correlation_id: {line}"
            );
        }
    }
    let _ = std::fs::remove_file(log_path);
}

/// Business metrics (issue 18): the real create-order binary under the Runtime API writes
/// CloudWatch EMF lines after each invocation: one reservation won, then one lost for the same
/// bouquet, each under its request's correlation id, with the template's Stage dimension.
#[tokio::test]
async fn a_functions_business_metrics_are_embedded_metric_format_lines_per_invocation() {
    let (cloud, vendor) = TestCloud::with_vendor("Metrics").await;
    let bouquet = cloud.bouquet(&vendor, "12.00").await;
    let env = cloud.function_env("create-order");
    let stage = env_var(&env, "STAGE").expect("the template gives functions STAGE");
    let (process, log_path) = started_logging_to_a_file("create-order", &env).await;
    for (customer, correlation, status) in [
        ("metrics-1", "metrics-won", 201),
        ("metrics-2", "metrics-lost", 409),
    ] {
        let request = ApiRequest::fixture("create-order")
            .customer(customer)
            .json(json!({ "bouquetIds": [bouquet] }))
            .no_idempotency_key()
            .header("x-correlation-id", correlation);
        let payload = invoked(&process, &request).await;
        assert_eq!(http_response(&payload).0.as_u16(), status, "{payload}");
    }
    process.stop().await;
    let text = std::fs::read_to_string(&log_path).unwrap();
    let _ = std::fs::remove_file(&log_path);
    let metrics: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| l.get("_aws").is_some())
        .collect();
    assert_eq!(metrics.len(), 2, "one EMF line per invocation:\n{text}");
    for (line, outcome, correlation) in [
        (&metrics[0], "won", "metrics-won"),
        (&metrics[1], "lost", "metrics-lost"),
    ] {
        assert_eq!(line["Reservations"], 1, "{line}");
        assert_eq!(line["Outcome"], outcome, "{line}");
        assert_eq!(line["correlationId"], correlation, "{line}");
        assert_eq!(line["Stage"], stage.as_str(), "{line}");
        let directive = &line["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(directive["Namespace"], "BouquetMarketplace");
        assert_eq!(directive["Metrics"][0]["Name"], "Reservations");
        let dimensions = directive["Dimensions"][0].as_array().unwrap();
        assert!(dimensions.contains(&json!("Stage")) && dimensions.contains(&json!("Outcome")));
    }
}

/// `Tracing: Active` (template Globals): under a sampled invocation, each AWS call the real
/// binary makes reaches the X-Ray daemon (`AWS_XRAY_DAEMON_ADDRESS`, here a UDP socket of the
/// test's) as a subsegment of that invocation, and the outbox item it writes carries the trace
/// on to EventBridge. An unsampled invocation sends nothing.
#[tokio::test]
async fn a_functions_aws_calls_are_x_ray_subsegments_of_a_sampled_invocation() {
    let (cloud, vendor) = TestCloud::with_vendor("Traced").await;
    let bouquets = [
        cloud.bouquet(&vendor, "12.00").await,
        cloud.bouquet(&vendor, "14.00").await,
    ];
    let daemon = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut env = cloud.function_env("create-order");
    env.push((
        "AWS_XRAY_DAEMON_ADDRESS".into(),
        daemon.local_addr().unwrap().to_string(),
    ));
    let (process, log_path) = started_logging_to_a_file("create-order", &env).await;
    let sampled = "Root=1-67500000-0123456789abcdef01234567;Parent=1111111111111111;Sampled=1";
    let unsampled = "Root=1-67500000-fedcba9876543210fedcba98;Parent=2222222222222222;Sampled=0";
    for (customer, bouquet, header) in [
        ("traced-1", &bouquets[0], sampled),
        ("traced-2", &bouquets[1], unsampled),
    ] {
        let request = ApiRequest::fixture("create-order")
            .customer(customer)
            .json(json!({ "bouquetIds": [bouquet] }))
            .no_idempotency_key();
        let payload = process
            .api
            .invoke_traced(request.event().clone(), Duration::from_secs(10), header)
            .await
            .expect("invoke");
        assert_eq!(http_response(&payload).0.as_u16(), 201, "{payload}");
    }
    process.stop().await;
    let _ = std::fs::remove_file(&log_path);

    // Datagrams sent before the process stopped are already queued on the socket.
    daemon.set_nonblocking(true).unwrap();
    let mut documents = Vec::new();
    let mut buffer = [0u8; 65_536];
    while let Ok(length) = daemon.recv(&mut buffer) {
        let text = std::str::from_utf8(&buffer[..length]).unwrap().to_owned();
        let (header, body) = text.split_once('\n').expect("a header line");
        assert_eq!(header, r#"{"format": "json", "version": 1}"#);
        documents.push(serde_json::from_str::<Value>(body).unwrap());
    }
    let mut calls: Vec<String> = documents
        .iter()
        .map(|d| format!("{} {}", d["name"], d["aws"]["operation"]))
        .collect();
    calls.sort();
    assert!(
        calls.contains(&r#""DynamoDB" "TransactWriteItems""#.to_owned()),
        "the reservation is a subsegment: {calls:?}"
    );
    let mut ids = std::collections::HashSet::new();
    for document in &documents {
        assert_eq!(
            document["trace_id"], "1-67500000-0123456789abcdef01234567",
            "{document}"
        );
        assert_eq!(document["parent_id"], "1111111111111111", "{document}");
        assert_eq!(document["type"], "subsegment");
        assert_eq!(document["namespace"], "aws");
        assert_eq!(document["http"]["response"]["status"], 200, "{document}");
        assert!(document["start_time"].as_f64() <= document["end_time"].as_f64());
        let id = document["id"].as_str().unwrap();
        assert!(
            id.len() == 16 && id.chars().all(|c| c.is_ascii_hexdigit()),
            "{id}"
        );
        assert!(ids.insert(id.to_owned()), "one id per subsegment: {id}");
    }

    let outbox = cloud
        .client
        .scan()
        .table_name(&cloud.table)
        .filter_expression("begins_with(pk, :outbox)")
        .expression_attribute_values(
            ":outbox",
            aws_sdk_dynamodb::types::AttributeValue::S("OUTBOX#".into()),
        )
        .send()
        .await
        .unwrap();
    let headers: Vec<&str> = outbox
        .items()
        .iter()
        .filter_map(|item| item.get("traceHeader")?.as_s().ok().map(String::as_str))
        .collect();
    assert!(headers.contains(&sampled), "{headers:?}");
    assert!(headers.contains(&unsampled), "{headers:?}");
}

/// The simulated gateway gives goods away, so it fails closed: a function told
/// `PAYMENT_PROVIDER=simulated` without `ALLOW_SIMULATED_PAYMENTS=true`, or told nothing, stops
/// at init, saying why; opted in, it starts (the template's Rules refuse the same at deploy).
#[tokio::test]
async fn the_simulated_gateway_is_refused_at_init_unless_opted_into() {
    let cloud = TestCloud::new().await;
    let run = |env: Vec<(String, String)>| {
        let output = std::process::Command::new(function_binary("create-order"))
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9")
            .env("AWS_LAMBDA_FUNCTION_NAME", "create-order")
            .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256")
            .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
            .envs(env)
            .output()
            .expect("create-order runs");
        (
            output.status.success(),
            String::from_utf8_lossy(&output.stderr).into_owned()
                + &String::from_utf8_lossy(&output.stdout),
        )
    };
    let env = cloud.function_env("create-order");
    let without = |names: &[&str]| -> Vec<(String, String)> {
        env.iter()
            .filter(|(k, _)| !names.contains(&k.as_str()))
            .cloned()
            .collect()
    };
    let (ok, said) = run(without(&["ALLOW_SIMULATED_PAYMENTS"]));
    assert!(
        !ok && said.contains("ALLOW_SIMULATED_PAYMENTS=true"),
        "{said}"
    );
    let (ok, said) = run(without(&["ALLOW_SIMULATED_PAYMENTS", "PAYMENT_PROVIDER"]));
    assert!(
        !ok && said.contains("PAYMENT_PROVIDER is not set"),
        "{said}"
    );
    // Opted in, init passes: the process goes on to poll a Runtime API that is not there.
    let (_, said) = run(env.clone());
    assert!(!said.contains("PAYMENT_PROVIDER"), "{said}");
}

/// Lambda's scaling in the dev stack: 20 requests at once to one function run in sandboxes of
/// their own; past the function's `ReservedConcurrentExecutions` the HTTP API answers what
/// API Gateway answers when Lambda throttles its integration (500, `Internal Server Error`).
#[tokio::test]
async fn concurrent_requests_scale_out_to_sandboxes_and_past_the_reservation_are_throttled() {
    let (cloud, vendor) = TestCloud::with_vendor("Bloom").await;
    // A public read the edge does not cache (one bouquet's is: the crowd would be one request).
    let path = format!("/v1/vendors/{vendor}/delivery-settings");
    let crowd = |address| {
        let path = path.clone();
        async move {
            futures::future::join_all((0..20).map(|_| send(address, "GET", &path, &[], None))).await
        }
    };
    let text =
        std::fs::read_to_string(system_tests::repository_root().join("template.yaml")).unwrap();

    let (address, functions) = binaries_behind_the_edge(&cloud, &text).await;
    let answers = crowd(address).await;
    assert!(
        answers.iter().all(|a| a.status == 200),
        "{:?}",
        answers.iter().map(|a| a.status).collect::<Vec<_>>()
    );
    let report = functions.get("get-delivery-settings").unwrap().report();
    assert_eq!(
        (report.invocations, report.throttles),
        (20, 0),
        "{report:?}"
    );
    assert!(
        report.peak_concurrency > 1 && report.sandboxes > 1 && report.cold_starts > 1,
        "more than one sandbox: {report:?}"
    );
    // A second round reuses the warm sandboxes.
    crowd(address).await;
    let again = functions.get("get-delivery-settings").unwrap().report();
    assert!(again.cold_starts < 40, "{again:?}");

    let reserved = text.replacen(
        "{Binary: get-delivery-settings}}\n    Properties:\n",
        "{Binary: get-delivery-settings}}\n    Properties:\n      ReservedConcurrentExecutions: 2\n",
        1,
    );
    assert_ne!(reserved, text, "the function's properties were found");
    let (address, functions) = binaries_behind_the_edge(&cloud, &reserved).await;
    let answers = crowd(address).await;
    let served = answers.iter().filter(|a| a.status == 200).count();
    let throttled: Vec<_> = answers.iter().filter(|a| a.status == 500).collect();
    assert_eq!(served + throttled.len(), 20, "only 200 or 500");
    assert!(served >= 1 && !throttled.is_empty(), "{served} served");
    for answer in &throttled {
        assert_eq!(answer.body, json!({ "message": "Internal Server Error" }));
    }
    let report = functions.get("get-delivery-settings").unwrap().report();
    assert_eq!(report.throttles as usize, throttled.len(), "{report:?}");
    assert!(
        report.peak_concurrency <= 2 && report.sandboxes <= 2,
        "{report:?}"
    );
}

/// Every route of `template_text` served by its built binary behind the template's edge, as
/// `devstack up` serves them, on this test's table.
async fn binaries_behind_the_edge(
    cloud: &TestCloud,
    template_text: &str,
) -> (std::net::SocketAddr, devstack::lambda::Functions) {
    let template = bouquet_template::Template::parse(template_text).unwrap();
    let names = std::collections::HashMap::from([("MarketTable".to_owned(), cloud.table.clone())]);
    let binaries = function_binary("get-bouquet")
        .parent()
        .unwrap()
        .to_path_buf();
    let local = devstack::lambda::LocalSettings {
        jwt_secret: system_tests::JWT_SECRET.into(),
        ..Default::default()
    };
    let functions =
        devstack::lambda::Functions::from_template(&template, &names, &binaries, &local).unwrap();
    (
        serve_behind_the_edge(&template, &names, &functions).await,
        functions,
    )
}

/// `template`'s HTTP API behind its edge's limits, as `devstack up` serves it, each route's
/// function from `functions`, on a port of its own: its address.
async fn serve_behind_the_edge(
    template: &bouquet_template::Template,
    names: &std::collections::HashMap<String, String>,
    functions: &dyn devstack::lambda::Resolver,
) -> std::net::SocketAddr {
    let limits = devstack::edge_limits::EdgeLimits::from_template(template, &|v| {
        devstack::provision::resolve(template, v, names)
    })
    .unwrap();
    let api = std::sync::Arc::new(
        devstack::server::LocalApi::from_template(
            template,
            functions,
            std::sync::Arc::new(devstack::jwt::verifier(system_tests::JWT_SECRET, None)),
        )
        .unwrap()
        .with_edge_limits(limits),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(api.clone().serve_on(listener));
    address
}

//! Order emails through the function's handler: SES (the emulator's, which, as SES does,
//! sends only from a verified identity) and the rule's failure destination.

use std::sync::Arc;

use serde_json::{json, Value};

use bouquet_app::mail::MemoryMailer;
use system_tests::{
    by_vendor, emulator_sdk_config, fixture, verified_email, PathParams, TestCloud,
};

async fn shop(cloud: &TestCloud) -> String {
    let vendor = cloud.vendor("Fleur").await;
    let saved = cloud
        .send(fixture("put-delivery-settings")
                .own_shop(&vendor)
                .json(json!({
                    "countries": ["FR"], "postcodePrefixes": [], "horizonDays": 14,
                    "days": ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"],
                    "sameDayCutoff": "11:00", "timeZone": "Europe/Paris",
                    "contactEmail": verified_email(&format!("user-of-{vendor}")),
                })),
        )
        .await;
    assert_eq!(saved.status, 200, "{}", saved.body);
    vendor
}

/// The bus event of the outbox's `name` event of `order`.
async fn bus_event(cloud: &TestCloud, name: &str, order: &str) -> Value {
    let item = cloud
        .items_of("event")
        .await
        .into_iter()
        .find(|i| {
            i["eventName"].as_s().unwrap() == name && i["detail"].as_s().unwrap().contains(order)
        })
        .unwrap_or_else(|| panic!("no {name} of {order}"));
    let detail: Value = serde_json::from_str(item["detail"].as_s().unwrap()).unwrap();
    json!({ "source": "bouquet.marketplace", "detail-type": name, "detail": detail })
}

#[tokio::test]
async fn a_paid_order_is_mailed_to_the_customer_and_the_shop_through_ses_once() {
    let cloud = TestCloud::new().await;
    cloud.verify_sender().await;
    let vendor = shop(&cloud).await;
    let order = cloud.paid_order(&vendor, "ana").await;
    let paid = bus_event(&cloud, "OrderPaid", &order).await;
    let first = cloud
        .run_event_function("send-order-emails", paid.clone())
        .await;
    assert_eq!(
        (first["sent"].as_u64(), first["duplicates"].as_u64()),
        (Some(2), Some(0)),
        "{first}"
    );
    let again = cloud.run_event_function("send-order-emails", paid).await;
    assert_eq!(
        (again["sent"].as_u64(), again["duplicates"].as_u64()),
        (Some(0), Some(2)),
        "{again}"
    );
    let accepted = cloud
        .send(by_vendor("accept-order", &vendor).order_id(&order))
        .await;
    assert_eq!(accepted.status, 200);
    let step = cloud
        .run_event_function(
            "send-order-emails",
            bus_event(&cloud, "OrderAccepted", &order).await,
        )
        .await;
    assert_eq!(step["sent"], 1, "{step}");

    let mail = cloud.sent_mail().await;
    let to: Vec<Value> = mail
        .iter()
        .map(|m| m["Destination"]["ToAddresses"][0].clone())
        .collect();
    assert_eq!(
        to,
        [
            json!("ana@example.com"),
            json!(verified_email(&format!("user-of-{vendor}"))),
            json!("ana@example.com")
        ],
        "{mail:?}"
    );
    assert!(
        mail[0]["Subject"].as_str().unwrap().contains("is paid"),
        "{mail:?}"
    );
    assert!(mail[1]["Body"]["html_part"]
        .as_str()
        .unwrap()
        .contains("Camille Martin"));
    assert!(mail[2]["Subject"].as_str().unwrap().contains("accepted"));
}

#[tokio::test]
async fn an_unverified_sender_is_refused_by_ses_and_nothing_is_recorded_as_sent() {
    let cloud = TestCloud::new().await;
    let vendor = shop(&cloud).await;
    let order = cloud.paid_order(&vendor, "ana").await;
    let paid = bus_event(&cloud, "OrderPaid", &order).await;
    let functions = cloud.in_process(cloud.app.clone());
    let refused =
        system_tests::in_process::run_event_function("send-order-emails", &functions, paid.clone())
            .await;
    let error = refused.expect_err("SES refuses an unverified sender");
    assert!(error.to_string().contains("refused"), "{error}");
    assert!(cloud.sent_mail().await.is_empty());
    // Verified (as the operator would), the retry sends both.
    cloud.verify_sender().await;
    assert_eq!(
        cloud.run_event_function("send-order-emails", paid).await["sent"],
        2
    );
}

/// A message the provider refuses fails its event, which Lambda retries and then parks whole
/// in the template's `EmailFailureQueue`; another order's email goes out meanwhile.
#[tokio::test]
async fn a_refused_address_lands_its_event_whole_in_the_failure_queue_and_others_still_go() {
    let mut cloud = TestCloud::new().await;
    let mailer = Arc::new(MemoryMailer::refusing(&["bounce@example.com"]));
    cloud.mailer = mailer.clone();
    let outbox = crate::outbox::outbox(&cloud, None).await;
    let sdk = emulator_sdk_config().await;
    let vendor = shop(&cloud).await;
    let bounced = cloud.paid_order(&vendor, "bounce").await;
    let fine = cloud.paid_order(&vendor, "cy").await;
    let functions = cloud.in_process(cloud.app.clone());
    let (target, names) = crate::outbox::rule_target(
        &outbox,
        &functions,
        "send-order-emails",
        "EmailFailureQueue",
    )
    .await;
    assert_eq!(target.on_failure.max_attempts, 3, "Lambda's two retries");
    let events = aws_sdk_eventbridge::Client::new(&sdk);
    for order in [&bounced, &fine] {
        let event = bus_event(&cloud, "OrderPaid", order).await;
        crate::outbox::put_on_bus(&events, &outbox, "OrderPaid", &event["detail"]).await;
    }
    let (mut parked, mut delivered) = (0, 0);
    for _ in 0..40 {
        let report = target.poll(2).await.unwrap();
        parked += report.sent_to_on_failure;
        delivered += report.delivered;
        if parked == 1 && delivered >= 1 {
            break;
        }
    }
    assert_eq!((parked, delivered), (1, 1), "one parked, one delivered");
    let sent: Vec<String> = mailer.sent().into_iter().map(|e| e.to).collect();
    assert!(
        sent.contains(&"cy@example.com".to_owned()),
        "the other order's email went: {sent:?}"
    );
    assert!(!sent.contains(&"bounce@example.com".to_owned()));
    let records = crate::outbox::drain(&outbox.sqs, &names["EmailFailureQueue"]).await;
    assert_eq!(records.len(), 1);
    assert_eq!(
        records[0]["requestPayload"]["detail"]["data"]["orderId"],
        bounced.as_str(),
        "the event, whole"
    );
    assert_eq!(records[0]["requestContext"]["approximateInvokeCount"], 3);
    assert!(
        !records[0].to_string().contains("Camille"),
        "no personal data parked"
    );
}

//! A smaller property run of the lifecycle against the emulator: random sequences of the use
//! cases through their handlers (reserve, pay with approving, declining and failing cards,
//! cancel, fulfil, the expiry sweep, the clock moving) on a fresh table per case. After every
//! step the table itself must show no bouquet sold twice, a sold bouquet's order paid, and no
//! bouquet held by an order that no longer holds bouquets.

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;
use proptest::prelude::*;
use serde_json::json;

use system_tests::{ApiRequest, PathParams, TestCloud};

#[derive(Clone, Debug)]
enum Step {
    Reserve {
        customer: usize,
        bouquets: Vec<usize>,
    },
    Pay {
        order: usize,
        token: &'static str,
    },
    Cancel {
        order: usize,
    },
    Fulfil {
        order: usize,
    },
    Advance {
        minutes: u64,
    },
    Sweep,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (0usize..2, prop::collection::vec(0usize..3, 1..3))
            .prop_map(|(customer, bouquets)| Step::Reserve { customer, bouquets }),
        3 => (0usize..4, prop::sample::select(vec!["tok_visa", "tok_decline", "tok_unavailable"]))
            .prop_map(|(order, token)| Step::Pay { order, token }),
        1 => (0usize..4).prop_map(|order| Step::Cancel { order }),
        1 => (0usize..4).prop_map(|order| Step::Fulfil { order }),
        2 => (0u64..20).prop_map(|minutes| Step::Advance { minutes }),
        1 => Just(Step::Sweep),
    ]
}

fn s(item: &HashMap<String, AttributeValue>, name: &str) -> Option<String> {
    item.get(name).and_then(|v| v.as_s().ok()).cloned()
}

struct Run {
    cloud: TestCloud,
    vendor: String,
    bouquets: Vec<String>,
    /// (order id, customer)
    orders: Vec<(String, String)>,
    answers: Vec<u16>,
}

impl Run {
    async fn start() -> Self {
        let (cloud, vendor) = TestCloud::with_vendor("Bloom").await;
        let mut bouquets = Vec::new();
        for _ in 0..3 {
            bouquets.push(cloud.bouquet(&vendor, "10.00").await);
        }
        Self {
            cloud,
            vendor,
            bouquets,
            orders: Vec::new(),
            answers: Vec::new(),
        }
    }

    async fn apply(&mut self, step: &Step) {
        let order = |i: &usize| self.orders.get(i % self.orders.len().max(1)).cloned();
        let status = match step {
            Step::Reserve { customer, bouquets } => {
                let mut ids: Vec<&str> = bouquets
                    .iter()
                    .map(|i| self.bouquets[*i].as_str())
                    .collect();
                ids.sort_unstable();
                ids.dedup();
                let customer = format!("customer-{customer}");
                let answer = self.cloud.reserve(&customer, &ids).await;
                if answer.status == 201 {
                    let id = answer.body["orderId"].as_str().expect("orderId").to_owned();
                    self.orders.push((id, customer));
                }
                answer.status
            }
            Step::Pay { order: i, token } => match order(i) {
                Some((id, customer)) => self.cloud.pay(&customer, &id, token, None).await.status,
                None => return,
            },
            Step::Cancel { order: i } => match order(i) {
                Some((id, customer)) => {
                    let request = ApiRequest::fixture("cancel-order")
                        .customer(&customer)
                        .order_id(&id)
                        .no_idempotency_key();
                    self.cloud.call("cancel-order", request).await.status
                }
                None => return,
            },
            Step::Fulfil { order: i } => match order(i) {
                Some((id, _)) => {
                    let request = ApiRequest::fixture("fulfil-order")
                        .vendor(&self.vendor)
                        .order_id(&id)
                        .no_idempotency_key();
                    self.cloud.call("fulfil-order", request).await.status
                }
                None => return,
            },
            Step::Advance { minutes } => {
                self.cloud.clock.advance(Duration::from_secs(minutes * 60));
                return;
            }
            Step::Sweep => {
                let report = self.cloud.run_scheduled("expire-reservations").await;
                assert_eq!(report["failed"], json!(0), "{report}");
                return;
            }
        };
        self.answers.push(status);
    }

    /// The invariants, read from the table.
    async fn check(&self, step: &Step) -> Result<(), TestCaseError> {
        let orders = self.cloud.items_of("order").await;
        let order_status: HashMap<String, String> = orders
            .iter()
            .filter_map(|o| Some((s(o, "orderId")?, s(o, "status")?)))
            .collect();
        for bouquet in self.cloud.items_of("bouquet").await {
            let id = s(&bouquet, "bouquetId").unwrap_or_default();
            let buyers: Vec<&String> = orders
                .iter()
                .filter(|o| matches!(s(o, "status").as_deref(), Some("paid" | "fulfilled")))
                .filter(|o| {
                    o.get("lines")
                        .and_then(|l| l.as_l().ok())
                        .is_some_and(|lines| {
                            lines.iter().any(|line| {
                                line.as_m()
                                    .ok()
                                    .and_then(|m| m.get("bouquetId"))
                                    .and_then(|v| v.as_s().ok())
                                    == Some(&id)
                            })
                        })
                })
                .filter_map(|o| o.get("orderId").and_then(|v| v.as_s().ok()))
                .collect();
            prop_assert!(buyers.len() <= 1, "after {step:?}: {id} sold to {buyers:?}");
            let holder = s(&bouquet, "orderId");
            match s(&bouquet, "status").as_deref() {
                Some("sold") => prop_assert_eq!(
                    buyers.first().map(|b| b.as_str()),
                    holder.as_deref(),
                    "after {:?}: {} sold to an order that did not pay",
                    step,
                    id
                ),
                Some("reserved") => {
                    let status = holder
                        .as_ref()
                        .and_then(|h| order_status.get(h))
                        .cloned()
                        .unwrap_or_default();
                    prop_assert!(
                        status == "reserved" || status == "payment_pending",
                        "after {:?}: {} held by a {} order",
                        step,
                        id,
                        status
                    );
                    prop_assert!(buyers.is_empty(), "after {step:?}: {id} held but paid for");
                }
                other => prop_assert!(
                    buyers.is_empty(),
                    "after {:?}: {} is {:?} but was paid for",
                    step,
                    id,
                    other
                ),
            }
        }
        Ok(())
    }
}

proptest! {
    // Each case makes its own table and runs up to 14 use cases on the emulator.
    #![proptest_config(ProptestConfig { cases: 6, max_shrink_iters: 20, ..ProptestConfig::default() })]

    #[test]
    fn the_use_cases_keep_the_invariants_on_the_emulator(steps in prop::collection::vec(step(), 4..14)) {
        let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let mut run = Run::start().await;
            // Every case starts with a sale, so the sold path is always checked too.
            let sale = [
                Step::Reserve { customer: 0, bouquets: vec![0] },
                Step::Pay { order: 0, token: "tok_visa" },
            ];
            for step in sale.iter().chain(&steps) {
                run.apply(step).await;
                run.check(step).await?;
            }
            prop_assert_eq!(&run.answers[..2], &[201, 200], "the opening sale");
            prop_assert!(run.answers.iter().all(|status| *status < 500 || *status == 503), "a 5xx other than a 503: {:?}", run.answers);
            Ok(())
        })?;
    }
}

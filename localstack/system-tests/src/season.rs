//! A season of trading as history (issue 50): shops, the bouquets they sell and sold, orders in
//! every state a season leaves, reviews and the ratings they make, vases and their readings.
//! Each is decided by the domain itself (an order is reserved, given its details, paid,
//! accepted, dispatched and delivered by `Order`'s own steps), from a seed, then written
//! straight into the table by [`bouquet_app::store::Store::import`] (`season` binary): a table
//! the size of a season in a minute, so the local cloud's figures can be checked against it.
//!
//! What it leaves out, on purpose: events (history, published long ago), the states an order
//! leaves within minutes (`reserved`, `payment_pending`: the sweeper would end them during the
//! load, mailing customers no directory knows), idempotency records and analytics counters.
//! The auditor sets the season's shops aside ([`Season::manifest`]).

use std::collections::HashMap;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

use bouquet_app::domain::bouquet::{BouquetStatus, NewBouquet};
use bouquet_app::domain::commission::CommissionRate;
use bouquet_app::domain::delivery::{Address, Delivery};
use bouquet_app::domain::identity::{Identity, Role};
use bouquet_app::domain::order::FulfilmentStep;
use bouquet_app::domain::pricing::{DeliveryFees, Pricing, VatSettings};
use bouquet_app::domain::review::{Rating, RatingChange, Review, ReviewDraft};
use bouquet_app::domain::vase::{Reading, Vase, VaseBouquet};
use bouquet_app::domain::{
    Bouquet, Currency, CustomerId, Money, Order, OrderStatus, Timestamp, VaseId, Vendor, VendorId,
};
use bouquet_app::store::Imported;
use bouquet_app::DEFAULT_COMMISSION_BASIS_POINTS;

/// How big a season is.
#[derive(Clone, Copy, Debug)]
pub struct SeasonSize {
    pub shops: usize,
    /// On sale at the end of the season (the catalogue).
    pub bouquets_on_sale: usize,
    pub orders: usize,
    /// At most one per delivered order.
    pub reviews: usize,
    pub vases: usize,
    /// Per vase, one an hour up to now.
    pub readings_per_vase: usize,
}

impl SeasonSize {
    /// Issue 50's season: 200 shops, 5,000 bouquets, 50,000 orders, 10,000 reviews, 2,000
    /// vases with two days of hourly readings.
    pub const ISSUE_50: SeasonSize = SeasonSize {
        shops: 200,
        bouquets_on_sale: 5_000,
        orders: 50_000,
        reviews: 10_000,
        vases: 2_000,
        readings_per_vase: 48,
    };
}

/// A season, decided.
pub struct Season {
    pub vendors: Vec<Vendor>,
    /// On sale and sold (or withdrawn after an order that did not go through).
    pub bouquets: Vec<Bouquet>,
    pub orders: Vec<Order>,
    pub reviews: Vec<Review>,
    /// Each shop's rating at its version (its count of reviews), for shops with reviews.
    pub ratings: HashMap<VendorId, Rating>,
    pub vases: Vec<Vase>,
    pub readings: Vec<(VaseId, Reading)>,
}

/// How long the season ran before `now`.
const SEASON: Duration = Duration::from_secs(90 * 24 * 3600);
const HOUR: Duration = Duration::from_secs(3600);
/// Where an order's life stands at the season's end, in a hundred orders (the rest of the
/// 100 are out for delivery).
const FULFILLED: u32 = 72;
const CANCELLED: u32 = 10;
const EXPIRED: u32 = 8;
const REJECTED: u32 = 3;
const PAID: u32 = 3;
const ACCEPTED: u32 = 2;

impl Season {
    pub fn generate(size: SeasonSize, seed: u64, now: Timestamp) -> Season {
        let mut rng = StdRng::seed_from_u64(seed);
        let euro = Currency::parse("EUR").expect("EUR is accepted");
        let vendors: Vec<Vendor> = (0..size.shops.max(1))
            .map(|n| {
                Vendor::onboard(&format!("Season shop {n}"), now.minus(SEASON))
                    .expect("a valid shop name")
            })
            .collect();
        let shop = |rng: &mut StdRng| vendors[rng.random_range(0..vendors.len())].vendor_id;
        let bouquet = |rng: &mut StdRng, vendor_id: VendorId, listed_at: Timestamp| {
            let name = format!("Season bouquet {}", rng.random_range(0..10_000));
            let price = Money::from_minor(rng.random_range(1_500..12_000), euro);
            let new = NewBouquet {
                name,
                description: "Seasonal flowers, hand-tied.".into(),
                price,
                vase_id: None,
                markdown_opt_out: false,
                occasions: Vec::new(),
            };
            Bouquet::list(vendor_id, new, listed_at)
        };

        let mut bouquets = Vec::new();
        let mut orders = Vec::new();
        for n in 0..size.orders {
            let vendor_id = shop(&mut rng);
            let customer = CustomerId::parse(&format!("season-customer-{}", n % 20_000))
                .expect("a customer id");
            let outcome = rng.random_range(0..100);
            // Orders that ended were placed over the season; those still to deliver (paid,
            // accepted) in the last ten minutes.
            let at = if outcome < FULFILLED + CANCELLED + EXPIRED + REJECTED {
                now.minus(SEASON).plus(Duration::from_secs(
                    rng.random_range(0..SEASON.as_secs() - 86_400),
                ))
            } else {
                now.minus(Duration::from_secs(rng.random_range(60..600)))
            };
            let mut sold = bouquet(&mut rng, vendor_id, at.minus(HOUR));
            let mut order = Order::reserve(customer, std::slice::from_ref(&sold), HOUR / 4, at)
                .expect("an available bouquet");
            let (order, status) = live_through(&mut order, outcome, at, now, euro);
            sold.status = match status {
                OrderStatus::Cancelled | OrderStatus::Expired | OrderStatus::Rejected => {
                    BouquetStatus::Withdrawn
                }
                _ => BouquetStatus::Sold {
                    order_id: order.order_id,
                },
            };
            sold.version += 1;
            bouquets.push(sold);
            orders.push(order);
        }
        number_invoices(&mut orders);

        let mut reviews = Vec::new();
        let mut ratings: HashMap<VendorId, Rating> = HashMap::new();
        for order in orders
            .iter()
            .filter(|o| o.status == OrderStatus::Fulfilled)
            .take(size.reviews)
        {
            let caller = Identity {
                subject: order.customer_id.clone(),
                role: Role::Customer,
                vendor_id: None,
                email: None,
            };
            // Mostly content, as a florist's reviews are.
            let stars = [1, 2, 3, 4, 4, 5, 5, 5][rng.random_range(0..8)];
            let draft = ReviewDraft {
                stars: Some(stars),
                text: Some("Lovely flowers, delivered on time.".into()),
            };
            let written_at = order.fulfilled_at.expect("delivered").plus(HOUR);
            let review =
                Review::write(order, &caller, &draft, written_at).expect("a delivered order");
            ratings
                .entry(order.vendor_id)
                .or_default()
                .apply(RatingChange::written(review.stars));
            reviews.push(review);
        }

        let mut vases = Vec::new();
        let mut readings = Vec::new();
        for n in 0..size.bouquets_on_sale {
            let vendor_id = vendors[n % vendors.len()].vendor_id;
            let listed_at = now.minus(Duration::from_secs(rng.random_range(3_600..172_800)));
            let mut on_sale = bouquet(&mut rng, vendor_id, listed_at);
            if vases.len() < size.vases {
                let mut vase = Vase::register(VaseId::generate(), vendor_id, listed_at);
                let mut latest = None;
                for hour in 0..size.readings_per_vase {
                    let reading = Reading {
                        sent_at: now.minus(HOUR * (hour as u32 + 1)),
                        water_level_pct: rng.random_range(20.0..95.0),
                        temperature_c: rng.random_range(16.0..26.0),
                        humidity_pct: rng.random_range(35.0..70.0),
                        light_lux: rng.random_range(100.0..900.0),
                    };
                    latest.get_or_insert(reading);
                    readings.push((vase.vase_id, reading));
                }
                let score = latest.map(|reading| {
                    bouquet_app::domain::freshness::score(&reading, listed_at, reading.sent_at)
                });
                vase.latest = latest;
                vase.last_heartbeat_at = latest.map(|r| r.sent_at);
                vase.bouquet = Some(VaseBouquet {
                    bouquet_id: on_sale.bouquet_id,
                    listed_at,
                    freshness: score,
                });
                on_sale.vase_id = Some(vase.vase_id);
                on_sale.freshness = score;
                vases.push(vase);
            }
            bouquets.push(on_sale);
        }
        Season {
            vendors,
            bouquets,
            orders,
            reviews,
            ratings,
            vases,
            readings,
        }
    }

    /// Everything, as the store imports it.
    pub fn history(&self) -> Vec<Imported<'_>> {
        let rating_of = |vendor_id: &VendorId| {
            self.ratings
                .get(vendor_id)
                .map(|rating| (*rating, rating.count() as u64))
        };
        let mut history: Vec<Imported<'_>> = Vec::new();
        history.extend(self.vendors.iter().map(Imported::Vendor));
        history.extend(
            self.ratings
                .iter()
                .map(|(vendor, rating)| Imported::Rating(*vendor, *rating, rating.count() as u64)),
        );
        history.extend(
            self.bouquets
                .iter()
                .map(|b| Imported::Bouquet(b, rating_of(&b.vendor_id))),
        );
        history.extend(self.orders.iter().map(Imported::Order));
        history.extend(self.reviews.iter().map(Imported::Review));
        history.extend(self.vases.iter().map(Imported::Vase));
        history.extend(
            self.readings
                .iter()
                .map(|(vase, reading)| Imported::Reading(*vase, reading, reading.sent_at)),
        );
        history
    }

    /// What the auditor sets aside: the season's shops and vases (their orders, bouquets,
    /// reviews and readings name them).
    pub fn manifest(&self) -> Value {
        json!({
            "vendorIds": self.vendors.iter().map(|v| v.vendor_id.to_string()).collect::<Vec<_>>(),
            "vaseIds": self.vases.iter().map(|v| v.vase_id.to_string()).collect::<Vec<_>>(),
        })
    }

    /// How many orders end in each state.
    pub fn orders_by_state(&self) -> HashMap<OrderStatus, usize> {
        let mut by_state = HashMap::new();
        for order in &self.orders {
            *by_state.entry(order.status).or_default() += 1;
        }
        by_state
    }
}

/// Takes a reserved order through the domain's steps to the `outcome`'s state (see the
/// shares above); returns it and its status.
fn live_through(
    order: &mut Order,
    outcome: u32,
    at: Timestamp,
    now: Timestamp,
    euro: Currency,
) -> (Order, OrderStatus) {
    let step = |minutes: u64| at.plus(Duration::from_secs(minutes * 60));
    let ended = |o: &mut Order| -> (Order, OrderStatus) { (o.clone(), o.status) };
    let mut bands = [FULFILLED, CANCELLED, EXPIRED, REJECTED, PAID, ACCEPTED]
        .into_iter()
        .scan(0, |sum, share| {
            *sum += share;
            Some(*sum)
        });
    let band = bands.position(|upto| outcome < upto).unwrap_or(6);
    match band {
        1 => {
            order.cancel(step(2)).expect("a held order cancels");
            return ended(order);
        }
        2 => {
            order.expire(step(20)).expect("a lapsed hold expires");
            return ended(order);
        }
        _ => {}
    }
    let delivery = Delivery {
        recipient_name: "Season Recipient".into(),
        recipient_phone: "+33612345678".into(),
        address: Address {
            street: "1 rue des Fleurs".into(),
            postcode: "75011".into(),
            city: "Paris".into(),
            country: "FR".into(),
        },
        date: date_of(step(24 * 60)),
        slot: None,
        card_message: None,
        contact_email: None,
    };
    let pricing = Pricing::new(
        &DeliveryFees::default(),
        &VatSettings::default(),
        "75011",
        false,
        euro,
    );
    order
        .set_delivery(delivery, pricing, step(3))
        .expect("a held order takes its details");
    order.begin_payment(step(4)).expect("a payment begins");
    let commission =
        CommissionRate::from_basis_points(DEFAULT_COMMISSION_BASIS_POINTS).expect("in range");
    order.settle(commission, None);
    order
        .payment_succeeded(format!("ch_season_{}", order.order_id), step(4))
        .expect("paid");
    let steps: &[FulfilmentStep] = match band {
        0 => &[
            FulfilmentStep::Accept,
            FulfilmentStep::Dispatch,
            FulfilmentStep::Deliver,
        ],
        3 => &[],
        4 => &[],
        5 => &[FulfilmentStep::Accept],
        _ => &[FulfilmentStep::Accept, FulfilmentStep::Dispatch],
    };
    for (n, next) in steps.iter().enumerate() {
        order
            .step(*next, step(60 * (n as u64 + 1)))
            .expect("the shop's next step");
    }
    if band == 3 {
        order
            .reject("No peonies left this week", true, step(30))
            .expect("a paid order is rejected");
        order.refund_confirmed(step(31)).expect("refunded");
    }
    // Past its retention an ended order keeps no personal field, as the sweeper leaves it.
    if order.status.is_final() && order.due_at().is_some_and(|due| due <= now) {
        order.redact(now).expect("an ended order is redacted");
    }
    ended(order)
}

/// `YYYY-MM-DD` in UTC.
fn date_of(at: Timestamp) -> String {
    at.to_rfc3339()[..10].to_owned()
}

/// Each shop's paid orders numbered 1, 2, ... in the order they were paid, as the payment
/// step numbers them.
fn number_invoices(orders: &mut [Order]) {
    let mut paid: Vec<&mut Order> = orders
        .iter_mut()
        .filter(|o| o.charge_id.is_some())
        .collect();
    paid.sort_by_key(|o| (o.vendor_id, o.created_at));
    let mut last: HashMap<VendorId, u64> = HashMap::new();
    for order in paid {
        let number = last.entry(order.vendor_id).or_default();
        *number += 1;
        order.invoice_number = Some(*number);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: Timestamp = Timestamp::from_millis(1_796_000_000_000);

    fn small() -> Season {
        let size = SeasonSize {
            shops: 5,
            bouquets_on_sale: 40,
            orders: 2_000,
            reviews: 300,
            vases: 10,
            readings_per_vase: 3,
        };
        Season::generate(size, 7, NOW)
    }

    #[test]
    fn a_season_has_orders_in_every_state_but_those_of_minutes() {
        let season = small();
        let by_state = season.orders_by_state();
        for state in OrderStatus::ALL {
            let want = !matches!(state, OrderStatus::PaymentPending | OrderStatus::Reserved);
            assert_eq!(
                by_state.contains_key(&state),
                want,
                "{state:?}: {by_state:?}"
            );
        }
        assert_eq!(season.orders.len(), 2_000);
        assert_eq!(season.vases.len(), 10);
        assert_eq!(season.readings.len(), 30);
    }

    #[test]
    fn every_bouquet_of_an_order_stands_as_the_order_left_it() {
        let (season, now) = (small(), NOW);
        let bouquets: HashMap<_, _> = season.bouquets.iter().map(|b| (b.bouquet_id, b)).collect();
        for order in &season.orders {
            let bouquet = bouquets[&order.lines[0].bouquet_id];
            let want = match order.status {
                OrderStatus::Cancelled | OrderStatus::Expired | OrderStatus::Rejected => {
                    bouquet.status == BouquetStatus::Withdrawn
                }
                _ => {
                    bouquet.status
                        == BouquetStatus::Sold {
                            order_id: order.order_id,
                        }
                }
            };
            assert!(want, "{:?} with {:?}", order.status, bouquet.status);
            // Nothing of the season is due for the sweeper yet (its redactions are done or
            // to come).
            assert!(order.due_at().is_none_or(|due| due > now), "{order:?}");
        }
        let on_sale = season
            .bouquets
            .iter()
            .filter(|b| b.status == BouquetStatus::Available)
            .count();
        assert_eq!(on_sale, 40);
    }

    #[test]
    fn each_rating_equals_its_shops_reviews_and_each_review_is_of_a_delivered_order() {
        let season = small();
        assert_eq!(season.reviews.len(), 300);
        let mut counted: HashMap<VendorId, [i64; 5]> = HashMap::new();
        for review in &season.reviews {
            counted.entry(review.vendor_id).or_default()[usize::from(review.stars) - 1] += 1;
        }
        for (vendor, rating) in &season.ratings {
            assert_eq!(rating.by_stars, counted[vendor]);
        }
        let delivered: std::collections::HashSet<_> = season
            .orders
            .iter()
            .filter(|o| o.status == OrderStatus::Fulfilled)
            .map(|o| o.order_id)
            .collect();
        assert!(season
            .reviews
            .iter()
            .all(|r| delivered.contains(&r.order_id)));
    }

    #[test]
    fn the_same_seed_decides_the_same_season() {
        let (a, b) = (small(), small());
        let states = |s: &Season| s.orders.iter().map(|o| o.status).collect::<Vec<_>>();
        assert_eq!(states(&a), states(&b));
        assert_eq!(a.ratings.len(), b.ratings.len());
    }
}

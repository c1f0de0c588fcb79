//! Property: no sequence of commands (reserve, claim a payment, decline, charge, interrupt,
//! cancel, expire, fulfil, at arbitrary clock times) sells a bouquet twice or leaves a bouquet
//! held by a finished order. Each command runs the project's own decisions (`Order::reserve`
//! and `Bouquet::reserve` for a reservation, `bouquet_domain::checkout` for every other
//! transition, as the checkout use cases call them) and commits a transition the way the
//! store's transaction does: the order and every bouquet effect, each under its condition,
//! together or not at all.

use std::time::Duration;

use bouquet_domain::bouquet::NewBouquet;
use bouquet_domain::checkout::{self, Transition};
use bouquet_domain::commission::CommissionRate;
use bouquet_domain::order::DEFAULT_HOLD;
use bouquet_domain::{
    Bouquet, BouquetStatus, Currency, CustomerId, Money, Order, Timestamp, VendorId,
};
use proptest::prelude::*;

/// 13.33 %: on orders of 10.00 bouquets (13.33, 26.66 and 39.99 exactly) each fee needs the
/// rounding rule.
fn commission() -> CommissionRate {
    CommissionRate::from_basis_points(1_333).unwrap()
}

#[derive(Clone, Debug)]
enum Command {
    Reserve(Vec<usize>),
    BeginPayment(usize),
    Decline(usize),
    Charged(usize),
    Interrupt(usize),
    Cancel(usize),
    Expire(usize),
    Fulfil(usize),
    Advance(u64),
}

fn command() -> impl Strategy<Value = Command> {
    prop_oneof![
        prop::collection::vec(0usize..6, 1..4).prop_map(Command::Reserve),
        (0usize..8).prop_map(Command::BeginPayment),
        (0usize..8).prop_map(Command::Decline),
        (0usize..8).prop_map(Command::Charged),
        (0usize..8).prop_map(Command::Interrupt),
        (0usize..8).prop_map(Command::Cancel),
        (0usize..8).prop_map(Command::Expire),
        (0usize..8).prop_map(Command::Fulfil),
        (0u64..1_200).prop_map(Command::Advance),
    ]
}

struct World {
    now: Timestamp,
    bouquets: Vec<Bouquet>,
    orders: Vec<Order>,
}

impl World {
    fn new() -> Self {
        let now = Timestamp::from_millis(1_796_228_211_000);
        let vendor = VendorId::generate();
        let price = Money::from_minor(1000, Currency::parse("EUR").unwrap());
        let bouquets = (0..6)
            .map(|_| {
                Bouquet::list(
                    vendor,
                    NewBouquet {
                        name: "B".into(),
                        description: String::new(),
                        price,
                        vase_id: None,
                        markdown_opt_out: false,
                        occasions: Vec::new(),
                    },
                    now,
                )
            })
            .collect();
        Self {
            now,
            bouquets,
            orders: Vec::new(),
        }
    }

    fn order(&self, index: usize) -> Option<Order> {
        self.orders.get(index % self.orders.len().max(1)).cloned()
    }

    /// Commits `transition` as one transaction: every effect under its condition (the
    /// bouquet is held by the order), the order replaced; or, when one condition fails,
    /// nothing at all. `false` when it was refused.
    fn commit(&mut self, transition: Transition) -> bool {
        let order_id = transition.order.order_id;
        let mut bouquets = self.bouquets.clone();
        for (bouquet_id, effect) in &transition.effects {
            let Some(bouquet) = bouquets.iter_mut().find(|b| b.bouquet_id == *bouquet_id) else {
                return false;
            };
            if !effect.apply(bouquet, order_id, self.now) {
                return false;
            }
        }
        self.bouquets = bouquets;
        let slot = self
            .orders
            .iter_mut()
            .find(|o| o.order_id == order_id)
            .expect("known order");
        *slot = transition.order;
        true
    }

    fn held(&self, order: &Order) -> Vec<bouquet_domain::BouquetId> {
        checkout::held_by(order, &self.bouquets)
    }

    fn apply(&mut self, command: Command) {
        let now = self.now;
        match command {
            Command::Advance(seconds) => self.now = self.now.plus(Duration::from_secs(seconds)),
            Command::Reserve(indexes) => {
                let mut picked: Vec<usize> = indexes;
                picked.sort_unstable();
                picked.dedup();
                let chosen: Vec<Bouquet> =
                    picked.iter().map(|i| self.bouquets[*i].clone()).collect();
                let customer = CustomerId::parse(&format!("c{}", self.orders.len())).unwrap();
                if let Ok(order) = Order::reserve(customer, &chosen, DEFAULT_HOLD, now) {
                    for i in picked {
                        self.bouquets[i]
                            .reserve(order.order_id, order.reserved_until, now)
                            .expect("reserve() checked availability");
                    }
                    self.orders.push(order);
                }
            }
            Command::BeginPayment(i) => {
                if let Some(Ok(Some(claim))) = self
                    .order(i)
                    .map(|o| checkout::claim(&o, commission(), Some("acct_shop"), now))
                {
                    self.commit(claim);
                }
            }
            Command::Charged(i) => {
                let Some(order) = self.order(i) else { return };
                // As `commit_charge`: sell, or, with the bouquets lost, refund and release.
                if let Ok(charged) = checkout::charged(&order, "ch".into(), now) {
                    if !self.commit(charged) {
                        let held = self.held(&order);
                        if let Ok(refunded) = checkout::refunded(&order, &held, now) {
                            self.commit(refunded);
                        }
                    }
                }
            }
            Command::Decline(i) => {
                let Some(order) = self.order(i) else { return };
                let held = self.held(&order);
                if let Ok(declined) = checkout::declined(&order, &held, now) {
                    self.commit(declined);
                }
            }
            Command::Interrupt(i) => {
                if let Some(Ok(interrupted)) = self.order(i).map(|o| checkout::interrupted(&o, now))
                {
                    self.commit(interrupted);
                }
            }
            Command::Cancel(i) => {
                if let Some(Ok(cancelled)) = self.order(i).map(|o| checkout::cancelled(&o, now)) {
                    self.commit(cancelled);
                }
            }
            Command::Expire(i) => {
                let Some(order) = self.order(i) else { return };
                let held = self.held(&order);
                if let Ok(expired) = checkout::expired(&order, &held, now) {
                    self.commit(expired);
                }
            }
            Command::Fulfil(i) => {
                if let Some(Ok(fulfilled)) = self.order(i).map(|o| checkout::fulfilled(&o, now)) {
                    self.commit(fulfilled);
                }
            }
        }
    }

    fn check(&self) -> Result<(), TestCaseError> {
        for bouquet in &self.bouquets {
            let buyers: Vec<&Order> = self
                .orders
                .iter()
                .filter(|o| {
                    o.status.is_sold() && o.bouquet_ids().any(|id| id == bouquet.bouquet_id)
                })
                .collect();
            prop_assert!(buyers.len() <= 1, "bouquet sold to {} orders", buyers.len());
            match bouquet.status {
                BouquetStatus::Sold { order_id } => {
                    prop_assert_eq!(
                        buyers.first().map(|o| o.order_id),
                        Some(order_id),
                        "sold to an order that did not pay for it"
                    );
                }
                BouquetStatus::Reserved { order_id, .. } => {
                    let holder = self
                        .orders
                        .iter()
                        .find(|o| o.order_id == order_id)
                        .expect("holder exists");
                    prop_assert!(
                        holder.status.holds_bouquets(),
                        "held by a {} order",
                        holder.status
                    );
                    prop_assert!(buyers.is_empty(), "held although an order paid for it");
                }
                BouquetStatus::Available | BouquetStatus::Withdrawn => {
                    prop_assert!(buyers.is_empty(), "a paid bouquet is not sold")
                }
            }
        }
        // Every order that reached a payment has the rule's split of its total, and a paid
        // one is charged with it.
        for order in &self.orders {
            if let Some(settlement) = order.settlement {
                prop_assert_eq!(settlement, commission().settle(order.total));
            }
            if order.status.is_sold() {
                prop_assert!(order.settlement.is_some(), "paid without a split");
            }
        }
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn no_bouquet_is_sold_twice_or_held_by_a_finished_order(commands in prop::collection::vec(command(), 1..60)) {
        let mut world = World::new();
        for command in commands {
            world.apply(command);
            world.check()?;
        }
    }
}

//! Property: no sequence of commands (reserve, pay, decline, charge, cancel, expire, fulfil,
//! at arbitrary clock times) sells a bouquet twice or leaves a bouquet held by a finished
//! order. The model applies each command the way the store's transactions do: the order's
//! transition and every bouquet update commit together or not at all.

use std::time::Duration;

use bouquet_domain::bouquet::NewBouquet;
use bouquet_domain::order::DEFAULT_HOLD;
use bouquet_domain::{
    Bouquet, BouquetStatus, Currency, CustomerId, Money, Order, OrderId, OrderStatus, Timestamp,
    VendorId,
};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Command {
    Reserve(Vec<usize>),
    BeginPayment(usize),
    Decline(usize),
    Charged(usize),
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

    /// Applies `f` to the bouquets held by `order` (all of its lines); the whole command is
    /// dropped when one of them is not held by it, as a failed transaction condition would.
    fn with_held(&mut self, order: &Order, f: impl Fn(&mut Bouquet, OrderId)) -> bool {
        let ids: Vec<_> = order.bouquet_ids().collect();
        let held = ids.iter().all(|id| {
            self.bouquets.iter().any(|b| b.bouquet_id == *id && matches!(b.status, BouquetStatus::Reserved { order_id, .. } if order_id == order.order_id))
        });
        if held {
            for bouquet in self
                .bouquets
                .iter_mut()
                .filter(|b| ids.contains(&b.bouquet_id))
            {
                f(bouquet, order.order_id);
            }
        }
        held
    }

    fn apply(&mut self, command: Command) {
        let now = self.now;
        let order_at = |world: &World, index: usize| {
            world.orders.get(index % world.orders.len().max(1)).cloned()
        };
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
                let Some(mut order) = order_at(self, i) else {
                    return;
                };
                if order.begin_payment(now) == Ok(true) {
                    let until = order.payment_hold_until(now);
                    if self.with_held(&order, |b, o| {
                        b.status = BouquetStatus::Reserved { order_id: o, until }
                    }) {
                        self.store(order);
                    }
                }
            }
            Command::Decline(i) => {
                let Some(mut order) = order_at(self, i) else {
                    return;
                };
                if order.payment_declined(now).is_ok() {
                    let until = order.reserved_until;
                    // Bouquets lost after a lease are simply not touched by a decline.
                    for b in self.bouquets.iter_mut() {
                        if matches!(b.status, BouquetStatus::Reserved { order_id, .. } if order_id == order.order_id)
                        {
                            b.status = BouquetStatus::Reserved {
                                order_id: order.order_id,
                                until,
                            };
                        }
                    }
                    self.store(order);
                }
            }
            Command::Charged(i) => {
                let Some(mut order) = order_at(self, i) else {
                    return;
                };
                let mut paid = order.clone();
                if paid.payment_succeeded("ch".into(), now).is_ok() {
                    if self.with_held(&paid, |b, o| b.sell(o, now).expect("held")) {
                        self.store(paid);
                    } else if order.payment_refunded(now).is_ok() {
                        for b in self.bouquets.iter_mut() {
                            b.release(order.order_id, now);
                        }
                        self.store(order);
                    }
                }
            }
            Command::Cancel(i) => {
                let Some(mut order) = order_at(self, i) else {
                    return;
                };
                if order.cancel(now).is_ok()
                    && self.with_held(&order, |b, o| assert!(b.release(o, now)))
                {
                    self.store(order);
                }
            }
            Command::Expire(i) => {
                let Some(mut order) = order_at(self, i) else {
                    return;
                };
                if order.expire(now).is_ok() {
                    for b in self.bouquets.iter_mut() {
                        b.release(order.order_id, now);
                    }
                    self.store(order);
                }
            }
            Command::Fulfil(i) => {
                let Some(mut order) = order_at(self, i) else {
                    return;
                };
                if order.fulfil(now).is_ok() {
                    self.store(order);
                }
            }
        }
    }

    fn store(&mut self, order: Order) {
        let slot = self
            .orders
            .iter_mut()
            .find(|o| o.order_id == order.order_id)
            .expect("known order");
        *slot = order;
    }

    fn check(&self) -> Result<(), TestCaseError> {
        for bouquet in &self.bouquets {
            let buyers: Vec<&Order> = self
                .orders
                .iter()
                .filter(|o| {
                    matches!(o.status, OrderStatus::Paid | OrderStatus::Fulfilled)
                        && o.bouquet_ids().any(|id| id == bouquet.bouquet_id)
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

//! Live-update channels (docs/contract.md, "Live updates"): who may read which channel, and which
//! channels an event belongs to. Pure: the broadcaster and the subscribe route decide with
//! these, the store and the push adapter only carry the result.

use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::identity::{Identity, Role, UnusableClaims};
use crate::ids::{BouquetId, CustomerId, VendorId};

/// Who holds a connection, from the token its `$connect` carried.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Viewer {
    Anonymous,
    Customer(CustomerId),
    Vendor(VendorId),
    Admin,
}

impl Viewer {
    /// The viewer a token's claims stand for ([`Identity::from_claims`]).
    pub fn from_claims<'a>(
        claim: impl Fn(&str) -> Option<&'a str>,
    ) -> Result<Self, UnusableClaims> {
        let identity = Identity::from_claims(claim)?;
        Ok(match (identity.role, identity.vendor_id) {
            (Role::Customer, _) => Viewer::Customer(identity.subject),
            (Role::Vendor, Some(vendor)) => Viewer::Vendor(vendor),
            (Role::Vendor, None) => return Err(UnusableClaims::VendorId),
            (Role::Admin, _) => Viewer::Admin,
        })
    }
}

/// A channel a connection can subscribe to.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Channel {
    /// Public: bouquets listed, changed, withdrawn, reserved, released, sold, and freshness.
    Catalogue,
    /// Public: one bouquet's status and freshness.
    Bouquet(BouquetId),
    /// One customer's own orders (the client asks for `orders`).
    Orders(CustomerId),
    /// One vendor's orders, vases, readings and freshness.
    Vendor(VendorId),
}

/// Why a subscription was refused (the frame's `code`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("no such channel")]
    Invalid,
    #[error("the caller may not read this channel")]
    Forbidden,
}

impl Refusal {
    pub fn code(self) -> &'static str {
        match self {
            Refusal::Invalid => "request.invalid",
            Refusal::Forbidden => "auth.forbidden",
        }
    }
}

impl Channel {
    /// The channel a client names, if `viewer` may read it.
    pub fn request(name: &str, viewer: &Viewer) -> Result<Channel, Refusal> {
        let (kind, id) = name.split_once(':').unwrap_or((name, ""));
        match (kind, id) {
            ("catalogue", "") => Ok(Channel::Catalogue),
            ("bouquet", id) => BouquetId::parse(id)
                .map(Channel::Bouquet)
                .map_err(|_| Refusal::Invalid),
            ("orders", "") => match viewer {
                Viewer::Customer(customer) => Ok(Channel::Orders(customer.clone())),
                _ => Err(Refusal::Forbidden),
            },
            ("vendor", id) => {
                let vendor = VendorId::parse(id).map_err(|_| Refusal::Invalid)?;
                match viewer {
                    Viewer::Vendor(own) if *own == vendor => Ok(Channel::Vendor(vendor)),
                    _ => Err(Refusal::Forbidden),
                }
            }
            _ => Err(Refusal::Invalid),
        }
    }

    /// The name the client used (`orders` for its own orders).
    pub fn name(&self) -> String {
        match self {
            Channel::Catalogue => "catalogue".into(),
            Channel::Bouquet(id) => format!("bouquet:{id}"),
            Channel::Orders(_) => "orders".into(),
            Channel::Vendor(id) => format!("vendor:{id}"),
        }
    }

    /// Where its subscribers are stored: unique per audience (`orders:{customerId}`).
    pub fn key(&self) -> String {
        match self {
            Channel::Orders(customer) => format!("orders:{customer}"),
            other => other.name(),
        }
    }

    /// Anyone, signed in or not, may read it: it never carries a customer's data.
    pub fn is_public(&self) -> bool {
        matches!(self, Channel::Catalogue | Channel::Bouquet(_))
    }
}

/// What routing reads of an event's `data`: the ids in it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventIds {
    pub bouquet_id: Option<BouquetId>,
    pub vendor_id: Option<VendorId>,
    pub customer_id: Option<CustomerId>,
    #[serde(default)]
    pub bouquet_ids: Vec<BouquetId>,
}

/// The channels the event `name` with `ids` is pushed to. Unknown names go nowhere.
pub fn route(name: &str, ids: &EventIds) -> Vec<Channel> {
    let vendor = ids.vendor_id.map(Channel::Vendor);
    let bouquet = ids.bouquet_id.map(Channel::Bouquet);
    let orders = ids.customer_id.clone().map(Channel::Orders);
    let each_bouquet = ids.bouquet_ids.iter().copied().map(Channel::Bouquet);
    let channels: Vec<Channel> = match name {
        "BouquetListed"
        | "BouquetChanged"
        | "BouquetWithdrawn"
        | "BouquetPhotoChanged"
        | "BouquetFreshnessChanged"
        | "BouquetRepriced"
        | "BouquetPastItsBest" => [Some(Channel::Catalogue), bouquet, vendor]
            .into_iter()
            .flatten()
            .collect(),
        // The bouquets' status moves (reserved, sold, released): public channels see it too.
        "OrderReserved" | "OrderPaid" | "OrderCancelled" | "ReservationExpired"
        | "OrderRejected" => [orders, vendor, Some(Channel::Catalogue)]
            .into_iter()
            .flatten()
            .chain(each_bouquet)
            .collect(),
        // A shop opened, suspended, reinstated or able to take payments: the storefront and
        // the administrators' page follow the catalogue; the shop's own console its channel.
        "VendorOnboarded" | "VendorSuspended" | "VendorReinstated" | "VendorPayoutsChanged" => {
            [Some(Channel::Catalogue), vendor]
                .into_iter()
                .flatten()
                .collect()
        }
        // A shop's reviews and rating are public: its page follows its channel, the
        // storefront's cards the catalogue.
        "ReviewWritten" | "ReviewEdited" | "ShopRatingChanged" => {
            [vendor, Some(Channel::Catalogue)]
                .into_iter()
                .flatten()
                .collect()
        }
        // The review's author is told of the shop's answer and of a hiding, on its own orders
        // channel (the public frame names no customer and no reason: see `frame`).
        "ReviewAnswered" | "ReviewHidden" => [vendor, Some(Channel::Catalogue), orders]
            .into_iter()
            .flatten()
            .collect(),
        "OrderDeliveryChanged"
        | "OrderAccepted"
        | "OrderOutForDelivery"
        | "OrderFulfilled"
        | "OrderDeliveryPhotoAttached" => [orders, vendor].into_iter().flatten().collect(),
        "DeliverySettingsChanged"
        | "VendorCommissionChanged"
        | "VaseRegistered"
        | "VaseCameOnline"
        | "VaseWentOffline"
        | "VaseCertificateRotated"
        | "VaseDecommissioned"
        | "VaseAlertOpened"
        | "VaseAlertClosed"
        | "VaseAlertAcknowledged"
        | "VaseRulesChanged" => vendor.into_iter().collect(),
        _ => Vec::new(),
    };
    let mut unique = Vec::with_capacity(channels.len());
    for channel in channels {
        if !unique.contains(&channel) {
            unique.push(channel);
        }
    }
    unique
}

/// Frames a crowd needs only the latest of share a key: of a run of frames with one key, only
/// the newest is pushed. A bouquet's freshness moves and a shop's rating moves are such frames
/// (the last score, the last rating, is the state); every other event is pushed frame by frame.
pub fn coalescing_key(name: &str, ids: &EventIds) -> Option<String> {
    match (name, ids.bouquet_id, ids.vendor_id) {
        ("BouquetFreshnessChanged", Some(bouquet), _) => Some(format!("freshness:{bouquet}")),
        ("ShopRatingChanged", _, Some(vendor)) => Some(format!("rating:{vendor}")),
        _ => None,
    }
}

/// Collapses each set of `frames` sharing a [`coalescing_key`] to its newest (highest
/// `version`; the later one on a tie), placed where the last of the set arrived. Frames
/// without a key all stay, in order.
pub fn coalesce<T>(
    frames: Vec<T>,
    key: impl Fn(&T) -> Option<&str>,
    version: impl Fn(&T) -> u64,
) -> Vec<T> {
    use std::collections::HashMap;
    let mut newest: HashMap<String, usize> = HashMap::new();
    let mut last: HashMap<String, usize> = HashMap::new();
    for (i, frame) in frames.iter().enumerate() {
        if let Some(k) = key(frame) {
            last.insert(k.to_owned(), i);
            let keep = match newest.get(k) {
                Some(&j) => version(frame) >= version(&frames[j]),
                None => true,
            };
            if keep {
                newest.insert(k.to_owned(), i);
            }
        }
    }
    let mut slots: Vec<Option<T>> = frames.into_iter().map(Some).collect();
    let mut kept = Vec::with_capacity(slots.len());
    for i in 0..slots.len() {
        let k = slots[i].as_ref().and_then(|f| key(f).map(str::to_owned));
        match k {
            None => kept.extend(slots[i].take()),
            Some(k) if last.get(&k) == Some(&i) => {
                let chosen = newest[&k];
                kept.extend(slots[chosen].take());
            }
            Some(_) => {}
        }
    }
    kept
}

/// The fields of an event's `data` a public channel may carry: an order's customer, total
/// and charge are not public; its bouquets and vendor are (the bouquets changed status).
fn public_data(data: &Value) -> Value {
    let keep = ["vendorId", "bouquetIds"];
    let kept: Map<String, Value> = data
        .as_object()
        .map(|fields| {
            fields
                .iter()
                .filter(|(k, _)| keep.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    Value::Object(kept)
}

/// What no public frame carries, of any event: who the customer is, why their review was
/// hidden (that is the author's business; the shop's page only needs to drop the review), and
/// which order a review is of (a review's aggregate is its own id).
const NEVER_PUBLIC: [&str; 3] = ["customerId", "reason", "orderId"];

/// The frame pushed to `channel` for the bus event `name` with `detail` (the event's
/// envelope: `eventId`, `aggregateId`, `aggregateVersion`, `occurredAt`, `data`).
///
/// On a public channel an order's event names no order: its aggregate is the order, so its
/// `aggregateId` and `aggregateVersion` are left out (clients dedupe by `eventId`), and its
/// `data` keeps only the bouquets and the vendor. No public frame names a customer.
pub fn frame(channel: &Channel, name: &str, detail: &Value) -> Value {
    let public_order_event = channel.is_public() && is_order_event(name);
    let mut data = if public_order_event {
        public_data(&detail["data"])
    } else {
        detail["data"].clone()
    };
    if channel.is_public() {
        if let Some(fields) = data.as_object_mut() {
            fields.retain(|field, _| !NEVER_PUBLIC.contains(&field.as_str()));
        }
    }
    let mut event = json!({
        "name": name,
        "eventId": detail["eventId"],
        "occurredAt": detail["occurredAt"],
        "data": data,
    });
    if !public_order_event {
        event["aggregateId"] = detail["aggregateId"].clone();
        event["aggregateVersion"] = detail["aggregateVersion"].clone();
    }
    json!({ "type": "event", "channel": channel.name(), "event": event })
}

/// The most a digest frame may weigh with the bouquets its events carry: API Gateway sends
/// a WebSocket message of up to 128 KB; past this the events go without them (a client then
/// reads the bouquets it shows).
pub const DIGEST_FRAME_BYTES: usize = 96 * 1024;

/// The frame a crowded channel gets once per digest window instead of one per event: the
/// `event` of each of `frames` ([`frame`]s of that channel), ordered by `eventId` (ULIDs: time
/// order), within [`DIGEST_FRAME_BYTES`].
pub fn digest_frame(channel_name: &str, frames: &[Value]) -> Value {
    let mut events: Vec<Value> = frames.iter().map(|f| f["event"].clone()).collect();
    events.sort_by(|a, b| {
        a["eventId"]
            .as_str()
            .unwrap_or_default()
            .cmp(b["eventId"].as_str().unwrap_or_default())
    });
    let mut digest = json!({ "type": "events", "channel": channel_name, "events": events });
    if digest.to_string().len() > DIGEST_FRAME_BYTES {
        for event in digest["events"].as_array_mut().into_iter().flatten() {
            if let Some(event) = event.as_object_mut() {
                event.remove("bouquets");
            }
        }
    }
    digest
}

/// The events whose aggregate is an order.
fn is_order_event(name: &str) -> bool {
    name.starts_with("Order") || name == "ReservationExpired"
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Timestamp;
    use crate::events::{DomainEvent, EventData};
    use crate::ids::{OrderId, VaseId};
    use crate::money::Money;

    fn ids_of(event: &DomainEvent) -> EventIds {
        serde_json::from_value(serde_json::to_value(&event.data).unwrap()).unwrap()
    }

    fn event(data: EventData) -> DomainEvent {
        DomainEvent::new("agg", 3, Timestamp::from_millis(0), "corr", data)
    }

    fn customer(id: &str) -> CustomerId {
        CustomerId::parse(id).unwrap()
    }

    #[test]
    fn a_shops_rating_moves_reach_its_channel_and_the_catalogue_and_collapse_to_the_newest() {
        let vendor = VendorId::generate();
        let ids = EventIds {
            vendor_id: Some(vendor),
            ..EventIds::default()
        };
        assert_eq!(
            route("ShopRatingChanged", &ids),
            vec![Channel::Vendor(vendor), Channel::Catalogue]
        );
        assert_eq!(
            coalescing_key("ShopRatingChanged", &ids),
            Some(format!("rating:{vendor}"))
        );
        assert_eq!(coalescing_key("ReviewWritten", &ids), None);
    }

    #[test]
    fn freshness_moves_of_one_bouquet_collapse_to_the_newest_and_nothing_else_does() {
        let (a, b) = (BouquetId::generate(), BouquetId::generate());
        let ids = |bouquet| EventIds {
            bouquet_id: Some(bouquet),
            ..EventIds::default()
        };
        assert_eq!(
            coalescing_key("BouquetFreshnessChanged", &ids(a)),
            Some(format!("freshness:{a}"))
        );
        assert_eq!(coalescing_key("BouquetChanged", &ids(a)), None);
        assert_eq!(
            coalescing_key("BouquetFreshnessChanged", &EventIds::default()),
            None
        );
        // (key, version, label): a's moves arrive out of order; b has one; the rest have none.
        let fa = format!("freshness:{a}");
        let fb = format!("freshness:{b}");
        let frames = vec![
            (Some(fa.clone()), 3, "a3"),
            (None, 9, "listed"),
            (Some(fa.clone()), 5, "a5"),
            (Some(fb.clone()), 2, "b2"),
            (Some(fa.clone()), 4, "a4"),
            (None, 1, "changed"),
        ];
        let kept: Vec<&str> = coalesce(frames, |f| f.0.as_deref(), |f| f.1)
            .into_iter()
            .map(|f| f.2)
            .collect();
        assert_eq!(kept, vec!["listed", "b2", "a5", "changed"]);
    }

    proptest::proptest! {
        /// Whatever arrives: one frame per key, the newest of its key, and every unkeyed frame
        /// in its order.
        #[test]
        fn coalescing_keeps_the_newest_of_each_key_and_every_other_frame(
            frames in proptest::collection::vec((proptest::option::of(0u8..4), 0u64..20), 0..40)
        ) {
            let labelled: Vec<(Option<String>, u64, usize)> = frames
                .iter()
                .enumerate()
                .map(|(i, (k, v))| (k.map(|k| k.to_string()), *v, i))
                .collect();
            let kept = coalesce(labelled.clone(), |f| f.0.as_deref(), |f| f.1);
            let unkeyed: Vec<usize> = labelled.iter().filter(|f| f.0.is_none()).map(|f| f.2).collect();
            let kept_unkeyed: Vec<usize> = kept.iter().filter(|f| f.0.is_none()).map(|f| f.2).collect();
            proptest::prop_assert_eq!(unkeyed, kept_unkeyed);
            for key in labelled.iter().filter_map(|f| f.0.clone()) {
                let of_key: Vec<_> = kept.iter().filter(|f| f.0.as_deref() == Some(key.as_str())).collect();
                proptest::prop_assert_eq!(of_key.len(), 1);
                let newest = labelled.iter().filter(|f| f.0.as_deref() == Some(key.as_str())).map(|f| f.1).max();
                proptest::prop_assert_eq!(Some(of_key[0].1), newest);
            }
        }
    }

    #[test]
    fn a_digest_carries_its_frames_events_in_event_order() {
        let frame = |id: &str| json!({ "type": "event", "channel": "catalogue", "event": { "eventId": id } });
        let digest = digest_frame("catalogue", &[frame("01B"), frame("01A"), frame("01C")]);
        // Heavy with the bouquets its events carry, a digest sheds them to stay a message.
        let heavy = |id: &str| {
            let mut f = frame(id);
            f["event"]["bouquets"] = json!([{ "description": "x".repeat(40 * 1024) }]);
            f
        };
        let shed = digest_frame("catalogue", &[heavy("01A"), heavy("01B"), heavy("01C")]);
        assert!(
            shed.to_string().len() <= DIGEST_FRAME_BYTES,
            "within a message"
        );
        assert!(shed["events"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e.get("bouquets").is_none() && e["eventId"].is_string()));
        let light = digest_frame("catalogue", &[heavy("01A")]);
        assert!(
            light["events"][0]["bouquets"].is_array(),
            "kept when it fits"
        );
        assert_eq!(digest["type"], "events");
        assert_eq!(digest["channel"], "catalogue");
        let ids: Vec<&str> = digest["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["eventId"].as_str().unwrap())
            .collect();
        assert_eq!(ids, vec!["01A", "01B", "01C"]);
    }

    #[test]
    fn an_order_event_goes_to_its_customer_its_vendor_and_the_public_channels() {
        let (vendor, bouquets) = (
            VendorId::generate(),
            vec![BouquetId::generate(), BouquetId::generate()],
        );
        let paid = event(EventData::OrderPaid {
            order_id: OrderId::generate(),
            customer_id: customer("c-1"),
            vendor_id: vendor,
            bouquet_ids: bouquets.clone(),
            total: Money::parse_amount("10.00", "EUR").unwrap(),
            fee: Money::parse_amount("1.50", "EUR").unwrap(),
            charge_id: "ch_1".into(),
        });
        assert_eq!(
            route("OrderPaid", &ids_of(&paid)),
            vec![
                Channel::Orders(customer("c-1")),
                Channel::Vendor(vendor),
                Channel::Catalogue,
                Channel::Bouquet(bouquets[0]),
                Channel::Bouquet(bouquets[1]),
            ]
        );
        let fulfilled = event(EventData::OrderFulfilled {
            order_id: OrderId::generate(),
            customer_id: customer("c-1"),
            vendor_id: vendor,
        });
        assert_eq!(
            route("OrderFulfilled", &ids_of(&fulfilled)),
            vec![Channel::Orders(customer("c-1")), Channel::Vendor(vendor)]
        );
    }

    #[test]
    fn freshness_goes_to_the_bouquet_the_catalogue_and_the_vendor_and_vases_to_the_vendor_only() {
        let (vendor, bouquet) = (VendorId::generate(), BouquetId::generate());
        let fresh = event(EventData::BouquetFreshnessChanged {
            bouquet_id: bouquet,
            vendor_id: vendor,
            vase_id: VaseId::generate(),
            previous: Some(90),
            freshness: 80,
            measured_at: Timestamp::from_millis(0),
        });
        assert_eq!(
            route("BouquetFreshnessChanged", &ids_of(&fresh)),
            vec![
                Channel::Catalogue,
                Channel::Bouquet(bouquet),
                Channel::Vendor(vendor)
            ]
        );
        let offline = event(EventData::VaseWentOffline {
            vase_id: VaseId::generate(),
            vendor_id: vendor,
            last_heartbeat_at: Timestamp::from_millis(0),
        });
        assert_eq!(
            route("VaseWentOffline", &ids_of(&offline)),
            vec![Channel::Vendor(vendor)]
        );
        let onboarded = event(EventData::VendorOnboarded {
            vendor_id: vendor,
            name: "Bloom".into(),
        });
        // A new shop shows on the administrators' page (the catalogue channel) and its own.
        assert_eq!(
            route("VendorOnboarded", &ids_of(&onboarded)),
            vec![Channel::Catalogue, Channel::Vendor(vendor)]
        );
        assert_eq!(route("SomethingNew", &EventIds::default()), vec![]);
    }

    /// Every id routing reads, customer `c-1`'s among them.
    fn every_id() -> EventIds {
        EventIds {
            bouquet_id: Some(BouquetId::generate()),
            vendor_id: Some(VendorId::generate()),
            customer_id: Some(customer("c-1")),
            bouquet_ids: vec![BouquetId::generate()],
        }
    }

    #[test]
    fn no_public_frame_of_any_event_names_a_customer_a_hiding_reason_or_an_order() {
        let ids = every_id();
        let detail = json!({
            "eventId": "E", "aggregateId": "A", "aggregateVersion": 4, "occurredAt": "t",
            "data": { "customerId": "c-1", "reason": "Names a member of staff.", "orderId": "O-1", "vendorId": "V", "stars": 2 },
        });
        let mut public = 0;
        for name in EventData::NAMES {
            for channel in route(name, &ids) {
                let pushed = frame(&channel, name, &detail);
                let data = &pushed["event"]["data"];
                if channel.is_public() {
                    public += 1;
                    assert!(
                        data.get("customerId").is_none(),
                        "{name} on {channel:?}: {data}"
                    );
                    assert!(
                        data.get("reason").is_none(),
                        "{name} on {channel:?}: {data}"
                    );
                    assert!(
                        data.get("orderId").is_none(),
                        "{name} on {channel:?}: {data}"
                    );
                    // An order's own events drop their aggregate (the order) on a public
                    // channel; every other aggregate is not an order (a review's is its id).
                    let aggregate = &pushed["event"]["aggregateId"];
                    assert!(
                        aggregate.is_null() || !is_order_event(name),
                        "{name} on {channel:?}: {aggregate}"
                    );
                    assert_eq!(data["vendorId"], "V", "{name}");
                } else {
                    // The customer's own and the shop's channels carry the event whole.
                    assert_eq!(data, &detail["data"], "{name} on {channel:?}");
                }
            }
        }
        assert!(public >= 20, "{public} public frames checked");
        // The author is told of the answer and of the hiding, with the reason.
        for name in ["ReviewAnswered", "ReviewHidden"] {
            assert!(
                route(name, &ids).contains(&Channel::Orders(customer("c-1"))),
                "{name}"
            );
        }
    }

    #[test]
    fn every_event_name_routes_somewhere() {
        let ids = every_id();
        for name in EventData::NAMES {
            let routed = route(name, &ids);
            assert!(!routed.is_empty(), "{name}");
            // A customer's orders channel only ever gets order events, and the answer to
            // and the hiding of their own review.
            if routed.iter().any(|c| matches!(c, Channel::Orders(_))) {
                assert!(
                    name.starts_with("Order")
                        || name == "ReservationExpired"
                        || name == "ReviewAnswered"
                        || name == "ReviewHidden",
                    "{name}"
                );
            }
        }
    }

    #[test]
    fn who_may_subscribe_to_what() {
        let vendor = VendorId::generate();
        let bouquet = BouquetId::generate();
        let anyone = Viewer::Anonymous;
        let buyer = Viewer::Customer(customer("c-1"));
        let seller = Viewer::Vendor(vendor);
        assert_eq!(
            Channel::request("catalogue", &anyone),
            Ok(Channel::Catalogue)
        );
        assert_eq!(
            Channel::request(&format!("bouquet:{bouquet}"), &anyone),
            Ok(Channel::Bouquet(bouquet))
        );
        assert_eq!(Channel::request("orders", &anyone), Err(Refusal::Forbidden));
        assert_eq!(Channel::request("orders", &seller), Err(Refusal::Forbidden));
        assert_eq!(
            Channel::request("orders", &buyer),
            Ok(Channel::Orders(customer("c-1")))
        );
        assert_eq!(
            Channel::request(&format!("vendor:{vendor}"), &seller),
            Ok(Channel::Vendor(vendor))
        );
        let other = VendorId::generate();
        assert_eq!(
            Channel::request(&format!("vendor:{other}"), &seller),
            Err(Refusal::Forbidden)
        );
        assert_eq!(
            Channel::request(&format!("vendor:{vendor}"), &buyer),
            Err(Refusal::Forbidden)
        );
        assert_eq!(
            Channel::request(&format!("vendor:{vendor}"), &Viewer::Admin),
            Err(Refusal::Forbidden)
        );
        for bad in [
            "",
            "catalogue:x",
            "bouquet:",
            "bouquet:nope",
            "vendor:nope",
            "orders:c-2",
            "chat",
        ] {
            assert_eq!(
                Channel::request(bad, &buyer),
                Err(Refusal::Invalid),
                "{bad:?}"
            );
        }
        assert_eq!(Refusal::Forbidden.code(), "auth.forbidden");
        assert_eq!(Channel::Orders(customer("c-1")).key(), "orders:c-1");
        assert_eq!(Channel::Orders(customer("c-1")).name(), "orders");
    }

    #[test]
    fn claims_map_to_viewers_in_both_shapes() {
        let vendor = VendorId::generate().to_string();
        let read = |pairs: &[(&str, &str)]| {
            Viewer::from_claims(|name| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| *v))
        };
        assert_eq!(
            read(&[("sub", "c-1"), ("role", "customer")]),
            Ok(Viewer::Customer(customer("c-1")))
        );
        assert_eq!(
            read(&[("sub", "c-1"), ("token_use", "id")]),
            Ok(Viewer::Customer(customer("c-1"))),
            "a Cognito user in no group"
        );
        assert_eq!(
            read(&[
                ("sub", "u"),
                ("cognito:groups", "[vendor]"),
                ("custom:vendorId", &vendor)
            ]),
            Ok(Viewer::Vendor(VendorId::parse(&vendor).unwrap()))
        );
        assert_eq!(
            read(&[("sub", "a"), ("cognito:groups", "[admin]")]),
            Ok(Viewer::Admin)
        );
        assert_eq!(
            read(&[("sub", "u"), ("role", "vendor")]),
            Err(UnusableClaims::VendorId)
        );
        assert_eq!(read(&[("role", "customer")]), Err(UnusableClaims::Subject));
    }

    #[test]
    fn public_frames_carry_no_customer_data() {
        let detail = json!({
            "eventId": "E", "aggregateId": "O", "aggregateVersion": 2, "occurredAt": "t", "correlationId": "c",
            "data": { "orderId": "O", "customerId": "c-1", "vendorId": "V", "bouquetIds": ["B"], "total": {"amount": "1.00", "currency": "EUR"}, "chargeId": "ch" },
        });
        let public = frame(&Channel::Catalogue, "OrderPaid", &detail);
        assert_eq!(
            public["event"]["data"],
            json!({ "vendorId": "V", "bouquetIds": ["B"] })
        );
        assert_eq!(public["channel"], "catalogue");
        assert_eq!(public["event"]["name"], "OrderPaid");
        // Nothing in a public frame names the order.
        assert!(!public.to_string().contains("\"O\""), "{public}");
        assert_eq!(public["event"]["eventId"], "E");
        let own = frame(&Channel::Orders(customer("c-1")), "OrderPaid", &detail);
        assert_eq!(own["event"]["data"], detail["data"]);
        assert_eq!(
            (
                &own["event"]["aggregateId"],
                &own["event"]["aggregateVersion"]
            ),
            (&json!("O"), &json!(2))
        );
        let vendor = frame(&Channel::Vendor(VendorId::generate()), "OrderPaid", &detail);
        assert_eq!(vendor["event"]["aggregateId"], "O");
        // A bouquet's own events keep their aggregate on public channels.
        let listed = frame(
            &Channel::Catalogue,
            "BouquetListed",
            &json!({"eventId": "E2", "aggregateId": "B", "aggregateVersion": 1, "data": {"bouquetId": "B"}}),
        );
        assert_eq!(
            (
                &listed["event"]["aggregateId"],
                &listed["event"]["aggregateVersion"]
            ),
            (&json!("B"), &json!(1))
        );
        assert_eq!(own["channel"], "orders");
        assert!(own["event"].get("correlationId").is_none());
    }
}

//! Where, when and to whom a florist delivers (issue 30): the customer's delivery details, and
//! the vendor's delivery settings that bound them (its area, its days, how far ahead, a
//! same-day cut-off in its own time zone). Pure: "now" is the caller's clock.

use jiff::civil::{Date, Time, Weekday};
use jiff::tz::TimeZone;
use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;
use crate::identity::Identity;
use crate::money::{Currency, Money};
use crate::pricing::{postcode_key, DeliveryFees, Pricing, VatSettings};
use crate::text;
use crate::validation::{FieldError, Validation};

pub const CARD_MESSAGE_MAX: usize = 200;
/// The furthest ahead a shop may take orders.
pub const MAX_HORIZON_DAYS: u16 = 90;

/// The coverage key of a shop that set no delivery area: it takes every country.
pub const ANY_COUNTRY: &str = "*";
/// The most (country, postcode prefix) pairs a shop's area may index (one transaction).
pub const MAX_COVERAGE: usize = 90;

/// Where and when a customer wants flowers (issue 54): a postcode, its country and a date.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WhereAndWhen {
    /// Normalised (`75 011` → `75011`).
    pub postcode: String,
    /// ISO 3166-1 alpha-2, upper case.
    pub country: String,
    /// `YYYY-MM-DD`.
    pub date: String,
}

impl WhereAndWhen {
    /// Checks the three together: each problem a field error (`query/postcode`, ...).
    pub fn parse(postcode: &str, country: &str, date: &str) -> Result<Self, Vec<FieldError>> {
        let mut v = Validation::new();
        let key = postcode_key(postcode);
        if key.is_empty() || key.len() > 10 || !key.bytes().all(|b| b.is_ascii_alphanumeric()) {
            v.add("query/postcode", "must be 1 to 10 letters or digits");
        }
        let country = country_code(country);
        if country.is_none() {
            v.add(
                "query/country",
                "must be an ISO 3166-1 alpha-2 code such as FR",
            );
        }
        let date = parse_date(date);
        if date.is_none() {
            v.add("query/date", "must be a date YYYY-MM-DD");
        }
        v.finish(|| WhereAndWhen {
            postcode: key,
            country: country.unwrap_or_default(),
            date: date.unwrap_or_default(),
        })
    }

    /// The coverage pairs a shop reaching this postcode is indexed under: any country, this
    /// country with every postcode, and this country with each prefix of the postcode.
    pub fn coverage_keys(&self) -> Vec<(String, String)> {
        let mut keys = vec![
            (ANY_COUNTRY.to_owned(), String::new()),
            (self.country.clone(), String::new()),
        ];
        keys.extend(
            (1..=self.postcode.len())
                .map(|n| (self.country.clone(), self.postcode[..n].to_owned())),
        );
        keys
    }
}

/// A part of the day the customer may ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Slot {
    Morning,
    Afternoon,
    Evening,
}

/// A vendor's delivery settings, as it edits them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeliverySettings {
    /// ISO 3166-1 alpha-2 codes, upper case.
    pub countries: Vec<String>,
    /// Postcodes it delivers to start with one of these (none: all of its countries).
    pub postcode_prefixes: Vec<String>,
    /// The days it delivers, `monday`..`sunday`.
    pub days: Vec<String>,
    /// How many days ahead a delivery may be booked (0: today only).
    pub horizon_days: u16,
    /// Same-day deliveries are taken until this local time (`HH:MM`).
    pub same_day_cutoff: String,
    /// The shop's IANA time zone (`Europe/Paris`).
    pub time_zone: String,
    /// Where the shop is told of new paid orders (customers may write to it too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contact_email: Option<String>,
    /// What delivery costs (issue 41); none set: free.
    #[serde(default)]
    pub fees: DeliveryFees,
    /// The shop's VAT number and rates, for its receipts and invoices.
    #[serde(default)]
    pub vat: VatSettings,
}

/// What the customer sends.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeliveryRequest {
    #[serde(default)]
    pub recipient: RecipientRequest,
    #[serde(default)]
    pub address: Address,
    /// `YYYY-MM-DD`.
    #[serde(default)]
    pub date: String,
    #[serde(default)]
    pub slot: Option<Slot>,
    #[serde(default)]
    pub card_message: Option<String>,
    /// Where the customer is told how the order goes (receipt, each step).
    #[serde(default)]
    pub contact_email: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RecipientRequest {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub phone: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Address {
    #[serde(default)]
    pub street: String,
    #[serde(default)]
    pub postcode: String,
    #[serde(default)]
    pub city: String,
    /// ISO 3166-1 alpha-2.
    #[serde(default)]
    pub country: String,
}

/// Delivery details that passed [`DeliverySettings::check`]: personal data, readable only by
/// the customer, the order's vendor and an administrator.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Delivery {
    pub recipient_name: String,
    /// `+` and 8 to 15 digits (E.164).
    pub recipient_phone: String,
    pub address: Address,
    /// `YYYY-MM-DD`, the shop's local date.
    pub date: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot: Option<Slot>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub card_message: Option<String>,
    /// The customer's address for the order's emails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contact_email: Option<String>,
}

/// What replaces a redacted personal field.
pub const REDACTED: &str = "[redacted]";

impl Delivery {
    /// The details with the personal fields replaced (privacy, issue 30): what stays is what
    /// the vendor's books need (the date, the slot, the postcode's area, city and country).
    pub fn redacted(&self) -> Delivery {
        Delivery {
            recipient_name: REDACTED.into(),
            recipient_phone: REDACTED.into(),
            address: Address {
                street: REDACTED.into(),
                postcode: self.address.postcode.clone(),
                city: self.address.city.clone(),
                country: self.address.country.clone(),
            },
            date: self.date.clone(),
            slot: self.slot,
            card_message: self.card_message.as_ref().map(|_| REDACTED.into()),
            contact_email: self.contact_email.as_ref().map(|_| REDACTED.into()),
        }
    }
}

const DAYS: [(&str, Weekday); 7] = [
    ("monday", Weekday::Monday),
    ("tuesday", Weekday::Tuesday),
    ("wednesday", Weekday::Wednesday),
    ("thursday", Weekday::Thursday),
    ("friday", Weekday::Friday),
    ("saturday", Weekday::Saturday),
    ("sunday", Weekday::Sunday),
];

fn day_name(day: Weekday) -> &'static str {
    DAYS.iter()
        .find(|(_, d)| *d == day)
        .map(|(name, _)| *name)
        .unwrap_or("that day")
}

/// The date `days` days after `now` in `time_zone` (`YYYY-MM-DD`); `None` for an unknown zone.
pub fn date_after(now: Timestamp, days: u16, time_zone: &str) -> Option<String> {
    let zone = TimeZone::get(time_zone).ok()?;
    let date = jiff::Timestamp::from_millisecond(now.as_millis())
        .ok()?
        .to_zoned_datetime(zone)
        .date()
        .checked_add(jiff::Span::new().days(i64::from(days)))
        .ok()?;
    Some(date.to_string())
}

/// A calendar date `YYYY-MM-DD`, as written back; `None` unless it is one.
pub fn parse_date(text: &str) -> Option<String> {
    text.parse::<Date>()
        .ok()
        .filter(|_| text.len() == 10)
        .map(|date| date.to_string())
}

fn country_code(text: &str) -> Option<String> {
    let code = text.trim().to_ascii_uppercase();
    (code.len() == 2 && code.bytes().all(|b| b.is_ascii_uppercase())).then_some(code)
}

/// `+33 6 12 34 56 78` → `+33612345678`; `None` unless E.164 (`+`, 8 to 15 digits).
pub fn phone(text: &str) -> Option<String> {
    let compact: String = text
        .chars()
        .filter(|c| !matches!(c, ' ' | '-' | '.' | '(' | ')'))
        .collect();
    let digits = compact.strip_prefix('+')?;
    ((8..=15).contains(&digits.len())
        && digits.bytes().all(|b| b.is_ascii_digit())
        && !digits.starts_with('0'))
    .then_some(compact)
}

impl DeliverySettings {
    /// What a shop that has not set its delivery settings takes: every country, every day,
    /// two weeks ahead, same day until noon UTC. Shops that sold before issue 30 keep selling.
    pub fn unset() -> DeliverySettings {
        DeliverySettings {
            countries: Vec::new(),
            postcode_prefixes: Vec::new(),
            days: DAYS.iter().map(|(name, _)| (*name).to_owned()).collect(),
            horizon_days: 14,
            same_day_cutoff: "12:00".into(),
            time_zone: "UTC".into(),
            contact_email: None,
            fees: DeliveryFees::default(),
            vat: VatSettings::default(),
        }
    }

    /// The settings as a vendor sends them, checked and normalised.
    pub fn validate(mut self) -> Result<Self, Vec<FieldError>> {
        let mut v = Validation::new();
        let countries: Option<Vec<String>> =
            self.countries.iter().map(|c| country_code(c)).collect();
        match countries {
            Some(countries) if !countries.is_empty() => self.countries = countries,
            _ => v.add(
                "countries",
                "must be one or more ISO 3166-1 alpha-2 codes such as FR",
            ),
        }
        self.postcode_prefixes = self
            .postcode_prefixes
            .iter()
            .map(|p| postcode_key(p))
            .collect();
        if self
            .postcode_prefixes
            .iter()
            .any(|p| p.is_empty() || p.len() > 10 || !p.bytes().all(|b| b.is_ascii_alphanumeric()))
        {
            v.add("postcodePrefixes", "each must be 1 to 10 letters or digits");
        }
        self.days = self
            .days
            .iter()
            .map(|d| d.trim().to_ascii_lowercase())
            .collect();
        if self.days.is_empty() || self.days.iter().any(|d| !DAYS.iter().any(|(n, _)| n == d)) {
            v.add("days", "must be one or more of monday..sunday");
        }
        if self.horizon_days > MAX_HORIZON_DAYS {
            v.add("horizonDays", format!("must be at most {MAX_HORIZON_DAYS}"));
        }
        if self.same_day_cutoff.parse::<Time>().is_err() || self.same_day_cutoff.len() != 5 {
            v.add("sameDayCutoff", "must be a local time HH:MM");
        }
        if TimeZone::get(&self.time_zone).is_err() {
            v.add("timeZone", "must be an IANA time zone such as Europe/Paris");
        }
        if let Some(address) = self.contact_email.take() {
            self.contact_email = v.check("contactEmail", text::email(&address));
        }
        self.fees.validate(&mut v);
        self.vat.validate(&mut v);
        if self.countries.len() * self.postcode_prefixes.len().max(1) > MAX_COVERAGE {
            v.add(
                "postcodePrefixes",
                format!("at most {MAX_COVERAGE} countries times postcode prefixes"),
            );
        }
        v.finish(|| self)
    }

    /// The (country, postcode prefix) pairs its area is indexed under (issue 54): each of its
    /// countries with each prefix (`""` when it takes every postcode), or [`ANY_COUNTRY`] for a
    /// shop that set none. The catalogue finds the shops that reach a postcode by reading the
    /// few pairs that postcode could be under ([`WhereAndWhen::coverage_keys`]), never the shops.
    pub fn coverage(&self) -> Vec<(String, String)> {
        let countries = if self.countries.is_empty() {
            vec![ANY_COUNTRY.to_owned()]
        } else {
            self.countries.clone()
        };
        let prefixes = if self.postcode_prefixes.is_empty() {
            vec![String::new()]
        } else {
            self.postcode_prefixes.clone()
        };
        let mut pairs: Vec<(String, String)> = countries
            .iter()
            .flat_map(|c| prefixes.iter().map(move |p| (c.clone(), p.clone())))
            .collect();
        pairs.sort();
        pairs.dedup();
        pairs
    }

    /// Whether the shop takes a delivery to `place` on its date at `now`: its area covers the
    /// address and the date is one it still takes (its days, horizon and same-day cut-off):
    /// what checkout would accept.
    pub fn reaches(&self, place: &WhereAndWhen, now: Timestamp) -> bool {
        let address = Address {
            street: String::new(),
            postcode: place.postcode.clone(),
            city: String::new(),
            country: place.country.clone(),
        };
        self.covers(&address).is_ok() && self.still_takes(&place.date, now).is_ok()
    }

    /// What delivering to `place` costs in `currency` at `now` (its zone's fee, and the
    /// same-day surcharge on the shop's today).
    pub fn fee_to(&self, place: &WhereAndWhen, currency: Currency, now: Timestamp) -> Money {
        let same_day = date_after(now, 0, &self.time_zone).is_some_and(|today| today == place.date);
        Pricing::new(&self.fees, &self.vat, &place.postcode, same_day, currency).delivery_fee
    }

    fn delivers_on(&self, day: Weekday) -> bool {
        self.days.iter().any(|d| d == day_name(day))
    }

    fn covers(&self, address: &Address) -> Result<(), FieldError> {
        if !self.countries.is_empty() && !self.countries.contains(&address.country) {
            return Err(FieldError::new(
                "delivery.address.country",
                format!("the shop delivers to {} only", self.countries.join(", ")),
            ));
        }
        let postcode = postcode_key(&address.postcode);
        if !self.postcode_prefixes.is_empty()
            && !self
                .postcode_prefixes
                .iter()
                .any(|p| postcode.starts_with(p.as_str()))
        {
            return Err(FieldError::new(
                "delivery.address.postcode",
                format!(
                    "outside the shop's delivery area (postcodes starting {})",
                    self.postcode_prefixes.join(", ")
                ),
            ));
        }
        Ok(())
    }

    /// Checks `caller`'s delivery request against these settings at `now`: each problem a
    /// field error named as the request names it (`delivery.date`, ...). The contact address
    /// must be the caller's verified one: order mail goes to nobody else.
    pub fn check(
        &self,
        request: &DeliveryRequest,
        caller: &Identity,
        now: Timestamp,
    ) -> Result<Delivery, Vec<FieldError>> {
        let mut v = Validation::new();
        let name = v.check(
            "delivery.recipient.name",
            text::name(&request.recipient.name),
        );
        let recipient_phone = phone(&request.recipient.phone);
        if recipient_phone.is_none() {
            v.add(
                "delivery.recipient.phone",
                "must be an international number such as +33 6 12 34 56 78",
            );
        }
        let street = v.check(
            "delivery.address.street",
            text::clean(&request.address.street, 1, 200, false),
        );
        let city = v.check(
            "delivery.address.city",
            text::clean(&request.address.city, 1, 100, false),
        );
        let postcode = postcode_key(&request.address.postcode);
        if postcode.is_empty()
            || postcode.len() > 10
            || !postcode.bytes().all(|b| b.is_ascii_alphanumeric())
        {
            v.add(
                "delivery.address.postcode",
                "must be 1 to 10 letters or digits",
            );
        }
        let country = country_code(&request.address.country);
        if country.is_none() {
            v.add(
                "delivery.address.country",
                "must be an ISO 3166-1 alpha-2 code such as FR",
            );
        }
        let card_message = match &request.card_message {
            None => None,
            Some(message) => v
                .check(
                    "delivery.cardMessage",
                    text::clean(message, 0, CARD_MESSAGE_MAX, true),
                )
                .filter(|m| !m.is_empty()),
        };
        let contact_email = match &request.contact_email {
            Some(address) if !address.trim().is_empty() => {
                v.check("delivery.contactEmail", caller.own_address(address))
            }
            _ => None,
        };
        let address = Address {
            street: street.clone().unwrap_or_default(),
            postcode: request.address.postcode.trim().to_owned(),
            city: city.clone().unwrap_or_default(),
            country: country.clone().unwrap_or_default(),
        };
        if country.is_some() && !postcode.is_empty() {
            if let Err(error) = self.covers(&address) {
                v.add(error.field, error.message);
            }
        }
        let date = match request.date.parse::<Date>() {
            Ok(date) if request.date.len() == 10 => self.check_date(date, now).map(|()| date),
            _ => Err("must be a date YYYY-MM-DD".to_owned()),
        };
        let date = v.check("delivery.date", date);
        v.finish(|| Delivery {
            recipient_name: name.unwrap_or_default(),
            recipient_phone: recipient_phone.unwrap_or_default(),
            address,
            date: date.map(|d| d.to_string()).unwrap_or_default(),
            slot: request.slot,
            card_message,
            contact_email,
        })
    }

    /// What delivering `delivery` costs in `currency`, priced at `now`: its zone's fee, and the
    /// same-day surcharge when its date is the shop's today.
    pub fn price(&self, delivery: &Delivery, currency: Currency, now: Timestamp) -> Pricing {
        let same_day =
            date_after(now, 0, &self.time_zone).is_some_and(|today| today == delivery.date);
        Pricing::new(
            &self.fees,
            &self.vat,
            &delivery.address.postcode,
            same_day,
            currency,
        )
    }

    /// Whether the shop still takes a delivery on `date` (`YYYY-MM-DD`) at `now`: checked again
    /// at payment, as the cut-off or the day itself may have passed since the details were
    /// given.
    pub fn still_takes(&self, date: &str, now: Timestamp) -> Result<(), String> {
        let date: Date = date
            .parse()
            .map_err(|_| format!("{date:?} is not a date"))?;
        self.check_date(date, now)
    }

    /// The first date the shop takes a delivery for at `now` (today before the cut-off, else
    /// the next day it delivers within its horizon): what a checkout offers first.
    pub fn first_date(&self, now: Timestamp) -> Option<String> {
        (0..=self.horizon_days)
            .filter_map(|days| date_after(now, days, &self.time_zone))
            .find(|text| {
                text.parse::<Date>()
                    .is_ok_and(|date| self.check_date(date, now).is_ok())
            })
    }

    /// A delivery date is the shop's: not before its today, within its horizon, on a day it
    /// delivers, and today only before its cut-off.
    fn check_date(&self, date: Date, now: Timestamp) -> Result<(), String> {
        let zone = TimeZone::get(&self.time_zone).map_err(|e| e.to_string())?;
        let local = jiff::Timestamp::from_millisecond(now.as_millis())
            .map_err(|e| e.to_string())?
            .to_zoned_datetime(zone);
        let today = local.date();
        if date < today {
            return Err(format!(
                "must not be in the past (the shop's today is {today})"
            ));
        }
        let last = today
            .checked_add(jiff::Span::new().days(i64::from(self.horizon_days)))
            .map_err(|e| e.to_string())?;
        if date > last {
            return Err(format!(
                "must be within {} days (until {last})",
                self.horizon_days
            ));
        }
        if !self.delivers_on(date.weekday()) {
            return Err(format!(
                "the shop does not deliver on {}",
                day_name(date.weekday())
            ));
        }
        let cutoff: Time = self
            .same_day_cutoff
            .parse()
            .map_err(|_| "the shop's cut-off")?;
        if date == today && local.time() >= cutoff {
            return Err(format!(
                "same-day delivery closes at {} (the shop's time)",
                self.same_day_cutoff
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> DeliverySettings {
        DeliverySettings {
            countries: vec!["fr".into()],
            postcode_prefixes: vec!["75".into(), "92".into()],
            days: vec![
                "Tuesday".into(),
                "wednesday".into(),
                "thursday".into(),
                "friday".into(),
                "saturday".into(),
            ],
            horizon_days: 14,
            same_day_cutoff: "11:00".into(),
            time_zone: "Europe/Paris".into(),
            contact_email: Some("shop@example.com".into()),
            ..DeliverySettings::unset()
        }
        .validate()
        .unwrap()
    }

    /// Wednesday 2026-12-02 at `hh:mm` in Paris (UTC+1 in winter).
    fn paris(hh: i64, mm: i64) -> Timestamp {
        let utc = jiff::civil::date(2026, 12, 2)
            .at(hh as i8, mm as i8, 0, 0)
            .to_zoned_datetime(TimeZone::get("Europe/Paris").unwrap())
            .unwrap()
            .timestamp();
        Timestamp::from_millis(utc.as_millisecond())
    }

    fn place(postcode: &str, date: &str) -> WhereAndWhen {
        WhereAndWhen::parse(postcode, "fr", date).expect("a valid place")
    }

    #[test]
    fn a_shop_reaches_a_place_exactly_when_checkout_would_take_it() {
        let shop = settings();
        let now = paris(10, 0);
        // Wednesday before the 11:00 cut-off, a Paris postcode: reached.
        assert!(shop.reaches(&place("75 011", "2026-12-02"), now));
        // After the cut-off, on a Monday, out of the area, abroad, past the horizon: not.
        assert!(!shop.reaches(&place("75011", "2026-12-02"), paris(11, 1)));
        assert!(!shop.reaches(&place("75011", "2026-12-07"), now));
        assert!(!shop.reaches(&place("69003", "2026-12-03"), now));
        let abroad = WhereAndWhen::parse("75011", "BE", "2026-12-03").unwrap();
        assert!(!shop.reaches(&abroad, now));
        assert!(!shop.reaches(&place("75011", "2026-12-30"), now));
        // Whatever `reaches` says, checkout says the same for the same address and date.
        for (postcode, date, at) in [
            ("75011", "2026-12-02", now),
            ("69003", "2026-12-03", now),
            ("75011", "2026-12-02", paris(11, 1)),
        ] {
            let mut request = request(date);
            request.address.postcode = postcode.into();
            let checkout = shop.check(&request, &ana(), at).is_ok();
            assert_eq!(
                shop.reaches(&place(postcode, date), at),
                checkout,
                "{postcode} {date}"
            );
        }
    }

    #[test]
    fn a_postcode_is_found_under_every_pair_a_shop_reaching_it_is_indexed_under() {
        let shop = settings();
        assert_eq!(
            shop.coverage(),
            [
                ("FR".to_owned(), "75".to_owned()),
                ("FR".to_owned(), "92".to_owned())
            ]
        );
        assert_eq!(
            DeliverySettings::unset().coverage(),
            [(ANY_COUNTRY.to_owned(), String::new())]
        );
        let keys = place("75011", "2026-12-02").coverage_keys();
        assert!(shop.coverage().iter().any(|pair| keys.contains(pair)));
        assert!(keys.contains(&(ANY_COUNTRY.to_owned(), String::new())));
        assert!(!place("69003", "2026-12-02")
            .coverage_keys()
            .iter()
            .any(|k| shop.coverage().contains(k)));
        let fields =
            crate::validation::refused_fields(WhereAndWhen::parse("", "France", "02/12/2026"));
        assert_eq!(fields, ["query/postcode", "query/country", "query/date"]);
    }

    fn request(date: &str) -> DeliveryRequest {
        DeliveryRequest {
            recipient: RecipientRequest {
                name: "Camille Martin".into(),
                phone: "+33 6 12 34 56 78".into(),
            },
            address: Address {
                street: "12 rue des Fleurs".into(),
                postcode: "75011".into(),
                city: "Paris".into(),
                country: "fr".into(),
            },
            date: date.into(),
            slot: Some(Slot::Morning),
            card_message: Some("Happy birthday!".into()),
            contact_email: Some("ana@example.com".into()),
        }
    }

    /// The customer the requests are from, signed in with `ana@example.com` verified.
    fn ana() -> Identity {
        Identity {
            subject: crate::ids::CustomerId::parse("ana").unwrap(),
            role: crate::identity::Role::Customer,
            vendor_id: None,
            email: Some("ana@example.com".into()),
        }
    }

    fn fields(result: Result<Delivery, Vec<FieldError>>) -> Vec<(String, String)> {
        result
            .err()
            .unwrap_or_default()
            .into_iter()
            .map(|e| (e.field, e.message))
            .collect()
    }

    #[test]
    fn a_date_given_before_the_cutoff_is_refused_after_it() {
        let s = settings();
        assert_eq!(s.still_takes("2026-12-02", paris(10, 59)), Ok(()));
        assert!(s
            .still_takes("2026-12-02", paris(11, 0))
            .unwrap_err()
            .contains("same-day delivery closes at 11:00"));
        assert!(
            s.still_takes("2026-12-01", paris(9, 0)).is_err(),
            "the past"
        );
    }

    #[test]
    fn the_first_date_is_today_before_the_cutoff_else_the_next_delivery_day() {
        let s = settings();
        // Wednesday 2 December, Paris.
        assert_eq!(s.first_date(paris(9, 0)).as_deref(), Some("2026-12-02"));
        assert_eq!(s.first_date(paris(11, 0)).as_deref(), Some("2026-12-03"));
        let mut weekend = s.clone();
        weekend.days = vec!["sunday".into()];
        assert_eq!(
            weekend.first_date(paris(9, 0)).as_deref(),
            Some("2026-12-06")
        );
        weekend.horizon_days = 3;
        assert_eq!(weekend.first_date(paris(9, 0)), None, "beyond the horizon");
    }

    #[test]
    fn a_good_request_is_normalised() {
        let delivery = settings()
            .check(&request("2026-12-03"), &ana(), paris(9, 0))
            .unwrap();
        assert_eq!(delivery.recipient_phone, "+33612345678");
        assert_eq!(delivery.address.country, "FR");
        assert_eq!(delivery.date, "2026-12-03");
        assert_eq!(delivery.card_message.as_deref(), Some("Happy birthday!"));
    }

    #[test]
    fn each_problem_is_a_clear_field_error() {
        let s = settings();
        let at = paris(9, 0);
        let cases: Vec<(DeliveryRequest, &str, &str)> = vec![
            (
                request("2026-12-01"),
                "delivery.date",
                "must not be in the past",
            ),
            (
                request("2026-12-24"),
                "delivery.date",
                "must be within 14 days",
            ),
            (
                request("2026-12-07"),
                "delivery.date",
                "does not deliver on monday",
            ),
            (request("12/03/2026"), "delivery.date", "YYYY-MM-DD"),
            (
                DeliveryRequest {
                    contact_email: Some("someone.else@example.com".into()),
                    ..request("2026-12-03")
                },
                "delivery.contactEmail",
                "the verified email address you signed in with",
            ),
            (
                DeliveryRequest {
                    card_message: Some("x".repeat(201)),
                    ..request("2026-12-03")
                },
                "delivery.cardMessage",
                "at most 200",
            ),
            (
                DeliveryRequest {
                    recipient: RecipientRequest {
                        name: "Camille".into(),
                        phone: "06 12 34 56 78".into(),
                    },
                    ..request("2026-12-03")
                },
                "delivery.recipient.phone",
                "international number",
            ),
            (
                DeliveryRequest {
                    address: Address {
                        postcode: "69001".into(),
                        ..request("").address
                    },
                    ..request("2026-12-03")
                },
                "delivery.address.postcode",
                "outside the shop's delivery area",
            ),
            (
                DeliveryRequest {
                    address: Address {
                        country: "BE".into(),
                        ..request("").address
                    },
                    ..request("2026-12-03")
                },
                "delivery.address.country",
                "delivers to FR only",
            ),
        ];
        for (request, field, message) in cases {
            let errors = fields(s.check(&request, &ana(), at));
            assert_eq!(errors.len(), 1, "{request:?}: {errors:?}");
            assert_eq!(errors[0].0, field);
            assert!(errors[0].1.contains(message), "{}", errors[0].1);
        }
        let everything = fields(s.check(&DeliveryRequest::default(), &ana(), at));
        let named: Vec<&str> = everything.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(
            named,
            [
                "delivery.recipient.name",
                "delivery.recipient.phone",
                "delivery.address.street",
                "delivery.address.city",
                "delivery.address.postcode",
                "delivery.address.country",
                "delivery.date",
            ]
        );
    }

    #[test]
    fn today_is_bookable_until_the_shops_cutoff_in_its_own_time_zone() {
        let s = settings();
        assert!(s
            .check(&request("2026-12-02"), &ana(), paris(10, 59))
            .is_ok());
        let late = fields(s.check(&request("2026-12-02"), &ana(), paris(11, 0)));
        assert_eq!(late[0].0, "delivery.date");
        assert!(late[0].1.contains("closes at 11:00"), "{}", late[0].1);
        // 23:30 UTC on the 1st is already the 2nd in Paris: the 1st is in the past there.
        let past = fields(s.check(&request("2026-12-01"), &ana(), paris(0, 30)));
        assert!(
            past[0].1.contains("the shop's today is 2026-12-02"),
            "{}",
            past[0].1
        );
    }

    #[test]
    fn settings_are_checked_by_field() {
        let bad = DeliverySettings {
            countries: vec!["France".into()],
            postcode_prefixes: vec!["75-".into()],
            days: vec!["someday".into()],
            horizon_days: 365,
            same_day_cutoff: "25:00".into(),
            time_zone: "Mars/Olympus".into(),
            contact_email: Some("shop@".into()),
            ..DeliverySettings::unset()
        };
        let named = crate::validation::refused_fields(bad.validate());
        assert_eq!(
            named,
            [
                "countries",
                "postcodePrefixes",
                "days",
                "horizonDays",
                "sameDayCutoff",
                "timeZone",
                "contactEmail"
            ]
        );
    }
}

//! What a shop earned, day by day, and what the marketplace's commission came to (issue 41):
//! read from the analytics projection ([`crate::analytics`]), which adds each paid order's gross
//! and fee and each rejected order's refund and returned fee to its shop's day, once per event.
//!
//! A day's net is `gross − fees − refunds + fees refunded`: what the shop's connected account
//! was credited that day. Beside it, the payouts the provider made from that account to the
//! shop's bank, by arrival day (Stripe's, read on the shop's behalf; the simulated ledger's
//! locally).

use std::fmt::Write as _;

use std::collections::{BTreeMap, BTreeSet};

use bouquet_domain::identity::{Identity, Role};
use bouquet_domain::{Currency, Money, VendorId};
use bouquet_payments::GatewayError;
use serde::Serialize;

use crate::problem::ApiError;
use crate::queries::QueryError;
use crate::App;

/// One shop's day in one currency.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EarningsDay {
    /// `YYYY-MM-DD` (UTC).
    pub date: String,
    pub gross: Money,
    pub fees: Money,
    pub refunds: Money,
    pub fees_refunded: Money,
    pub net: Money,
    /// What the PSP paid out to the shop's bank, arriving that day.
    pub payouts: Money,
    pub orders: i64,
}

/// A shop's earnings over a period: each day with money, and the period's totals per currency.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Earnings {
    pub vendor_id: VendorId,
    pub from: String,
    pub to: String,
    pub days: Vec<EarningsDay>,
    pub totals: Vec<EarningsDay>,
}

/// A day's sums in minor units: gross, fees, refunds, fees refunded, payouts; and orders.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Sums {
    money: [i64; 5],
    orders: i64,
}

impl Sums {
    fn add(&mut self, other: Sums) {
        for (sum, add) in self.money.iter_mut().zip(other.money) {
            *sum += add;
        }
        self.orders += other.orders;
    }

    fn row(self, date: String, currency: Currency) -> EarningsDay {
        let money = |minor| Money::from_minor(minor, currency);
        let [gross, fees, refunds, fees_refunded, payouts] = self.money;
        EarningsDay {
            date,
            gross: money(gross),
            fees: money(fees),
            refunds: money(refunds),
            fees_refunded: money(fees_refunded),
            net: money(gross - fees - refunds + fees_refunded),
            payouts: money(payouts),
            orders: self.orders,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EarningsError {
    #[error(transparent)]
    Query(#[from] QueryError),
    /// The PSP did not list the shop's payouts: the report is not given without them.
    #[error("the payment provider did not list the payouts")]
    Payouts(#[source] GatewayError),
}

impl From<bouquet_store::StoreError> for EarningsError {
    fn from(error: bouquet_store::StoreError) -> Self {
        EarningsError::Query(error.into())
    }
}

/// `vendor_id`'s earnings from `from` to `to` (`YYYY-MM-DD`, inclusive), for its members (the
/// administrators read the commission across shops, [`marketplace_commission`]): the
/// projection's days and the PSP's payouts to the shop's account (read side by side).
pub async fn vendor_earnings(
    app: &App,
    caller: &Identity,
    vendor_id: VendorId,
    from: &str,
    to: &str,
) -> Result<Earnings, EarningsError> {
    caller.require_vendor(vendor_id).map_err(QueryError::from)?;
    let (counters, shop) = tokio::try_join!(
        app.store.vendor_days(vendor_id, from, to),
        app.store.vendor(vendor_id, false)
    )?;
    let payouts = match shop.and_then(|shop| shop.payout_account) {
        Some(account) => app
            .payments
            .payouts(&account.account_id, from, to)
            .await
            .map_err(EarningsError::Payouts)?,
        None => Vec::new(),
    };
    let mut days: BTreeMap<(String, String), Sums> = BTreeMap::new();
    for day in &counters {
        let amount = |m: &BTreeMap<String, i64>, code: &str| m.get(code).copied().unwrap_or(0);
        let currencies: BTreeSet<&String> =
            [&day.revenue, &day.fees, &day.refunds, &day.fees_refunded]
                .iter()
                .flat_map(|m| m.keys())
                .collect();
        for code in currencies {
            days.entry((day.day.clone(), code.clone()))
                .or_default()
                .add(Sums {
                    money: [
                        amount(&day.revenue, code),
                        amount(&day.fees, code),
                        amount(&day.refunds, code),
                        amount(&day.fees_refunded, code),
                        0,
                    ],
                    orders: day.sales,
                });
        }
    }
    for payout in payouts
        .iter()
        .filter(|p| p.status != "failed" && p.status != "canceled")
    {
        let mut sums = Sums::default();
        sums.money[4] = payout.amount_minor;
        days.entry((payout.arrival_date.clone(), payout.currency.clone()))
            .or_default()
            .add(sums);
    }
    let mut totals: BTreeMap<String, Sums> = BTreeMap::new();
    let mut rows = Vec::new();
    for ((date, code), sums) in days {
        let Ok(currency) = Currency::parse(&code) else {
            continue;
        };
        totals.entry(code).or_default().add(sums);
        rows.push(sums.row(date, currency));
    }
    let totals = totals
        .into_iter()
        .filter_map(|(code, sums)| {
            Some(sums.row(format!("{from}..{to}"), Currency::parse(&code).ok()?))
        })
        .collect();
    Ok(Earnings {
        vendor_id,
        from: from.to_owned(),
        to: to.to_owned(),
        days: rows,
        totals,
    })
}

/// The earnings as CSV (RFC 4180): one row per day and currency, amounts as decimals.
pub fn csv(earnings: &Earnings) -> String {
    let mut out =
        String::from("date,currency,orders,gross,fees,refunds,fees_refunded,net,payouts\r\n");
    for day in &earnings.days {
        let _ = write!(
            out,
            "{},{},{},{},{},{},{},{},{}\r\n",
            day.date,
            day.gross.currency(),
            day.orders,
            day.gross.amount(),
            day.fees.amount(),
            day.refunds.amount(),
            day.fees_refunded.amount(),
            day.net.amount(),
            day.payouts.amount()
        );
    }
    out
}

/// The marketplace's commission on one day from one shop.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ShopCommission {
    pub date: String,
    pub vendor_id: String,
    /// Fees less fees refunded.
    pub commission: Money,
}

/// The commission per day and shop from `from` to `to`, for the administrators.
pub async fn marketplace_commission(
    app: &App,
    caller: &Identity,
    from: &str,
    to: &str,
) -> Result<Vec<ShopCommission>, QueryError> {
    caller.require(Role::Admin)?;
    let days = app.store.commission_days(from, to).await?;
    Ok(days
        .into_iter()
        .flat_map(|day| {
            day.by_shop
                .into_iter()
                .filter_map(move |((shop, code), minor)| {
                    Some(ShopCommission {
                        date: day.day.clone(),
                        vendor_id: shop,
                        commission: Money::from_minor(minor, Currency::parse(&code).ok()?),
                    })
                })
        })
        .collect())
}

impl From<EarningsError> for ApiError {
    fn from(error: EarningsError) -> Self {
        match error {
            EarningsError::Query(error) => error.into(),
            EarningsError::Payouts(_) => ApiError::payment_unavailable(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_day_nets_its_fees_and_refunds_and_writes_as_csv() {
        let eur = Currency::parse("EUR").unwrap();
        let day = Sums {
            money: [5000, 750, 2000, 300, 1200],
            orders: 2,
        }
        .row("2026-12-06".into(), eur);
        assert_eq!(day.net.minor(), 5000 - 750 - 2000 + 300);
        let earnings = Earnings {
            vendor_id: VendorId::generate(),
            from: "2026-12-01".into(),
            to: "2026-12-06".into(),
            days: vec![day],
            totals: vec![],
        };
        assert_eq!(
            csv(&earnings),
            "date,currency,orders,gross,fees,refunds,fees_refunded,net,payouts\r\n\
             2026-12-06,EUR,2,50.00,7.50,20.00,3.00,25.50,12.00\r\n"
        );
    }
}

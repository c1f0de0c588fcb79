//! What a shop earned, day by day, and what the marketplace's commission came to (issue 41):
//! read from the analytics projection ([`crate::analytics`]), which adds each paid order's gross
//! and fee and each rejected order's refund and returned fee to its shop's day, once per event.
//!
//! A day's net is `gross − fees − refunds + fees refunded`: what the shop's connected account
//! was credited that day. Payouts from the account to the shop's bank are Stripe's and are not
//! in this report yet (docs/status.md).

use std::fmt::Write as _;

use bouquet_domain::identity::{Identity, Role};
use bouquet_domain::{Currency, Money, VendorId};
use serde::Serialize;

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

impl EarningsDay {
    fn new(
        date: &str,
        currency: Currency,
        [gross, fees, refunds, fees_refunded]: [i64; 4],
    ) -> Self {
        let money = |minor| Money::from_minor(minor, currency);
        Self {
            date: date.to_owned(),
            gross: money(gross),
            fees: money(fees),
            refunds: money(refunds),
            fees_refunded: money(fees_refunded),
            net: money(gross - fees - refunds + fees_refunded),
            orders: 0,
        }
    }
}

/// `vendor_id`'s earnings from `from` to `to` (`YYYY-MM-DD`, inclusive), for its members (the
/// administrators read the commission across shops, [`marketplace_commission`]).
pub async fn vendor_earnings(
    app: &App,
    caller: &Identity,
    vendor_id: VendorId,
    from: &str,
    to: &str,
) -> Result<Earnings, QueryError> {
    caller.require_vendor(vendor_id)?;
    let counters = app.store.vendor_days(vendor_id, from, to).await?;
    let mut days = Vec::new();
    let mut totals: std::collections::BTreeMap<String, [i64; 4]> = Default::default();
    for day in &counters {
        let currencies: std::collections::BTreeSet<&String> =
            [&day.revenue, &day.fees, &day.refunds, &day.fees_refunded]
                .iter()
                .flat_map(|m| m.keys())
                .collect();
        for code in currencies {
            let Ok(currency) = Currency::parse(code) else {
                continue;
            };
            let amount =
                |m: &std::collections::BTreeMap<String, i64>| m.get(code).copied().unwrap_or(0);
            let amounts = [
                amount(&day.revenue),
                amount(&day.fees),
                amount(&day.refunds),
                amount(&day.fees_refunded),
            ];
            let total = totals.entry(code.clone()).or_default();
            for (sum, add) in total.iter_mut().zip(amounts) {
                *sum += add;
            }
            let mut row = EarningsDay::new(&day.day, currency, amounts);
            row.orders = day.sales;
            days.push(row);
        }
    }
    let totals = totals
        .into_iter()
        .filter_map(|(code, amounts)| {
            let currency = Currency::parse(&code).ok()?;
            let mut row = EarningsDay::new(to, currency, amounts);
            row.date = format!("{from}..{to}");
            row.orders = days
                .iter()
                .filter(|d| d.gross.currency() == currency)
                .map(|d| d.orders)
                .sum();
            Some(row)
        })
        .collect();
    Ok(Earnings {
        vendor_id,
        from: from.to_owned(),
        to: to.to_owned(),
        days,
        totals,
    })
}

/// The earnings as CSV (RFC 4180): one row per day and currency, amounts as decimals.
pub fn csv(earnings: &Earnings) -> String {
    let mut out = String::from("date,currency,orders,gross,fees,refunds,fees_refunded,net\r\n");
    for day in &earnings.days {
        let _ = write!(
            out,
            "{},{},{},{},{},{},{},{}\r\n",
            day.date,
            day.gross.currency(),
            day.orders,
            day.gross.amount(),
            day.fees.amount(),
            day.refunds.amount(),
            day.fees_refunded.amount(),
            day.net.amount()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_day_nets_its_fees_and_refunds_and_writes_as_csv() {
        let eur = Currency::parse("EUR").unwrap();
        let mut day = EarningsDay::new("2026-12-06", eur, [5000, 750, 2000, 300]);
        day.orders = 2;
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
            "date,currency,orders,gross,fees,refunds,fees_refunded,net\r\n\
             2026-12-06,EUR,2,50.00,7.50,20.00,3.00,25.50\r\n"
        );
    }
}

//! A paid order's invoice (issue 41): its shop, the shop's VAT number, the order's number in the
//! shop's invoice sequence, and net, VAT and gross per line, for delivery and in total (the
//! receipt's figures, [`bouquet_domain::pricing`]). Read by the order's customer, its shop and
//! the administrators, as the order is.

use bouquet_domain::identity::Identity;
use bouquet_domain::pricing::{Amounts, ReceiptLine};
use bouquet_domain::{DomainError, Money, OrderId, OrderStatus, Timestamp};
use bouquet_mail::documents::{invoice_page, DocumentError, Invoice, InvoiceLine};

use crate::problem::ApiError;
use crate::queries::{self, QueryError};
use crate::App;

#[derive(Debug, thiserror::Error)]
pub enum InvoiceError {
    #[error(transparent)]
    Query(#[from] QueryError),
    /// The order was never paid: it has no invoice.
    #[error("order {0} has no invoice: it is {1}")]
    NotInvoiced(OrderId, OrderStatus),
    #[error(transparent)]
    Render(#[from] DocumentError),
}

/// The shop's code in an invoice number: the first letters of its name (`FLEU-000017`), so a
/// customer tells two shops' invoices apart.
fn shop_code(shop: &str) -> String {
    let code: String = shop
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(4)
        .collect::<String>()
        .to_ascii_uppercase();
    if code.is_empty() {
        "SHOP".into()
    } else {
        code
    }
}

/// The number as printed: the shop's code and the number, six digits at least.
pub fn invoice_label(shop: &str, number: u64) -> String {
    format!("{}-{number:06}", shop_code(shop))
}

/// A VAT rate as printed: `5.5 %`, `20 %`.
pub fn vat_rate(basis_points: u16) -> String {
    let whole = basis_points / 100;
    match basis_points % 100 {
        0 => format!("{whole} %"),
        part if part % 10 == 0 => format!("{whole}.{} %", part / 10),
        part => format!("{whole}.{part:02} %"),
    }
}

fn row(description: &str, basis_points: Option<u16>, amounts: &Amounts) -> InvoiceLine {
    InvoiceLine {
        description: description.to_owned(),
        rate: basis_points.map(vat_rate).unwrap_or_default(),
        net: amounts.net.amount(),
        vat: amounts.vat.amount(),
        gross: amounts.gross.amount(),
    }
}

fn line(line: &ReceiptLine) -> InvoiceLine {
    row(
        &line.description,
        Some(line.vat_basis_points),
        &line.amounts,
    )
}

/// "Freshness markdown: listed at 40.00, sold at 36.00": what the line above was reduced by.
fn markdown_row(ordered: &bouquet_domain::OrderLine) -> InvoiceLine {
    let list = ordered.list_price.unwrap_or(ordered.price);
    let off = Money::from_minor(list.minor() - ordered.price.minor(), list.currency());
    InvoiceLine {
        description: format!(
            "Freshness markdown on {}: listed at {}, sold at {} (-{})",
            ordered.name,
            list.amount(),
            ordered.price.amount(),
            off.amount()
        ),
        rate: String::new(),
        net: String::new(),
        vat: String::new(),
        gross: String::new(),
    }
}

/// The invoice page of `order_id`, for `caller`.
pub async fn page(
    app: &App,
    caller: &Identity,
    order_id: OrderId,
    now: Timestamp,
) -> Result<String, InvoiceError> {
    let order = queries::order(app, caller, order_id).await?.as_seen_at(now);
    let (Some(number), Some(receipt)) = (order.invoice_number, order.receipt.as_ref()) else {
        return Err(InvoiceError::NotInvoiced(order_id, order.status));
    };
    let shop = app
        .store
        .vendor_name(order.vendor_id)
        .await
        .map_err(QueryError::from)?
        .unwrap_or_else(|| "Your florist".into());
    let mut lines = Vec::with_capacity(receipt.lines.len() + 1);
    for (i, receipt_line) in receipt.lines.iter().enumerate() {
        lines.push(line(receipt_line));
        // A bouquet its freshness had marked down: the markdown as a line of its own, for
        // reading (its amounts are in the line above, so the columns still add up).
        if let Some(ordered) = order.lines.get(i).filter(|l| l.list_price.is_some()) {
            lines.push(markdown_row(ordered));
        }
    }
    lines.push(line(&receipt.delivery));
    let status_note = match order.status {
        OrderStatus::Rejected => "The shop turned this order down; it was refunded in full.",
        _ => "",
    };
    Ok(invoice_page(&Invoice {
        marketplace: "Bouquet".into(),
        vat_number: order.pricing.as_ref().and_then(|p| p.vat.number.clone()),
        number: invoice_label(&shop, number),
        shop,
        order: order.order_id.to_string(),
        paid_on: order
            .payment_started_at
            .unwrap_or(order.updated_at)
            .to_rfc3339()[..10]
            .to_owned(),
        delivery_date: order
            .delivery
            .as_ref()
            .map(|d| d.date.clone())
            .unwrap_or_default(),
        currency: order.total.currency().code().to_owned(),
        lines,
        total: row("Total", None, &receipt.total),
        status_note: status_note.to_owned(),
    })?)
}

impl From<InvoiceError> for ApiError {
    fn from(error: InvoiceError) -> Self {
        match error {
            InvoiceError::Query(error) => error.into(),
            InvoiceError::NotInvoiced(_, status) => DomainError::OrderInvalidState(status).into(),
            InvoiceError::Render(error) => ApiError::internal(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_rates_print_as_a_customer_reads_them() {
        assert_eq!(invoice_label("Fleur & Co", 17), "FLEU-000017");
        assert_eq!(invoice_label("ø", 1_234_567), "SHOP-1234567");
        assert_eq!(vat_rate(550), "5.5 %");
        assert_eq!(vat_rate(2000), "20 %");
        assert_eq!(vat_rate(1025), "10.25 %");
    }
}

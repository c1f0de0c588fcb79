//! Documents the customer keeps (issue 41): a paid order's invoice, as a printable HTML page. The
//! same engine as the emails, strict about missing values, with every value HTML-escaped.

use std::sync::LazyLock;

use minijinja::{AutoEscape, Environment, UndefinedBehavior};
use serde::Serialize;

static DOCUMENTS: LazyLock<Environment<'static>> = LazyLock::new(|| {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_auto_escape_callback(|_| AutoEscape::Html);
    env.add_template("invoice.html", include_str!("../templates/invoice.html"))
        .unwrap_or_else(|e| panic!("invoice.html: {e}"));
    env
});

/// One row of the invoice: amounts already written as decimals.
#[derive(Clone, Debug, Serialize)]
pub struct InvoiceLine {
    pub description: String,
    /// `5.5 %`.
    pub rate: String,
    pub net: String,
    pub vat: String,
    pub gross: String,
}

/// What an invoice page shows.
#[derive(Clone, Debug, Serialize)]
pub struct Invoice {
    pub marketplace: String,
    pub shop: String,
    pub vat_number: Option<String>,
    /// `{shop's code}-000017`.
    pub number: String,
    pub order: String,
    pub paid_on: String,
    pub delivery_date: String,
    pub currency: String,
    pub lines: Vec<InvoiceLine>,
    pub total: InvoiceLine,
    /// Said when the order was refunded since.
    pub status_note: String,
}

#[derive(Debug, thiserror::Error)]
#[error("the invoice could not be rendered: {0}")]
pub struct DocumentError(#[from] minijinja::Error);

/// The invoice page.
pub fn invoice_page(invoice: &Invoice) -> Result<String, DocumentError> {
    Ok(DOCUMENTS.get_template("invoice.html")?.render(invoice)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_invoice_shows_its_lines_and_escapes_every_value() {
        let line = |description: &str| InvoiceLine {
            description: description.into(),
            rate: "5.5 %".into(),
            net: "23.22".into(),
            vat: "1.28".into(),
            gross: "24.50".into(),
        };
        let page = invoice_page(&Invoice {
            marketplace: "Bouquet".into(),
            shop: "Fleur & <Co>".into(),
            vat_number: Some("FR12345678901".into()),
            number: "FLEU-000017".into(),
            order: "01JF3WA1B3C5D7E9F1G3H5J7K9".into(),
            paid_on: "2026-12-06".into(),
            delivery_date: "2026-12-07".into(),
            currency: "EUR".into(),
            lines: vec![line("<script>alert(1)</script>"), line("Delivery")],
            total: line("Total"),
            status_note: String::new(),
        })
        .unwrap();
        assert!(page.contains("Fleur &amp; &lt;Co&gt;"));
        assert!(!page.contains("<script>alert"));
        assert!(page.contains("Invoice FLEU-000017"));
        assert_eq!(page.matches("<tr data-line>").count(), 2);
        assert!(page.contains("VAT number FR12345678901"));
    }
}

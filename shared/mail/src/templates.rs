//! The emails' words: one plain-text and one HTML template per kind, in `templates/`, with
//! `{{name}}` placeholders. The text's first line is the subject (`Subject: ...`). Values are
//! HTML-escaped in the HTML form.

use std::collections::BTreeMap;

use crate::Email;

/// Which message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Template {
    /// To the customer, when paid.
    Receipt,
    Accepted,
    OutForDelivery,
    Delivered,
    /// To the customer, with the refund.
    Rejected,
    /// To the shop, for a new paid order.
    NewOrder,
}

impl Template {
    fn sources(self) -> (&'static str, &'static str) {
        match self {
            Template::Receipt => (
                include_str!("../templates/receipt.txt"),
                include_str!("../templates/receipt.html"),
            ),
            Template::Accepted => (
                include_str!("../templates/accepted.txt"),
                include_str!("../templates/accepted.html"),
            ),
            Template::OutForDelivery => (
                include_str!("../templates/out_for_delivery.txt"),
                include_str!("../templates/out_for_delivery.html"),
            ),
            Template::Delivered => (
                include_str!("../templates/delivered.txt"),
                include_str!("../templates/delivered.html"),
            ),
            Template::Rejected => (
                include_str!("../templates/rejected.txt"),
                include_str!("../templates/rejected.html"),
            ),
            Template::NewOrder => (
                include_str!("../templates/new_order.txt"),
                include_str!("../templates/new_order.html"),
            ),
        }
    }
}

/// The values a template's placeholders take.
pub type Vars = BTreeMap<&'static str, String>;

fn fill(source: &str, vars: &Vars, escape: bool) -> String {
    let mut out = source.to_owned();
    for (name, value) in vars {
        let value = if escape {
            html_escape(value)
        } else {
            value.clone()
        };
        out = out.replace(&format!("{{{{{name}}}}}"), &value);
    }
    out
}

fn html_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `template` for `to`, with `vars` filled in.
pub fn render(template: Template, to: &str, vars: &Vars) -> Email {
    let (text, html) = template.sources();
    let text = fill(text, vars, false);
    let (subject, body) = text.split_once('\n').unwrap_or((&text, ""));
    Email {
        to: to.to_owned(),
        subject: subject.trim_start_matches("Subject:").trim().to_owned(),
        text: body.trim_start().to_owned(),
        html: fill(html, vars, true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Template; 6] = [
        Template::Receipt,
        Template::Accepted,
        Template::OutForDelivery,
        Template::Delivered,
        Template::Rejected,
        Template::NewOrder,
    ];

    fn vars() -> Vars {
        Vars::from([
            ("marketplace", "Bouquet".to_owned()),
            ("shop", "Fleur & <Co>".to_owned()),
            ("order", "01JF3WA1B3C5D7E9F1G3H5J7K9".to_owned()),
            ("bouquets", "Peonies".to_owned()),
            ("total", "24.50 EUR".to_owned()),
            ("recipient", "Camille Martin".to_owned()),
            ("phone", "+33612345678".to_owned()),
            ("address", "12 rue des Fleurs, 75011 Paris, FR".to_owned()),
            ("date", "2026-12-24 (morning)".to_owned()),
            ("card", "Joyeux Noël".to_owned()),
            ("reason", "Closed for the holidays".to_owned()),
            ("refund", "24.50 EUR".to_owned()),
        ])
    }

    #[test]
    fn every_template_has_a_subject_both_forms_and_no_placeholder_left() {
        for template in ALL {
            let email = render(template, "ana@example.com", &vars());
            assert!(
                !email.subject.is_empty() && !email.subject.contains('\n'),
                "{template:?}"
            );
            assert!(
                email.subject.contains("Bouquet") || email.subject.contains("Fleur"),
                "{template:?}: {}",
                email.subject
            );
            for body in [&email.text, &email.html] {
                assert!(!body.contains("{{"), "{template:?}: {body}");
                assert!(body.contains("01JF3WA1B3C5D7E9F1G3H5J7K9"), "{template:?}");
            }
            assert!(
                email.html.contains("Fleur &amp; &lt;Co&gt;"),
                "{template:?}: escaped"
            );
            assert!(
                email.text.contains("Fleur & <Co>"),
                "{template:?}: as typed"
            );
        }
        let rejected = render(Template::Rejected, "ana@example.com", &vars());
        assert!(
            rejected.text.contains("Closed for the holidays")
                && rejected.text.contains("24.50 EUR")
        );
    }
}

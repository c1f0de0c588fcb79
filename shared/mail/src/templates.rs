//! The emails' words: one plain-text and one HTML template per kind, in `templates/`, in
//! minijinja syntax (`{{ name }}`). The text's first line is the subject (`Subject: ...`).
//!
//! minijinja fills every placeholder in one pass, so a value is only ever text: a bouquet named
//! `Roses {{ phone }}` stays that, it never becomes the recipient's phone. Values are
//! HTML-escaped in the `.html` form and only there, and a variable the caller did not give is an
//! error rather than a blank, so a typo in a template fails the tests below.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use minijinja::{AutoEscape, Environment, UndefinedBehavior};

use crate::Email;

/// Which message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Template {
    /// To the customer, when paid.
    Receipt,
    Accepted,
    OutForDelivery,
    Delivered,
    /// To the customer, when the shop attached a photo of the delivery (proof of delivery).
    DeliveryPhoto,
    /// To the customer, with the refund.
    Rejected,
    /// To the shop, for a new paid order.
    NewOrder,
    /// To the shop, when one of its vases raised a care alert or a bouquet went past its best
    /// (issue 53).
    CareAlert,
}

impl Template {
    const ALL: [Template; 8] = [
        Template::Receipt,
        Template::Accepted,
        Template::OutForDelivery,
        Template::Delivered,
        Template::DeliveryPhoto,
        Template::Rejected,
        Template::NewOrder,
        Template::CareAlert,
    ];

    /// The templates about an order (the vars of `bouquet_app::notifications::vars`): all but
    /// the last, the shop's care alert.
    #[cfg(test)]
    const ORDER: &'static [Template] = Template::ALL.split_last().expect("templates").1;

    /// The stem of its files, and of its names in the environment.
    fn name(self) -> &'static str {
        match self {
            Template::Receipt => "receipt",
            Template::Accepted => "accepted",
            Template::OutForDelivery => "out_for_delivery",
            Template::Delivered => "delivered",
            Template::DeliveryPhoto => "delivery_photo",
            Template::Rejected => "rejected",
            Template::NewOrder => "new_order",
            Template::CareAlert => "care_alert",
        }
    }

    /// Compiled into the binary: nothing to find on the Lambda's disk.
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
            Template::DeliveryPhoto => (
                include_str!("../templates/delivery_photo.txt"),
                include_str!("../templates/delivery_photo.html"),
            ),
            Template::Rejected => (
                include_str!("../templates/rejected.txt"),
                include_str!("../templates/rejected.html"),
            ),
            Template::NewOrder => (
                include_str!("../templates/new_order.txt"),
                include_str!("../templates/new_order.html"),
            ),
            Template::CareAlert => (
                include_str!("../templates/care_alert.txt"),
                include_str!("../templates/care_alert.html"),
            ),
        }
    }
}

/// The values a template's placeholders take.
pub type Vars = BTreeMap<&'static str, String>;

/// A template could not be rendered: it names a value that was not given (an order without
/// delivery details, or a typo the tests catch). Trying again with the same values fails alike.
/// The engine's words are in the message (which value, where): a Lambda's error report shows
/// the message alone, not its sources.
#[derive(Debug, thiserror::Error)]
#[error("the {template:?} email could not be rendered: {cause}")]
pub struct RenderError {
    template: Template,
    cause: minijinja::Error,
}

/// Per template three entries: `NAME.subject.txt` (the text's first line without `Subject:`),
/// `NAME.txt` (the rest) and `NAME.html`. The subject is a template of its own so that a line
/// break in a value cannot move where the subject ends.
static ENVIRONMENT: LazyLock<Environment<'static>> = LazyLock::new(|| {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    // Escaping is chosen by name, never by the values: HTML for `.html`, none for plain text.
    env.set_auto_escape_callback(|name| {
        if name.ends_with(".html") {
            AutoEscape::Html
        } else {
            AutoEscape::None
        }
    });
    // The files end with a newline and so did the emails before minijinja.
    env.set_keep_trailing_newline(true);
    for template in Template::ALL {
        let name = template.name();
        let (text, html) = template.sources();
        let (first, body) = text.split_once('\n').unwrap_or((text, ""));
        let subject = first
            .strip_prefix("Subject:")
            .unwrap_or_else(|| panic!("{name}.txt starts with `Subject:`"));
        for (form, source) in [
            ("subject.txt", subject.trim()),
            ("txt", body.trim_start()),
            ("html", html),
        ] {
            // The templates are in the binary and every one is rendered by the tests, so a
            // syntax error cannot ship.
            env.add_template_owned(format!("{name}.{form}"), source)
                .unwrap_or_else(|e| panic!("{name}.{form}: {e}"));
        }
    }
    env
});

/// `template` for `to`, with `vars` filled in.
pub fn render(template: Template, to: &str, vars: &Vars) -> Result<Email, RenderError> {
    let fill = |form: &str| {
        ENVIRONMENT
            .get_template(&format!("{}.{form}", template.name()))
            .and_then(|t| t.render(vars))
            .map_err(|cause| RenderError { template, cause })
    };
    Ok(Email {
        to: to.to_owned(),
        subject: one_line(&fill("subject.txt")?),
        text: fill("txt")?,
        html: fill("html")?,
    })
}

/// Each run of line breaks and other control characters as one space: the subject template is
/// one line, so any break came from a value, and in a subject it would end the subject early or,
/// written into a MIME header, start a header of its own (`Bcc: ...`).
fn one_line(subject: &str) -> String {
    let breaks = |c: char| c.is_control() || matches!(c, '\u{2028}' | '\u{2029}');
    let mut out = String::with_capacity(subject.len());
    let mut gap = false;
    for c in subject.trim().chars() {
        if breaks(c) {
            gap = true;
            continue;
        }
        if gap && !out.is_empty() {
            out.push(' ');
        }
        gap = false;
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names `bouquet_app::notifications::vars` gives, for an order with delivery details
    /// (every email is about one: they are required before payment).
    const CALLER_VARS: [&str; 15] = [
        "marketplace",
        "photo",
        "vat",
        "invoice",
        "shop",
        "order",
        "bouquets",
        "total",
        "reason",
        "refund",
        "recipient",
        "phone",
        "address",
        "date",
        "card",
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
            (
                "vat",
                "Peonies: net 23.22 + VAT 1.28 at 5.5 % = 24.50 EUR".to_owned(),
            ),
            ("invoice", "FLEU-000017".to_owned()),
            (
                "photo",
                "The shop took a photo at the door: sign in and open the order to see it."
                    .to_owned(),
            ),
        ])
    }

    /// A value no template holds and no other value contains, to count where a var lands.
    fn marker(name: &str) -> String {
        format!("@@{name}@@")
    }

    fn markers() -> Vars {
        CALLER_VARS.into_iter().map(|n| (n, marker(n))).collect()
    }

    /// minijinja's HTML escaping, written out so that a change to it shows here.
    fn escaped(value: &str) -> String {
        let mut out = String::new();
        for c in value.chars() {
            match c {
                '&' => out.push_str("&amp;"),
                '<' => out.push_str("&lt;"),
                '>' => out.push_str("&gt;"),
                '"' => out.push_str("&quot;"),
                '\'' => out.push_str("&#x27;"),
                '/' => out.push_str("&#x2f;"),
                c => out.push(c),
            }
        }
        out
    }

    fn is_one_line(subject: &str) -> bool {
        !subject
            .chars()
            .any(|c| c.is_control() || matches!(c, '\u{2028}' | '\u{2029}'))
    }

    #[test]
    fn the_vars_the_callers_give_are_the_ones_tested() {
        let given: Vec<_> = vars().into_keys().collect();
        let mut expected = CALLER_VARS.to_vec();
        expected.sort_unstable();
        assert_eq!(given, expected);
    }

    #[test]
    fn every_template_renders_with_the_vars_the_callers_give() {
        for &template in Template::ORDER {
            let email =
                render(template, "ana@example.com", &vars()).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(email.to, "ana@example.com");
            assert!(
                !email.subject.is_empty() && is_one_line(&email.subject),
                "{template:?}"
            );
            assert!(
                email.subject.contains("Bouquet") || email.subject.contains("Fleur"),
                "{template:?}: {}",
                email.subject
            );
            assert!(!email.text.starts_with("Subject"), "{template:?}");
            for body in [&email.text, &email.html] {
                assert!(
                    !body.contains("{{") && !body.contains("{%"),
                    "{template:?}: {body}"
                );
                assert!(body.contains("01JF3WA1B3C5D7E9F1G3H5J7K9"), "{template:?}");
                assert!(body.ends_with('\n'), "{template:?}: as the file");
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
        let rejected = render(Template::Rejected, "ana@example.com", &vars()).unwrap();
        assert!(
            rejected.text.contains("Closed for the holidays")
                && rejected.text.contains("24.50 EUR")
        );
        let receipt = render(Template::Receipt, "ana@example.com", &vars()).unwrap();
        assert_eq!(
            receipt.subject,
            "Your order at Fleur & <Co> is paid (Bouquet)"
        );
        assert!(receipt.text.starts_with(
            "Thank you: your order 01JF3WA1B3C5D7E9F1G3H5J7K9 at Fleur & <Co> is paid.\n"
        ));
    }

    #[test]
    fn a_var_a_template_uses_but_was_not_given_is_an_error_not_a_blank() {
        let all = markers();
        for &template in Template::ORDER {
            let email = render(template, "ana@example.com", &all).unwrap();
            let whole = format!("{}\n{}\n{}", email.subject, email.text, email.html);
            let mut used = 0;
            for name in CALLER_VARS {
                if !whole.contains(&marker(name)) {
                    continue;
                }
                used += 1;
                let mut lacking = all.clone();
                lacking.remove(name);
                let Err(error) = render(template, "ana@example.com", &lacking) else {
                    panic!("{template:?} rendered without {name}");
                };
                let message = error.to_string();
                assert!(message.contains(&format!("{template:?}")), "{message}");
                assert!(message.contains("undefined"), "{message}");
            }
            assert!(used >= 3, "{template:?} uses {used} vars");
        }
    }

    #[test]
    fn the_reported_injections_stay_literal() {
        let mut vars = vars();
        vars.insert("bouquets", "Roses {{phone}}".into());
        vars.insert("card", "{{shop}} {{recipient}} {{total}}".into());
        for template in [Template::Receipt, Template::NewOrder] {
            let email = render(template, "ana@example.com", &vars).unwrap();
            for body in [&email.text, &email.html] {
                assert!(body.contains("Roses {{phone}}"), "{template:?}: {body}");
                assert!(
                    body.contains("{{shop}} {{recipient}} {{total}}"),
                    "{template:?}: {body}"
                );
            }
        }
        let receipt = render(Template::Receipt, "ana@example.com", &vars).unwrap();
        assert!(!receipt.text.contains("+33612345678") && !receipt.html.contains("+33612345678"));
    }

    /// Template syntax, markup, entities, line breaks, bidi controls and a 100 KB value.
    fn hostile() -> Vec<String> {
        let mut values: Vec<String> = [
            "{{phone}}",
            "{{ phone }}",
            "Roses {{phone}}",
            "{{shop}} {{recipient}} {{total}}",
            "{% raw %}",
            "{% endraw %}",
            "{% raw %}{{ phone }}{% endraw %}",
            "{{ 7*7 }}",
            "{{",
            "}}",
            "{# not a comment #}",
            "{%- if true -%}yes{%- endif -%}",
            "{{ range(10) }} {{ self }} {{ __class__ }}",
            "${phone} %s {0}",
            "<script>alert(1)</script>",
            "\"><img src=x onerror=alert(1)>",
            "' onmouseover='alert(1)",
            "&amp;",
            "&lt;b&gt; &#60; &",
            "Fleur\r\nBcc: evil@example.com\nSubject: free flowers",
            "line\u{2028}separator\u{2029}paragraph\u{85}next\u{b}tab\tend",
            "\u{202E}fdp.exe",
            "\u{200F}ورود\u{200F} \u{202B}embedded\u{202C}",
            "",
        ]
        .map(str::to_owned)
        .to_vec();
        let mut long = String::new();
        while long.len() < 100 * 1024 {
            long.push_str("🌹 Roses {{ phone }} <b>&amp;</b> \u{202E}\n");
        }
        values.push(long);
        values
    }

    #[test]
    fn hostile_values_in_every_field_stay_text_escaped_in_html_alone() {
        let baseline: Vec<_> = Template::ORDER
            .iter()
            .map(|&t| (t, render(t, "ana@example.com", &markers()).unwrap()))
            .collect();
        for value in hostile() {
            assert!(!value.contains("49") && !value.contains("@@"));
            let shown: String = value.chars().take(60).collect();
            for field in CALLER_VARS {
                let mut vars = markers();
                vars.insert(field, value.clone());
                for (template, base) in &baseline {
                    let email = render(*template, "ana@example.com", &vars)
                        .unwrap_or_else(|e| panic!("{template:?} {field}: {e}"));
                    let at = || format!("{template:?}, {field} = {shown:?}");
                    let mark = marker(field);
                    // Where the marker was, the value is, as typed in the text and escaped
                    // (once) in the HTML; no other var comes out more often than it did.
                    if !value.is_empty() {
                        assert_eq!(
                            email.text.matches(value.as_str()).count(),
                            base.text.matches(&mark).count(),
                            "text: {}",
                            at()
                        );
                        assert_eq!(
                            email.html.matches(&escaped(&value)).count(),
                            base.html.matches(&mark).count(),
                            "html: {}",
                            at()
                        );
                        if base.subject.contains(&mark) {
                            assert!(email.subject.contains(&one_line(&value)), "{}", at());
                        }
                    }
                    for other in CALLER_VARS.into_iter().filter(|n| *n != field) {
                        let other = marker(other);
                        for (got, was) in [
                            (&email.subject, &base.subject),
                            (&email.text, &base.text),
                            (&email.html, &base.html),
                        ] {
                            assert_eq!(got.matches(&other).count(), was.matches(&other).count());
                        }
                    }
                    for form in [&email.subject, &email.text, &email.html] {
                        assert!(!form.contains("49"), "evaluated: {}", at());
                    }
                    assert!(is_one_line(&email.subject), "{}", at());
                    assert!(
                        !email.html.contains("<script") && !email.html.contains("<img"),
                        "{}",
                        at()
                    );
                    if value.contains(['<', '>', '"']) {
                        assert!(!email.html.contains(value.as_str()), "{}", at());
                    }
                }
            }
        }
    }

    #[test]
    fn a_line_break_in_a_value_cannot_add_a_subject_or_header_line() {
        let mut vars = vars();
        vars.insert(
            "shop",
            "Fleur\r\nBcc: evil@example.com\n\nSubject: free".into(),
        );
        vars.insert("marketplace", "Bouquet\u{2028}X-Spam: no\u{85}".into());
        let email = render(Template::Accepted, "ana@example.com", &vars).unwrap();
        assert_eq!(
            email.subject,
            "Fleur Bcc: evil@example.com Subject: free accepted your order (Bouquet X-Spam: no )"
        );
        assert!(email
            .text
            .starts_with("Fleur\r\nBcc: evil@example.com\n\nSubject: free accepted your order"));
    }

    #[test]
    fn html_escapes_an_ampersand_exactly_once() {
        let mut vars = vars();
        vars.insert("shop", "Fleur & Co".into());
        vars.insert("bouquets", "Roses &amp; lilies".into());
        for &template in Template::ORDER {
            let email = render(template, "ana@example.com", &vars).unwrap();
            assert!(email.html.contains("Fleur &amp; Co"), "{template:?}");
            assert!(!email.html.contains("&amp;amp; Co"), "{template:?}");
            assert_eq!(
                email.html.matches("&amp;").count(),
                email.html.matches("Fleur &amp; Co").count()
                    + email.html.matches("Roses &amp;amp; lilies").count(),
                "{template:?}: every & escaped once, none twice"
            );
            assert!(!email.html.contains("&amp;amp;amp;"), "{template:?}");
            assert!(email.text.contains("Fleur & Co") && !email.text.contains("&amp; Co"));
        }
    }

    #[test]
    fn one_line_collapses_each_run_of_breaks_to_one_space() {
        assert_eq!(one_line("a\r\n\nb\u{2028}c\u{85}d\te"), "a b c d e");
        assert_eq!(one_line("\na\n"), "a");
        assert_eq!(one_line("\u{202E}a\u{200F}"), "\u{202E}a\u{200F}");
    }
}

#[cfg(test)]
mod care_alert_tests {
    use super::*;

    fn care_vars() -> Vars {
        Vars::from([
            ("marketplace", "Bouquet".to_owned()),
            ("shop", "Fleur & <Co>".to_owned()),
            ("vase", "01JF3W9X2K4M6P8R0T2V4X6Z8B".to_owned()),
            ("what", "The water is low".to_owned()),
            (
                "reading",
                "It read water 12 %, 19.5 °C, humidity 60 %, 800 lux.".to_owned(),
            ),
        ])
    }

    #[test]
    fn the_care_alert_renders_escaped_in_html_alone_and_every_var_is_required() {
        let email = render(Template::CareAlert, "shop@example.com", &care_vars()).unwrap();
        assert_eq!(email.subject, "The water is low at Fleur & <Co> (Bouquet)");
        assert!(email.text.contains("vase 01JF3W9X2K4M6P8R0T2V4X6Z8B"));
        assert!(email.text.contains("water 12 %"));
        assert!(email.html.contains("Fleur &amp; &lt;Co&gt;"));
        for name in care_vars().into_keys() {
            let mut lacking = care_vars();
            lacking.remove(name);
            assert!(
                render(Template::CareAlert, "shop@example.com", &lacking).is_err(),
                "{name}"
            );
        }
    }
}

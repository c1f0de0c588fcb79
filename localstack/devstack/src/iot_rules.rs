//! AWS IoT topic-rule SQL (version 2016-03-23): the subset the project's rules use.
//!
//! Pure: parse once with [`RuleSql::parse`], then [`RuleSql::apply`] each message.
//!
//! Supported: `SELECT <items> FROM '<topic filter>'` where an item is `*`, `topic()`,
//! `topic(n)`, `timestamp()`, a payload attribute path (`a`, `a.b`) or a string / number /
//! boolean / null literal, each optionally `AS alias` (required for everything but `*` and
//! attribute paths): what the template's rules use. Anything else (`WHERE`, other functions,
//! arithmetic, `CASE`, nested `SELECT`, ...) is refused at parse time rather than silently
//! evaluated wrongly.
//!
//! Semantics follow AWS's `Undefined`: a missing attribute (or `topic(n)` past the last
//! level) is Undefined and left out of the SELECT result.
//!
//! Payloads: rules here only apply to JSON object payloads. AWS would still run a rule on a
//! binary payload (attributes are Undefined, `SELECT *` passes the bytes through), but our
//! result type is a JSON object, so a payload that is not a JSON object leaves the rule
//! unapplied (`None`) whatever the SELECT says.

use std::fmt;

use serde_json::{Map, Number, Value};

/// Why a rule's SQL was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RuleSqlError {
    #[error("unexpected character {ch:?} at byte {at}")]
    UnexpectedChar { ch: char, at: usize },
    #[error("unterminated string literal starting at byte {at}")]
    UnterminatedString { at: usize },
    #[error("malformed number {text:?} at byte {at}")]
    BadNumber { text: String, at: usize },
    #[error("expected {expected} at byte {at}, found {found}")]
    Expected {
        expected: &'static str,
        found: String,
        at: usize,
    },
    #[error("unsupported in this local rule engine: {0}")]
    Unsupported(String),
    #[error("SELECT item {0} needs an alias (`{0} AS name`)")]
    MissingAlias(String),
    #[error("invalid topic filter {filter:?} in FROM: {reason}")]
    InvalidTopicFilter {
        filter: String,
        reason: &'static str,
    },
    #[error("topic(n) needs a whole number n >= 1, got {0}")]
    BadTopicLevel(String),
}

/// A parsed topic rule.
#[derive(Debug, Clone)]
pub struct RuleSql {
    items: Vec<SelectItem>,
    from: String,
}

impl RuleSql {
    pub fn parse(sql: &str) -> Result<RuleSql, RuleSqlError> {
        let tokens = lex(sql)?;
        Parser { tokens, pos: 0 }.statement()
    }

    /// The FROM topic filter, e.g. "vases/+/heartbeat".
    pub fn topic_filter(&self) -> &str {
        &self.from
    }

    /// None when the topic does not match FROM or the payload is not a JSON object (see the
    /// module docs). Otherwise the SELECT result, a JSON object.
    pub fn apply(&self, topic: &str, payload: &[u8], now_millis: i64) -> Option<Value> {
        if !topic_matches(&self.from, topic) {
            return None;
        }
        let Ok(Value::Object(doc)) = serde_json::from_slice::<Value>(payload) else {
            return None;
        };
        let ctx = Ctx {
            topic,
            doc: &doc,
            now_millis,
        };
        let mut out = Map::new();
        for item in &self.items {
            match item {
                SelectItem::All => out.extend(doc.iter().map(|(k, v)| (k.clone(), v.clone()))),
                SelectItem::Expr { expr, key } => {
                    // Undefined values are left out, as AWS does.
                    if let Some(v) = expr.eval(&ctx) {
                        out.insert(key.clone(), v);
                    }
                }
            }
        }
        Some(Value::Object(out))
    }
}

/// MQTT topic filter matching with `+` (exactly one level, possibly empty) and `#` (the
/// parent level and everything below; last level only), as MQTT 3.1.1 section 4.7 and AWS
/// IoT define it. Topics starting with `$` are not matched by a wildcard in the first level.
/// An invalid filter or topic name matches nothing.
pub fn topic_matches(filter: &str, topic: &str) -> bool {
    if !valid_topic_filter(filter) || !valid_topic_name(topic) {
        return false;
    }
    if topic.starts_with('$') && (filter.starts_with('+') || filter.starts_with('#')) {
        return false;
    }
    let mut filter_levels = filter.split('/');
    let mut topic_levels = topic.split('/');
    loop {
        match (filter_levels.next(), topic_levels.next()) {
            // `#` also matches the parent level: `a/#` matches `a`.
            (Some("#"), _) => return true,
            (Some("+"), Some(_)) => {}
            (Some(f), Some(t)) if f == t => {}
            (None, None) => return true,
            _ => return false,
        }
    }
}

/// Whether `filter` is a well-formed MQTT topic filter: not empty, no NUL, `+` and `#`
/// only as whole levels, `#` only last.
pub fn valid_topic_filter(filter: &str) -> bool {
    if filter.is_empty() || filter.len() > u16::MAX as usize || filter.contains('\0') {
        return false;
    }
    let levels: Vec<&str> = filter.split('/').collect();
    let last = levels.len() - 1;
    levels.iter().enumerate().all(|(i, level)| match *level {
        "+" => true,
        "#" => i == last,
        other => !other.contains(['+', '#']),
    })
}

/// Whether `topic` is a well-formed MQTT topic name (what a PUBLISH may carry): not empty,
/// no NUL, no wildcards.
pub fn valid_topic_name(topic: &str) -> bool {
    !topic.is_empty() && topic.len() <= u16::MAX as usize && !topic.contains(['+', '#', '\0'])
}

// ---------------------------------------------------------------------------------------
// Syntax tree and evaluation

#[derive(Debug, Clone)]
enum SelectItem {
    /// `*`: the whole payload object.
    All,
    Expr {
        expr: Expr,
        key: String,
    },
}

#[derive(Debug, Clone)]
enum Expr {
    Literal(Value),
    Path(Vec<String>),
    /// `topic()` (None) or `topic(n)`, 1-based.
    Topic(Option<usize>),
    Timestamp,
}

struct Ctx<'a> {
    topic: &'a str,
    doc: &'a Map<String, Value>,
    now_millis: i64,
}

impl Expr {
    /// `None` is AWS's Undefined.
    fn eval(&self, ctx: &Ctx<'_>) -> Option<Value> {
        match self {
            Expr::Literal(v) => Some(v.clone()),
            Expr::Path(segments) => {
                let (first, rest) = segments.split_first()?;
                let mut value = ctx.doc.get(first)?;
                for segment in rest {
                    value = value.as_object()?.get(segment)?;
                }
                Some(value.clone())
            }
            Expr::Topic(None) => Some(Value::String(ctx.topic.to_owned())),
            Expr::Topic(Some(n)) => ctx
                .topic
                .split('/')
                .nth(n - 1)
                .map(|level| Value::String(level.to_owned())),
            Expr::Timestamp => Some(Value::from(ctx.now_millis)),
        }
    }
}

// ---------------------------------------------------------------------------------------
// Lexer

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Str(String),
    Num(Number),
    Comma,
    Dot,
    Star,
    LParen,
    RParen,
    End,
}

impl fmt::Display for Tok {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tok::Ident(s) => write!(f, "`{s}`"),
            Tok::Str(s) => write!(f, "string '{s}'"),
            Tok::Num(n) => write!(f, "number {n}"),
            Tok::Comma => f.write_str("`,`"),
            Tok::Dot => f.write_str("`.`"),
            Tok::Star => f.write_str("`*`"),
            Tok::LParen => f.write_str("`(`"),
            Tok::RParen => f.write_str("`)`"),
            Tok::End => f.write_str("end of statement"),
        }
    }
}

fn lex(sql: &str) -> Result<Vec<(Tok, usize)>, RuleSqlError> {
    let bytes = sql.as_bytes();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let start = i;
        let c = bytes[i];
        let next = bytes.get(i + 1).copied();
        let tok = match c {
            b' ' | b'\t' | b'\r' | b'\n' => {
                i += 1;
                continue;
            }
            b',' => Tok::Comma,
            b'.' => Tok::Dot,
            b'*' => Tok::Star,
            b'(' => Tok::LParen,
            b')' => Tok::RParen,
            b'\'' => {
                // SQL style: a quote inside a string is doubled.
                let mut text = String::new();
                let mut j = i + 1;
                loop {
                    let rest = &sql[j..];
                    let Some(q) = rest.find('\'') else {
                        return Err(RuleSqlError::UnterminatedString { at: start });
                    };
                    text.push_str(&rest[..q]);
                    j += q + 1;
                    if bytes.get(j) == Some(&b'\'') {
                        text.push('\'');
                        j += 1;
                    } else {
                        break;
                    }
                }
                tokens.push((Tok::Str(text), start));
                i = j;
                continue;
            }
            b'0'..=b'9' | b'-' if c != b'-' || next.is_some_and(|n| n.is_ascii_digit()) => {
                let mut j = i + 1;
                while j < bytes.len()
                    && (bytes[j].is_ascii_alphanumeric()
                        || bytes[j] == b'.'
                        || ((bytes[j] == b'+' || bytes[j] == b'-')
                            && matches!(bytes[j - 1], b'e' | b'E')))
                {
                    j += 1;
                }
                let text = &sql[i..j];
                let number = text
                    .parse::<Number>()
                    .map_err(|_| RuleSqlError::BadNumber {
                        text: text.to_owned(),
                        at: start,
                    })?;
                tokens.push((Tok::Num(number), start));
                i = j;
                continue;
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let mut j = i + 1;
                while j < bytes.len() && (bytes[j].is_ascii_alphanumeric() || bytes[j] == b'_') {
                    j += 1;
                }
                tokens.push((Tok::Ident(sql[i..j].to_owned()), start));
                i = j;
                continue;
            }
            _ => {
                let ch = sql[i..].chars().next().unwrap_or('?');
                return Err(RuleSqlError::UnexpectedChar { ch, at: start });
            }
        };
        // The single tokens above are one byte each.
        i += 1;
        tokens.push((tok, start));
    }
    tokens.push((Tok::End, sql.len()));
    Ok(tokens)
}

// ---------------------------------------------------------------------------------------
// Parser: recursive descent, OR < AND < NOT < comparison.

const KEYWORDS: &[&str] = &[
    "SELECT", "FROM", "WHERE", "AS", "AND", "OR", "NOT", "TRUE", "FALSE", "NULL",
];

struct Parser {
    tokens: Vec<(Tok, usize)>,
    pos: usize,
}

impl Parser {
    fn peek(&self) -> &Tok {
        // `lex` always ends with `End` and `bump` never moves past it.
        &self.tokens[self.pos].0
    }

    fn at(&self) -> usize {
        self.tokens[self.pos].1
    }

    fn bump(&mut self) -> Tok {
        let tok = self.tokens[self.pos].0.clone();
        if tok != Tok::End {
            self.pos += 1;
        }
        tok
    }

    fn expected(&self, expected: &'static str) -> RuleSqlError {
        RuleSqlError::Expected {
            expected,
            found: self.peek().to_string(),
            at: self.at(),
        }
    }

    fn peek_keyword(&self, keyword: &str) -> bool {
        matches!(self.peek(), Tok::Ident(s) if s.eq_ignore_ascii_case(keyword))
    }

    fn eat_keyword(&mut self, keyword: &str) -> bool {
        let found = self.peek_keyword(keyword);
        if found {
            self.bump();
        }
        found
    }

    fn expect_keyword(
        &mut self,
        keyword: &str,
        expected: &'static str,
    ) -> Result<(), RuleSqlError> {
        if self.eat_keyword(keyword) {
            Ok(())
        } else {
            Err(self.expected(expected))
        }
    }

    /// An identifier that is not a keyword (attribute name or alias), consumed if present.
    fn name(&mut self) -> Option<String> {
        match self.peek() {
            Tok::Ident(word) if !is_keyword(word) => {
                let word = word.clone();
                self.bump();
                Some(word)
            }
            _ => None,
        }
    }

    fn eat(&mut self, tok: &Tok) -> bool {
        let found = self.peek() == tok;
        if found {
            self.bump();
        }
        found
    }

    fn statement(mut self) -> Result<RuleSql, RuleSqlError> {
        self.expect_keyword("SELECT", "SELECT")?;
        let mut items = vec![self.select_item()?];
        while self.eat(&Tok::Comma) {
            items.push(self.select_item()?);
        }
        self.expect_keyword("FROM", "`,` or FROM")?;
        let Tok::Str(from) = self.peek().clone() else {
            return Err(self.expected("a quoted topic filter after FROM"));
        };
        self.bump();
        if !valid_topic_filter(&from) {
            return Err(RuleSqlError::InvalidTopicFilter {
                reason: "wildcards must be whole levels and `#` only last",
                filter: from,
            });
        }
        if self.peek_keyword("WHERE") {
            return Err(RuleSqlError::Unsupported(
                "WHERE (no rule of the template filters)".into(),
            ));
        }
        if *self.peek() != Tok::End {
            return Err(self.expected("end of statement"));
        }
        Ok(RuleSql { items, from })
    }

    fn select_item(&mut self) -> Result<SelectItem, RuleSqlError> {
        if self.eat(&Tok::Star) {
            return Ok(SelectItem::All);
        }
        let expr = self.operand()?;
        let key = if self.eat_keyword("AS") {
            self.name()
                .ok_or_else(|| self.expected("an alias after AS"))?
        } else {
            match &expr {
                Expr::Path(segments) => segments.last().cloned().unwrap_or_default(),
                Expr::Topic(None) => return Err(RuleSqlError::MissingAlias("topic()".into())),
                Expr::Topic(Some(n)) => {
                    return Err(RuleSqlError::MissingAlias(format!("topic({n})")))
                }
                Expr::Timestamp => return Err(RuleSqlError::MissingAlias("timestamp()".into())),
                Expr::Literal(v) => return Err(RuleSqlError::MissingAlias(v.to_string())),
            }
        };
        Ok(SelectItem::Expr { expr, key })
    }

    /// A value: literal, function call or attribute path.
    fn operand(&mut self) -> Result<Expr, RuleSqlError> {
        let at = self.at();
        match self.bump() {
            Tok::Str(s) => Ok(Expr::Literal(Value::String(s))),
            Tok::Num(n) => Ok(Expr::Literal(Value::Number(n))),
            Tok::Ident(word) if word.eq_ignore_ascii_case("true") => Ok(Expr::Literal(true.into())),
            Tok::Ident(word) if word.eq_ignore_ascii_case("false") => {
                Ok(Expr::Literal(false.into()))
            }
            Tok::Ident(word) if word.eq_ignore_ascii_case("null") => Ok(Expr::Literal(Value::Null)),
            Tok::Ident(word) if *self.peek() == Tok::LParen => {
                self.bump();
                self.function(word)
            }
            Tok::Ident(word) if !is_keyword(&word) => {
                let mut segments = vec![word];
                while self.eat(&Tok::Dot) {
                    let segment = self
                        .name()
                        .ok_or_else(|| self.expected("an attribute name after `.`"))?;
                    segments.push(segment);
                }
                Ok(Expr::Path(segments))
            }
            Tok::End => Err(RuleSqlError::Expected {
                expected: "a value",
                found: Tok::End.to_string(),
                at,
            }),
            other => Err(RuleSqlError::Expected {
                expected: "a value (attribute, literal or function)",
                found: other.to_string(),
                at,
            }),
        }
    }

    /// After `name(`: the supported functions and their arguments.
    fn function(&mut self, name: String) -> Result<Expr, RuleSqlError> {
        let expr = if name.eq_ignore_ascii_case("topic") {
            match self.peek().clone() {
                Tok::RParen => Expr::Topic(None),
                Tok::Num(n) => {
                    self.bump();
                    match n.as_u64().and_then(|n| usize::try_from(n).ok()) {
                        Some(level) if level >= 1 => Expr::Topic(Some(level)),
                        _ => return Err(RuleSqlError::BadTopicLevel(n.to_string())),
                    }
                }
                other => return Err(RuleSqlError::BadTopicLevel(other.to_string())),
            }
        } else if name.eq_ignore_ascii_case("timestamp") {
            Expr::Timestamp
        } else {
            return Err(RuleSqlError::Unsupported(format!("function {name}()")));
        };
        if self.eat(&Tok::RParen) {
            Ok(expr)
        } else {
            Err(self.expected("`)`"))
        }
    }
}

fn is_keyword(word: &str) -> bool {
    KEYWORDS.iter().any(|k| k.eq_ignore_ascii_case(word))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const NOW: i64 = 1_796_205_600_000;

    fn apply(sql: &str, topic: &str, payload: Value) -> Option<Value> {
        RuleSql::parse(sql)
            .expect("valid SQL")
            .apply(topic, payload.to_string().as_bytes(), NOW)
    }

    #[test]
    fn heartbeat_example() {
        let sql =
            "SELECT *, topic(2) AS vaseId, timestamp() AS receivedAt FROM 'vases/+/heartbeat'";
        let rule = RuleSql::parse(sql).unwrap();
        assert_eq!(rule.topic_filter(), "vases/+/heartbeat");
        let out = rule.apply(
            "vases/v1/heartbeat",
            br#"{"sentAt":"2026-12-02T10:00:00Z"}"#,
            NOW,
        );
        assert_eq!(
            out,
            Some(json!({"sentAt": "2026-12-02T10:00:00Z", "vaseId": "v1", "receivedAt": NOW}))
        );
        assert_eq!(rule.apply("vases/v1/status", b"{}", NOW), None);
        assert_eq!(rule.apply("vases/v1/v2/heartbeat", b"{}", NOW), None);
    }

    #[test]
    fn select_items_paths_literals_and_overrides() {
        let out = apply(
            "select *, a.b, a.b as deep, 'x' as kind, 2.5 AS ratio, topic() as t, \
             topic(9) as missing, nothere, sentAt as a FROM 'a/b'",
            "a/b",
            json!({"a": {"b": 1}, "sentAt": "s"}),
        );
        // `a` is overridden by the later `sentAt AS a`; Undefined items are left out.
        assert_eq!(
            out,
            Some(
                json!({"a": "s", "b": 1, "deep": 1, "kind": "x", "ratio": 2.5, "t": "a/b", "sentAt": "s"})
            )
        );
        // Without `*`, only the listed items.
        assert_eq!(
            apply(
                "SELECT level FROM 'x'",
                "x",
                json!({"level": 3, "other": 1})
            ),
            Some(json!({"level": 3}))
        );
    }

    #[test]
    fn payload_must_be_a_json_object() {
        let rule = RuleSql::parse("SELECT topic() AS t FROM '#'").unwrap();
        assert_eq!(rule.apply("a", b"not json", NOW), None);
        assert_eq!(rule.apply("a", b"[1,2]", NOW), None);
        assert_eq!(rule.apply("a", b"42", NOW), None);
        assert_eq!(rule.apply("a", b"{}", NOW), Some(json!({"t": "a"})));
    }

    #[test]
    fn keywords_are_case_insensitive() {
        let out = apply(
            "sElEcT Level aS l FrOm 'x'",
            "x",
            json!({"Level": 1, "level": 3}),
        );
        assert_eq!(out, Some(json!({"l": 1})));
    }

    #[test]
    fn parse_errors() {
        let err = |sql: &str| RuleSql::parse(sql).expect_err(sql);
        assert!(matches!(err(""), RuleSqlError::Expected { .. }));
        assert!(matches!(
            err("SELECT FROM 'a'"),
            RuleSqlError::Expected { .. }
        ));
        assert!(matches!(err("SELECT * 'a'"), RuleSqlError::Expected { .. }));
        assert!(matches!(
            err("SELECT * FROM a"),
            RuleSqlError::Expected { .. }
        ));
        assert!(matches!(
            err("SELECT * FROM 'a"),
            RuleSqlError::UnterminatedString { at: 14 }
        ));
        assert!(matches!(
            err("SELECT * FROM 'a/#/b'"),
            RuleSqlError::InvalidTopicFilter { .. }
        ));
        assert!(matches!(
            err("SELECT * FROM 'a+'"),
            RuleSqlError::InvalidTopicFilter { .. }
        ));
        assert!(matches!(
            err("SELECT * FROM ''"),
            RuleSqlError::InvalidTopicFilter { .. }
        ));
        assert!(
            matches!(err("SELECT topic(2) FROM 'a'"), RuleSqlError::MissingAlias(s) if s == "topic(2)")
        );
        assert!(matches!(
            err("SELECT timestamp() FROM 'a'"),
            RuleSqlError::MissingAlias(_)
        ));
        assert!(matches!(
            err("SELECT 'x' FROM 'a'"),
            RuleSqlError::MissingAlias(_)
        ));
        assert!(matches!(
            err("SELECT topic(0) AS t FROM 'a'"),
            RuleSqlError::BadTopicLevel(_)
        ));
        assert!(matches!(
            err("SELECT topic(1.5) AS t FROM 'a'"),
            RuleSqlError::BadTopicLevel(_)
        ));
        assert!(matches!(
            err("SELECT topic('1') AS t FROM 'a'"),
            RuleSqlError::BadTopicLevel(_)
        ));
        assert!(
            matches!(err("SELECT clientid() AS c FROM 'a'"), RuleSqlError::Unsupported(s) if s.contains("clientid"))
        );
        assert!(matches!(
            err("SELECT a + 1 AS b FROM 'a'"),
            RuleSqlError::UnexpectedChar { ch: '+', .. }
        ));
        assert!(matches!(
            err("SELECT * AS x FROM 'a'"),
            RuleSqlError::Expected { .. }
        ));
        assert!(matches!(
            err("SELECT a AS FROM 'a'"),
            RuleSqlError::Expected { .. }
        ));
        assert!(matches!(
            err("SELECT a. FROM 'a'"),
            RuleSqlError::Expected { .. }
        ));
        assert!(
            matches!(err("SELECT * FROM 'a' WHERE a"), RuleSqlError::Unsupported(s) if s.contains("WHERE"))
        );
        assert!(matches!(
            err("SELECT 1.2.3 AS n FROM 'a'"),
            RuleSqlError::BadNumber { .. }
        ));
        assert!(matches!(
            err("SELECT * FROM 'a' LIMIT 1"),
            RuleSqlError::Expected { .. }
        ));
        // Errors say what is wrong, readable as-is.
        assert_eq!(
            err("SELECT a AS FROM 'a'").to_string(),
            "expected an alias after AS at byte 12, found `FROM`"
        );
    }

    #[test]
    fn string_literals_double_their_quotes() {
        assert_eq!(
            apply("SELECT 'it''s' AS s FROM 'a'", "a", json!({})),
            Some(json!({"s": "it's"}))
        );
    }

    #[test]
    fn topic_matching() {
        for (filter, topic, expected) in [
            ("a/b", "a/b", true),
            ("a/b", "a/c", false),
            ("a/b", "a/b/c", false),
            ("#", "a", true),
            ("#", "a/b/c", true),
            ("#", "/", true),
            ("a/#", "a", true), // `#` matches the parent level
            ("a/#", "a/b/c", true),
            ("a/#", "ab", false),
            ("+", "a", true),
            ("+", "a/b", false),
            ("+", "/a", false),
            ("+/+", "/a", true), // empty levels are levels
            ("a/+", "a/", true),
            ("a/+", "a", false), // `+` needs a level to match
            ("a/+/c", "a/c", false),
            ("a/+/c", "a//c", true),
            ("a/+/c", "a/b/x/c", false),
            ("+/+/#", "a/b", true),
            ("$SYS/#", "$SYS/x", true),
            ("#", "$SYS/x", false), // `$` topics hide from leading wildcards
            ("+/x", "$SYS/x", false),
            ("$aws/things/+/shadow", "$aws/things/t1/shadow", true),
            ("a/#/b", "a/x/b", false), // invalid filters match nothing
            ("a+", "a+", false),
            ("a/b", "a/+", false), // invalid topic names match nothing
            ("", "", false),
        ] {
            assert_eq!(
                topic_matches(filter, topic),
                expected,
                "{filter:?} vs {topic:?}"
            );
        }
    }
}

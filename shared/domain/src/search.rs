//! What a customer finds a bouquet by (issue 54): the occasions its florist tags it with, and
//! the words of its name and description, stemmed by the Snowball stemmers (`rust-stemmers`)
//! in English and in French, so `roses` finds `rose` and `anniversaires` finds `anniversaire`.
//! A bouquet keeps the stems of its words (both languages'); a query word matches when one of
//! its stems is among them, and every query word must match.

use rust_stemmers::{Algorithm, Stemmer};
use serde::{Deserialize, Serialize};

use crate::validation::FieldError;

/// The occasions a florist may tag a bouquet with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Occasion {
    Birthday,
    Anniversary,
    Love,
    ThankYou,
    Congratulations,
    GetWell,
    NewBaby,
    Wedding,
    Sympathy,
    JustBecause,
}

impl Occasion {
    pub const ALL: [Occasion; 10] = [
        Occasion::Birthday,
        Occasion::Anniversary,
        Occasion::Love,
        Occasion::ThankYou,
        Occasion::Congratulations,
        Occasion::GetWell,
        Occasion::NewBaby,
        Occasion::Wedding,
        Occasion::Sympathy,
        Occasion::JustBecause,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Occasion::Birthday => "birthday",
            Occasion::Anniversary => "anniversary",
            Occasion::Love => "love",
            Occasion::ThankYou => "thank_you",
            Occasion::Congratulations => "congratulations",
            Occasion::GetWell => "get_well",
            Occasion::NewBaby => "new_baby",
            Occasion::Wedding => "wedding",
            Occasion::Sympathy => "sympathy",
            Occasion::JustBecause => "just_because",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|o| o.name() == text)
    }
}

/// The most occasions one bouquet carries.
pub const MAX_OCCASIONS: usize = 5;
/// The most words a query may have.
pub const MAX_QUERY_WORDS: usize = 5;

/// The occasions as a florist sent them, checked: known names, at most five, each once.
pub fn occasions(names: &[String]) -> Result<Vec<Occasion>, FieldError> {
    let mut found = Vec::with_capacity(names.len());
    for name in names {
        let occasion = Occasion::parse(name).ok_or_else(|| {
            FieldError::new(
                "occasions",
                format!(
                    "{name:?} is not an occasion (one of {})",
                    Occasion::ALL.map(Occasion::name).join(", ")
                ),
            )
        })?;
        if !found.contains(&occasion) {
            found.push(occasion);
        }
    }
    if found.len() > MAX_OCCASIONS {
        return Err(FieldError::new(
            "occasions",
            format!("at most {MAX_OCCASIONS} occasions"),
        ));
    }
    found.sort();
    Ok(found)
}

fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 2)
        .map(str::to_lowercase)
}

/// A word's stems, English's and French's (one when they agree).
fn stems(word: &str) -> Vec<String> {
    let mut stems: Vec<String> = [Algorithm::English, Algorithm::French]
        .into_iter()
        .map(|language| Stemmer::create(language).stem(word).into_owned())
        .collect();
    stems.dedup();
    stems
}

/// The stems a bouquet is found by: every word of `texts`, sorted, each once.
pub fn terms(texts: &[&str]) -> Vec<String> {
    let mut terms: Vec<String> = texts
        .iter()
        .flat_map(|text| words(text))
        .flat_map(|word| stems(&word))
        .collect();
    terms.sort();
    terms.dedup();
    terms
}

/// A customer's query: per word, the stems any of which matches it.
pub fn query(text: &str) -> Result<Vec<Vec<String>>, FieldError> {
    let words: Vec<String> = words(text).collect();
    if words.is_empty() || text.chars().count() > 100 {
        return Err(FieldError::new(
            "query/q",
            "must hold a word of two letters or more, 100 characters at most",
        ));
    }
    if words.len() > MAX_QUERY_WORDS {
        return Err(FieldError::new(
            "query/q",
            format!("at most {MAX_QUERY_WORDS} words"),
        ));
    }
    Ok(words.iter().map(|w| stems(w)).collect())
}

/// Whether a bouquet with `terms` matches `query` (the store's filter says the same).
pub fn matches(terms: &[String], query: &[Vec<String>]) -> bool {
    query
        .iter()
        .all(|stems| stems.iter().any(|stem| terms.contains(stem)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inflected_words_find_each_other_in_english_and_in_french() {
        let bouquet = terms(&[
            "Red Roses",
            "Hand-tied roses for an anniversary; fleurs d'anniversaire",
        ]);
        for (query, found) in [
            ("rose", true),
            ("ROSES red", true),
            ("anniversaries", true),
            ("anniversaires", true),
            ("fleur", true),
            ("tulips", false),
            ("roses tulips", false),
        ] {
            assert_eq!(matches(&bouquet, &query_of(query)), found, "{query}");
        }
    }

    fn query_of(text: &str) -> Vec<Vec<String>> {
        query(text).expect("a valid query")
    }

    #[test]
    fn queries_and_occasions_are_checked() {
        assert!(query("a").is_err());
        assert!(query("one two three four five six").is_err());
        assert!(query(&"x".repeat(101)).is_err());
        assert_eq!(
            occasions(&["love".into(), "birthday".into(), "love".into()]),
            Ok(vec![Occasion::Birthday, Occasion::Love])
        );
        assert!(occasions(&["halloween".into()]).is_err());
        let six: Vec<String> = Occasion::ALL[..6]
            .iter()
            .map(|o| o.name().to_owned())
            .collect();
        assert!(occasions(&six).is_err());
    }
}

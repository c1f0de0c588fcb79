//! Field-level validation problems, collected so a client sees all of them at once.

use serde::Serialize;

/// One problem with one field of the request, by its JSON pointer-like path (`price.amount`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

impl FieldError {
    pub fn new(field: impl Into<String>, message: impl ToString) -> Self {
        Self {
            field: field.into(),
            message: message.to_string(),
        }
    }

    /// The same problem under `parent` (`care` + `waterLowPct` → `care.waterLowPct`).
    pub fn prefixed(self, parent: &str) -> Self {
        Self {
            field: format!("{parent}.{}", self.field),
            ..self
        }
    }
}

/// The fields a refused check names, in order (tests read them).
#[cfg(test)]
pub(crate) fn refused_fields<T: std::fmt::Debug>(
    checked: Result<T, Vec<FieldError>>,
) -> Vec<String> {
    checked
        .expect_err("refused")
        .into_iter()
        .map(|e| e.field)
        .collect()
}

/// Collects field errors while a request is checked.
#[derive(Debug, Default)]
pub struct Validation(Vec<FieldError>);

impl Validation {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn add(&mut self, field: impl Into<String>, message: impl ToString) {
        self.0.push(FieldError::new(field, message));
    }

    /// Records the error of `result`, if any, under `field`, and returns its value.
    pub fn check<T, E: ToString>(&mut self, field: &str, result: Result<T, E>) -> Option<T> {
        match result {
            Ok(value) => Some(value),
            Err(error) => {
                self.add(field, error);
                None
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `Ok(value)` when nothing was recorded, else every recorded error.
    pub fn finish<T>(self, value: impl FnOnce() -> T) -> Result<T, Vec<FieldError>> {
        if self.0.is_empty() {
            Ok(value())
        } else {
            Err(self.0)
        }
    }
}

//! The one error type: a sentence for the user, naming what is missing
//! and what would fix it.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointError(pub String);

impl fmt::Display for EndpointError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for EndpointError {}

pub type Result<T> = std::result::Result<T, EndpointError>;

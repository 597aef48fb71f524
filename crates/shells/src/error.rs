//! Errors that reach the user: each says what failed and what would fix it.

use std::fmt;

#[derive(Debug)]
pub struct ShellError(pub String);

impl ShellError {
    pub fn new(message: impl Into<String>) -> ShellError {
        ShellError(message.into())
    }

    /// Wraps an OS error with what we were doing when it happened.
    pub fn os(doing: &str, error: impl fmt::Display) -> ShellError {
        ShellError(format!("{doing}: {error}"))
    }
}

impl fmt::Display for ShellError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ShellError {}

pub type Result<T> = std::result::Result<T, ShellError>;

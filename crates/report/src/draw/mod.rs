//! Drawing: self-contained SVG charts, and the same SVGs as PNG or PDF.

pub mod plot;
pub mod render;

//! A running path steered from outside (`--control`): the protocol
//! (`protocol`), the elements a controller addresses and how a change
//! reaches their models (`elements`), the socket (`endpoint`), the
//! controllers' threads (`session`), and `control.jsonl`, written and
//! replayed (`record`).
//!
//! It stands on `datapath` (the models it changes and reads) and `sys`
//! (the socket is made as the user who ran emu); nothing of the packet
//! path stands on it.

pub mod elements;
pub mod endpoint;
pub mod protocol;
pub mod record;
pub mod session;

pub use elements::Elements;
pub use endpoint::{Address, Endpoint};
pub use session::{Control, Server};

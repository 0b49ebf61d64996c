//! The engine's primitives: integer time, the event queue, seeded random streams and the slab.

pub mod divisor;
pub mod mem;
pub mod queue;
pub mod rng;
pub mod slab;
pub mod time;

pub use queue::EventQueue;
pub use rng::Rng;
pub use slab::Slab;
pub use time::SimTime;

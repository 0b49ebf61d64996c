//! The engine's primitives: integer time, the event queue and seeded random streams.

pub mod mem;
pub mod queue;
pub mod rng;
pub mod time;

pub use queue::EventQueue;
pub use rng::Rng;
pub use time::SimTime;

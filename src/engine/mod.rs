//! Engines decide events (in memory or in Redis); the replay records what they decided.

pub mod redis;
pub mod replay;

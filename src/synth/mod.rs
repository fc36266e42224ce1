//! Synthetic catalogs: the ETAS model and the USGS CSV layout it is written in.

pub mod etas;
pub mod requests;
mod schedule;
pub mod usgs;

//! A lossless size in a system's own terms, as `min-bucket --for` and a replay report it:
//! one type for every system, named by the registry.

use schemars::JsonSchema;
use serde::Serialize;

/// A system's own lossless setting: its smallest value with which the system, in its own
/// arithmetic, refuses none of the events.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct SystemSize {
    /// The system, as `--for` names it: `nginx`, `haproxy`, `traefik`.
    pub system: String,
    /// The setting, as the system's configuration names it: nginx's `burst`, HAProxy's
    /// `gt` (the N of `http_req_rate(P) gt N`, P the rate's period), Traefik's `burst`.
    pub setting: String,
    /// Its smallest value that refuses none of the events.
    pub value: u64,
    /// With `--key`: the key that needs it, where the system's arithmetic names one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

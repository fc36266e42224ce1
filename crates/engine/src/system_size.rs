//! Lossless sizes in a system's own terms, as `min-bucket --for` reports them.

use schemars::JsonSchema;
use serde::Serialize;

/// A lossless threshold in a system's own terms.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct SystemLimit {
    /// The N of HAProxy's `gt N`.
    pub gt: u64,
    /// With `--key`: the key that needs it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

/// A lossless size in a system's own terms.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct SystemBurst {
    /// The burst the system's configuration takes (nginx's `burst=`, Traefik's `burst`).
    pub burst: u64,
    /// With `--key`: the key that needs it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

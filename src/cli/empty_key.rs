//! The value of a key column read as an empty key, as an access log writes an empty variable.

use clap::Args;

use crate::input::keys::KeyNotes;

/// The value of a key column read as an empty key.
#[derive(Debug, Default, Args)]
pub struct EmptyKeyArg {
    /// With a key, read this value of its column as an empty one, as an access log writes
    /// an empty variable: --empty-key -. nginx, HAProxy and envoy-ratelimit let a request
    /// with an empty key through uncounted; the other limiters key it as any value.
    #[arg(long = "empty-key", value_name = "VALUE", allow_hyphen_values = true)]
    pub value: Option<String>,
}

impl EmptyKeyArg {
    /// The cell a reading tells the empty key's number, reading this value as empty; refused
    /// unless `keyed` (a key column is read).
    pub fn resolve(&self, keyed: bool) -> anyhow::Result<KeyNotes> {
        let names = crate::input::asked::Names::Flags;
        Ok(crate::input::asked::empty_key(self.value.as_deref(), keyed, names)?)
    }
}

//! What decides an event: limiters side by side, each alone, or layers all or nothing.

use crate::layered::Layer;
use crate::recorder::Settings;

/// What decides an event: limiters side by side, each deciding every event alone (one for
/// `replay`, several for `compare`), or layers all or nothing (`--limit`), an event
/// passing only if every layer admits it. A single limit is one limiter side by side with
/// none, or one layer.
#[derive(Clone, Copy, Debug)]
pub enum Policy<'a> {
    /// Each limiter decides alone.
    SideBySide(&'a [Settings]),
    /// Every layer must admit; a refused event charges none.
    AllOrNothing(&'a [Layer]),
}

impl Policy<'_> {
    /// Returns its limits as layers: side by side, each limiter is a layer that sees the
    /// event as it is, its key and its cost.
    pub fn layers(&self) -> Vec<Layer> {
        match *self {
            Policy::SideBySide(settings) => settings
                .iter()
                .map(|&settings| Layer { settings, keyed: true, cost: None, counts_refused: false })
                .collect(),
            Policy::AllOrNothing(layers) => layers.to_vec(),
        }
    }

    /// Whether an event passes only if every limit admits it.
    pub fn all_or_nothing(&self) -> bool {
        matches!(self, Policy::AllOrNothing(_))
    }
}

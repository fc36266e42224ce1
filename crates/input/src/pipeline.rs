//! Reading on a thread of its own: batches of events handed over, keys numbered, in order.

use std::io::Read;
use std::sync::mpsc;

use super::error::{ReadError, Result, keys_error};
use super::event::Event;
use super::keys::{Key, KeyTable, joined};
use super::reading::Reading;
use super::stats::ReadStats;
use super::timeline::Timeline;
use super::values::Values;
use crate::units::time::Timestamp;

/// Whether to go on reading.
pub(super) enum Flow {
    More,
    Stop,
}

/// Events handed from the reading thread at a time: enough that handing them over costs
/// little, few enough (64 KiB) that the memory for them is reused, not mapped afresh.
const BATCH: usize = 4096;

/// Reads every event of a pass and gives it to `take`, in order, until `take` says stop;
/// returns what reading found, or `None` if stopped. With two cores or more the pass runs
/// on a thread of its own, a few batches ahead; it numbers the keys too if the taker is
/// `busy`, else the taker does.
pub(super) fn stream<R: Read + Send, E: From<ReadError>>(
    mut pass: Reading<'_, R>,
    busy: bool,
    mut take: impl FnMut(Event) -> Result<Flow, E>,
) -> Result<Option<ReadStats>, E> {
    if pass.options.threads < 2 {
        while let Some(event) = pass.next_event()? {
            if let Flow::Stop = take(event)? {
                return Ok(None);
            }
        }
        return Ok(Some(pass.stats));
    }
    let (full, batches) = mpsc::sync_channel::<Result<Batch>>(4);
    let (empty, spares) = mpsc::channel::<Batch>();
    let keyed = pass.columns.key.is_some();
    let name = pass.name.clone();
    // The table goes to the thread that numbers the keys.
    let mut keys = KeyTable::telling(&pass.options.key_notes);
    std::thread::scope(|scope| {
        let reader = scope.spawn(move || {
            loop {
                let mut batch = spares.try_recv().unwrap_or_default();
                batch.clear();
                let outcome = loop {
                    match pass.next_kept() {
                        Ok(Some((time, cost))) => {
                            batch.push(time, cost, pass.line(), pass.key_bytes())
                        }
                        Ok(None) => break Ok(true),
                        Err(error) => break Err(error),
                    }
                    if batch.len() == BATCH {
                        break Ok(false);
                    }
                };
                // The events before an error go first, as they would on one thread; a
                // closed channel means the taker has stopped.
                let sent = full.send(Ok(batch));
                match outcome {
                    Ok(true) => return Some(pass.stats),
                    Ok(false) if sent.is_ok() => {}
                    Ok(false) => return None,
                    Err(error) => {
                        let _ = full.send(Err(error));
                        return None;
                    }
                }
            }
        });
        let (taken, keys) = if keyed && busy {
            // A third thread numbers the keys, between reading and taking: numbering
            // millions of new keys costs as much as parsing their rows.
            let (out, numbered) = mpsc::sync_channel::<Result<Batch>>(4);
            let numberer = scope.spawn(move || {
                for received in batches {
                    let mut batch = match received {
                        Ok(batch) => batch,
                        Err(error) => {
                            let _ = out.send(Err(error));
                            break;
                        }
                    };
                    let failed = batch.number(true, &mut keys, &name, 1).err();
                    if out.send(Ok(batch)).is_err() {
                        break;
                    }
                    if let Some(error) = failed {
                        let _ = out.send(Err(error));
                        break;
                    }
                }
                keys
            });
            let taken = take_batches(numbered, empty, &mut take);
            (taken, joined(numberer))
        } else {
            let mut number = |batch: &mut Batch| batch.number(keyed, &mut keys, &name, 1);
            let taken = take_numbered(batches, empty, &mut number, &mut take);
            (taken, keys)
        };
        // The receiver is gone, so a reader still sending stops.
        let stats = joined(reader);
        Ok(if taken? { stats.map(|stats| ReadStats { keys, ..stats }) } else { None })
    })
}

/// Kept rows handed from the reading thread at once: their times and costs, their lines
/// and their keys' bytes, and the keys' numbers once a thread has numbered them.
#[derive(Default)]
pub(super) struct Batch {
    events: Timeline,
    keys: Vec<Key>,
    pub(super) lines: Vec<u64>,
    /// Each event's key, as bytes.
    names: Values,
}

impl Batch {
    fn clear(&mut self) {
        self.events.clear();
        self.keys.clear();
        self.lines.clear();
        self.names.clear();
    }

    #[inline]
    pub(super) fn push(&mut self, time: Timestamp, cost: u64, line: u64, key: &[u8]) {
        self.events.push(time, cost);
        self.lines.push(line);
        self.names.push(key);
    }

    /// Returns event `event` of the batch, once its key is numbered.
    #[inline]
    pub(super) fn event(&self, event: usize) -> Event {
        self.event_keyed(event, self.keys[event])
    }

    /// Returns event `event`, with `key` for its key.
    #[inline]
    pub(super) fn event_keyed(&self, event: usize, key: Key) -> Event {
        Event { time: self.events.times()[event], key, cost: self.events.cost(event) }
    }

    /// Returns the number of events.
    #[inline]
    pub(super) fn len(&self) -> usize {
        self.events.len()
    }

    /// Numbers the keys of the batch in `keys`, all at once, if `keyed`; else gives every
    /// event key 0. If a key gets no number, the batch keeps the events before it, and the
    /// error names its line: its line in the batch, counted from `first`, the line the
    /// batch's line 1 is.
    pub(super) fn number(
        &mut self,
        keyed: bool,
        keys: &mut KeyTable,
        name: &str,
        first: u64,
    ) -> Result<()> {
        let Batch { events, keys: numbers, lines, names } = self;
        numbers.clear();
        if !keyed {
            numbers.resize(events.len(), 0);
            return Ok(());
        }
        let count = events.len();
        let Err(event) = keys.intern_all(count, |n| names.get(n), numbers) else {
            return Ok(());
        };
        events.truncate(event);
        keys_error(name, first + lines[event] - 1, None).map(drop)
    }
}

/// Gives the events of each numbered batch to `take` until it says stop (then `false`),
/// and sends each emptied batch back for reuse. It owns the receiver, so that returning,
/// on any path, lets the threads before it stop.
fn take_batches<E: From<ReadError>>(
    batches: mpsc::Receiver<Result<Batch>>,
    spares: mpsc::Sender<Batch>,
    take: &mut impl FnMut(Event) -> Result<Flow, E>,
) -> Result<bool, E> {
    take_numbered(batches, spares, &mut |_| Ok(()), take)
}

/// Gives the events of each batch, once `number` has numbered its keys, to `take`, as
/// [`take_batches`] does. The events before a key that gets no number are taken first.
fn take_numbered<E: From<ReadError>>(
    batches: mpsc::Receiver<Result<Batch>>,
    spares: mpsc::Sender<Batch>,
    number: &mut impl FnMut(&mut Batch) -> Result<()>,
    take: &mut impl FnMut(Event) -> Result<Flow, E>,
) -> Result<bool, E> {
    for received in batches {
        let mut batch = received?;
        let numbered = number(&mut batch);
        for event in 0..batch.len() {
            if let Flow::Stop = take(batch.event(event))? {
                return Ok(false);
            }
        }
        numbered?;
        // The reader may have finished; then the batch is dropped.
        let _ = spares.send(batch);
    }
    Ok(true)
}

//! Reading event catalogs: the events of a source, filtered, in time order, to a sink.
//!
//! Input already in time order is streamed when it can be read twice (a file, or standard
//! input redirected from one): if a row turns out to be out of order, the input is read
//! again and sorted. A pipe is buffered, at 8 bytes per event. `--emit` keeps every row.

#[cfg(all(unix, feature = "arrow"))]
pub use super::arrow_data::ArrowData;
pub use super::cost::Cost;
pub use super::emit::{Rows, read_rows};
pub use super::error::ReadError;
use super::error::Result;
pub use super::event::Event;
pub use super::filter::{ColumnFilter, RowFilter, TimeFilter};
pub use super::instants::Instants;
pub use super::keys::{Key, KeyNotes, KeyTable, slot};
pub use super::options::{ReadOptions, Ties, available_threads};
use super::pipeline::Flow;
pub use super::sink::Sink;
use super::sorted::read_sorted;
use super::source::Opened;
pub use super::source::Source;
pub use super::stats::ReadStats;
use super::streaming::stream_input;
pub use super::timeline::Timeline;

/// Feeds the events of `source` to a sink, in time order and stable for equal times, and
/// returns it. `fresh` makes the sink; it is called again if streaming has to start over.
///
/// With two cores or more, a second thread reads: it parses the rows and numbers their
/// keys, while this one feeds the sink, so that reading and deciding overlap. The events,
/// the errors and their order are those of reading on one thread.
pub fn read_events<S: Sink>(
    source: &Source,
    options: &ReadOptions,
    mut fresh: impl FnMut() -> S,
) -> Result<(S, ReadStats), S::Error> {
    let mut input = Opened::open(source)?;
    if input.can_rewind() {
        let mut sink = fresh();
        let busy = sink.busy();
        let mut last = None;
        let mut instants = Instants::default();
        let (name, mut ties) = (source.name(), options.ties.spreader());
        let mut emit = |event: Event| sink.event(event);
        let streamed = stream_input(&mut input, source, options, busy, |event: Event| {
            if last.is_some_and(|last| event.time < last) {
                return Ok(Flow::Stop);
            }
            last = Some(event.time);
            instants.see(event.time, event.key);
            match &mut ties {
                Some(spreader) => spreader.push(event, &name, &mut emit)?,
                None => emit(event)?,
            }
            Ok::<_, S::Error>(Flow::More)
        })?;
        if let Some(stats) = streamed {
            if let Some(spreader) = &mut ties {
                spreader.flush(None, &mut emit)?;
            }
            return Ok((sink, ReadStats { instants, ..stats }));
        }
    }
    // Streaming met a row out of time order (or the input is read once): read it again,
    // or on, to sort it; a bar starting over says why.
    let again = ReadOptions { again: input.can_rewind(), ..options.clone() };
    read_sorted(&mut input, source, &again, fresh())
}

#[cfg(all(test, feature = "compressed"))]
mod tests {
    use std::io::Write;

    use super::*;

    /// The times (in seconds) a gzipped CSV of `times` gives, and whether it was sorted.
    fn read_gzipped(times: &[i64]) -> (Vec<i64>, bool) {
        let csv: String = times.iter().map(|t| format!("{t}\n")).collect();
        let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gzip.write_all(format!("time\n{csv}").as_bytes()).unwrap();
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), gzip.finish().unwrap()).unwrap();
        let options = ReadOptions {
            time_format: crate::units::layout::TimeLayout::Named(
                crate::units::time::TimeFormat::UnixS,
            ),
            ..ReadOptions::new()
        };
        let source = Source::Path(file.path().to_owned());
        let (timeline, stats) = read_events(&source, &options, Timeline::new).unwrap();
        let seconds = timeline.events().map(|e| e.time.as_micros() / 1_000_000).collect();
        (seconds, stats.sorted)
    }

    #[test]
    fn a_compressed_file_in_order_streams_and_out_of_order_is_decoded_again() {
        // In order: streamed, nothing kept to sort (as a plain file is).
        assert_eq!(read_gzipped(&[1, 2, 2, 3]), (vec![1, 2, 2, 3], false));
        // Out of order: decoded a second time and sorted, as a plain file is read again.
        assert_eq!(read_gzipped(&[3, 1, 2]), (vec![1, 2, 3], true));
    }

    /// What the progress of a read was last shown: the total, and the rows and bytes.
    static SHOWN: std::sync::Mutex<(Option<u64>, u64, u64)> = std::sync::Mutex::new((None, 0, 0));

    struct Shown;

    impl crate::progress::Progress for Shown {
        fn show(&mut self, rows: u64, bytes: u64) {
            let mut shown = SHOWN.lock().unwrap();
            (shown.1, shown.2) = (rows, bytes);
        }
    }

    #[test]
    fn a_compressed_files_progress_is_its_bytes_on_the_disk() {
        // 200,000 rows of a gzipped CSV, on one thread and on two: the total shown is the
        // file's size on the disk, and the bytes, read off it, come up to it, where the
        // decompressed bytes would pass it many times.
        let csv: String = (0..200_000).map(|t| format!("{t}\n")).collect();
        let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gzip.write_all(format!("time\n{csv}").as_bytes()).unwrap();
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), gzip.finish().unwrap()).unwrap();
        let on_disk = std::fs::metadata(file.path()).unwrap().len();
        for threads in [1, 2] {
            *SHOWN.lock().unwrap() = (None, 0, 0);
            let options = ReadOptions {
                time_format: crate::units::layout::TimeLayout::Named(
                    crate::units::time::TimeFormat::UnixS,
                ),
                progress: Some(|total, _| {
                    SHOWN.lock().unwrap().0 = total;
                    Box::new(Shown)
                }),
                threads,
                ..ReadOptions::new()
            };
            let source = Source::Path(file.path().to_owned());
            read_events(&source, &options, Timeline::new).unwrap();
            let (total, rows, bytes) = *SHOWN.lock().unwrap();
            assert_eq!(total, Some(on_disk), "{threads} threads");
            assert!(
                rows > 0 && bytes > on_disk / 4 && bytes <= on_disk,
                "{threads}: {bytes} of {on_disk}"
            );
        }
    }
}

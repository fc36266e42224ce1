//! Which reading an input gets: a file in pieces on every thread, a pipe in blocks, or one
//! thread's reading, with another thread ahead of the taker.

use std::io::{self, Read};

use super::error::ReadError;
use super::event::Event;
use super::format::InputFormat;
use super::options::ReadOptions;
use super::pipeline::{Flow, stream};
use super::reading::{Reading, parquet_not_here};
use super::source::{Opened, Source};
use super::stats::ReadStats;

/// Reads the events of an input that can be read from its start, as [`stream`] does: a
/// large CSV, TSV, JSON Lines or GeoJSON file in pieces on every thread, anything else as
/// it comes.
pub(super) fn stream_input<E: From<ReadError>>(
    input: &mut Opened,
    source: &Source,
    options: &ReadOptions,
    busy: bool,
    mut take: impl FnMut(Event) -> Result<Flow, E>,
) -> Result<Option<ReadStats>, E> {
    #[cfg(all(unix, feature = "arrow"))]
    if let Opened::Arrow(data) = input {
        return super::arrow::stream(data, options, take);
    }
    let size = input.size();
    if options.format == InputFormat::Parquet {
        return stream_parquet(input, source, options, take);
    }
    #[cfg(unix)]
    let tabular = matches!(options.format, InputFormat::Csv | InputFormat::Tsv);
    #[cfg(unix)]
    let json = matches!(options.format, InputFormat::Jsonl | InputFormat::Geojson);
    let in_pieces = (tabular || json)
        && matches!(input, Opened::File { .. })
        && size.is_some_and(|size| size >= 2 * super::chunked::SMALLEST_PIECE);
    #[cfg(unix)]
    if let Opened::Once(_) | Opened::Decoded(..) = input
        && options.threads >= 2
        && tabular
    {
        let measure = input.measure();
        let reader = input.reader(source)?;
        return match super::pipe::stream_pipe(
            reader,
            source,
            (options, measure.clone()),
            &mut take,
        )? {
            Ok(stats) => Ok(stats),
            // A header the fast reading does not take: one thread reads it all.
            Err((read, rest)) => {
                let reader = io::Cursor::new(read).chain(rest);
                stream(Reading::new(reader, source.name(), options, measure)?, busy, take)
            }
        };
    }
    let mut pass = input.reading(source, options)?;
    #[cfg(unix)]
    if in_pieces {
        let header = pass.header();
        drop(pass);
        if let (Some(header), Opened::File { file, start }) = (header, &*input) {
            return super::chunked::stream(file, *start, &header, options, busy, take);
        }
        // A CSV's header was read, and a JSON Lines file starts with its first record: one
        // thread reads only a GeoJSON document whose start is not as it should be.
        pass = input.reading(source, options)?;
    }
    stream(pass, busy, take)
}

/// Reads the events of a Parquet file, or of several one after the other, as
/// [`stream_input`] does: from files only, as a file's index is at its end.
fn stream_parquet<E: From<ReadError>>(
    input: &mut Opened,
    source: &Source,
    options: &ReadOptions,
    take: impl FnMut(Event) -> Result<Flow, E>,
) -> Result<Option<ReadStats>, E> {
    #[cfg(all(unix, feature = "parquet"))]
    match input {
        Opened::File { file, start: 0 } => {
            let name = source.name();
            let copy =
                file.try_clone().map_err(|error| ReadError::Io { name: name.clone(), error })?;
            let one = [(copy, name)];
            return super::parquet::stream(&one, options, take);
        }
        // Several files, each whole, in the order given: one stream of events.
        Opened::Files { paths, .. } => {
            let mut files = Vec::with_capacity(paths.len());
            for path in paths.iter() {
                let name = path.display().to_string();
                let file = std::fs::File::open(path)
                    .map_err(|error| ReadError::Io { name: name.clone(), error })?;
                files.push((file, name));
            }
            return super::parquet::stream(&files, options, take);
        }
        _ => {}
    }
    let _ = (input, options, take);
    Err(parquet_not_here(&source.name()).into())
}

//! The USGS CSV layout: synthetic events written as the FDSN event service writes real ones.

use std::io::{self, Write};

use crate::synth::etas::{Origin, Quake};
use crate::units::time::Subsecond;

/// The USGS FDSN event service's CSV header.
const HEADER: &[u8] = b"time,latitude,longitude,depth,mag,magType,nst,gap,dmin,rms,net,id,\
updated,place,type,horizontalError,depthError,magError,magNst,status,locationSource,magSource\n";

/// Writes events as a USGS CSV catalog with a header, streaming.
pub fn write_catalog(
    quakes: impl IntoIterator<Item = Quake>,
    out: &mut dyn Write,
) -> io::Result<()> {
    super::write_rows(out, HEADER, quakes, write_row)
}

/// Appends one row: the fields the model gives, the others empty.
fn write_row(row: &mut Vec<u8>, quake: &Quake) {
    let mut ids = itoa::Buffer::new();
    quake.time.write_rfc3339(row, Subsecond::Millis);
    row.extend_from_slice(b",,,,");
    // Magnitudes lie from 0 to 10: at most 1000 hundredths, and digits 0 to 9 below.
    #[allow(clippy::cast_possible_truncation)]
    let hundredths = match quake.origin {
        // A planted magnitude was given exactly; a drawn one is rounded down, as binned.
        Origin::Planted => (quake.mag * 100.0).round() as i64,
        _ => (quake.mag * 100.0).floor() as i64,
    };
    row.extend_from_slice(ids.format(hundredths / 100).as_bytes());
    row.push(b'.');
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let digit = |n: i64| b'0' + (n % 10) as u8;
    row.extend_from_slice(&[digit(hundredths / 10), digit(hundredths)]);
    row.extend_from_slice(b",mw,,,,,sy,");
    write_id(row, quake.id);
    row.extend_from_slice(b",,\"synthetic, ");
    match quake.origin {
        Origin::Background => row.extend_from_slice(b"background"),
        Origin::Planted => row.extend_from_slice(b"planted mainshock"),
        Origin::Aftershock(parent) => {
            row.extend_from_slice(b"aftershock of ");
            write_id(row, parent);
        }
    }
    row.extend_from_slice(b"\",earthquake,,,,,,,\n");
}

/// Appends an event id: `sy` and at least eight digits.
fn write_id(row: &mut Vec<u8>, id: u64) {
    let mut digits = itoa::Buffer::new();
    let digits = digits.format(id);
    row.extend_from_slice(b"sy");
    row.extend(std::iter::repeat_n(b'0', 8usize.saturating_sub(digits.len())));
    row.extend_from_slice(digits.as_bytes());
}

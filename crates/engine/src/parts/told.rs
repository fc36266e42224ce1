//! What a part tells the driver, typed: each partial result of a replay or a sizing in
//! parts is a serde type of its own kind, written in one envelope that names its kind and
//! the version of the engine that wrote it, as a line of JSON. The driver reads only what
//! its own version writes, and only the kind its merge expects.

use anyhow::{Context, Result, bail};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// The version of the partial results this engine writes, and the only one it reads.
pub const VERSION: u32 = 1;

/// A partial result of one kind.
pub(super) trait Told: Serialize + DeserializeOwned {
    /// Its kind, as the envelope names it.
    const KIND: &'static str;
}

/// The envelope as written.
#[derive(Serialize)]
struct Written<'a, T> {
    v: u32,
    kind: &'static str,
    told: &'a T,
}

/// The envelope as read: what it holds is read once its version and kind are known.
#[derive(Deserialize)]
struct Read<'a> {
    v: u32,
    kind: String,
    #[serde(borrow)]
    told: &'a RawValue,
}

/// Writes `told` in its envelope, as a line of JSON.
pub(super) fn write<T: Told>(told: &T) -> Result<String> {
    Ok(serde_json::to_string(&Written { v: VERSION, kind: T::KIND, told })?)
}

/// Reads a partial result of kind `T` that [`write`] wrote; another version, another kind,
/// or what is not one, is an error that says which.
pub(super) fn read<T: Told>(line: &str) -> Result<T> {
    let shown = || line.chars().take(80).collect::<String>();
    let read: Read<'_> = serde_json::from_str(line)
        .with_context(|| format!("{:?} is not a part's result", shown()))?;
    if read.v != VERSION {
        bail!(
            "a part's result of version {} is not this engine's ({VERSION}): run one version \
             of ratelimit on the driver and every executor",
            read.v
        );
    }
    if read.kind != T::KIND {
        bail!("a part's {} is given where its {} is read", read.kind, T::KIND);
    }
    serde_json::from_str(read.told.get())
        .with_context(|| format!("{:?} is not a part's {}", shown(), T::KIND))
}

/// Reads every line of `lines`, each of kind `T`.
pub(super) fn read_all<T: Told>(lines: &[String]) -> Result<Vec<T>> {
    lines.iter().map(|line| read(line)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Figures {
        events: u64,
        units: u128,
        tat: Option<i128>,
    }

    impl Told for Figures {
        const KIND: &'static str = "figures";
    }

    #[derive(Debug, Serialize, Deserialize)]
    struct Other;

    impl Told for Other {
        const KIND: &'static str = "other";
    }

    #[test]
    fn a_result_reads_back_whole_past_64_bits() {
        let told = Figures { events: 3, units: u128::MAX, tat: Some(i128::MIN) };
        let line = write(&told).unwrap();
        assert!(line.starts_with(r#"{"v":1,"kind":"figures","told":"#), "{line}");
        assert_eq!(read::<Figures>(&line).unwrap(), told);
    }

    #[test]
    fn another_version_kind_or_text_is_refused_by_name() {
        let line = write(&Figures { events: 1, units: 1, tat: None }).unwrap();
        let older = line.replace(r#""v":1"#, r#""v":0"#);
        let err = read::<Figures>(&older).unwrap_err().to_string();
        assert!(err.contains("version 0 is not this engine's (1)"), "{err}");
        let err = read::<Other>(&line).unwrap_err().to_string();
        assert_eq!(err, "a part's figures is given where its other is read");
        let err = read::<Figures>("12 34 - - -").unwrap_err().to_string();
        assert!(err.contains("is not a part's result"), "{err}");
    }
}

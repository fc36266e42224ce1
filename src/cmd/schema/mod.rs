//! `ratelimit schema`: the JSON Schema of a command's `--format json` output, the contract
//! its field names are, or all of them as the Markdown reference `docs/json.md`.

mod page;

use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::{Args, ValueEnum};
use serde_json::Value;

use self::page::Described;
use super::write_stdout;
use crate::engine::live_settled::SettledCheck;
use crate::engine::recommend::Recommendation;
use crate::engine::settled::SettledReport;
use crate::engine::settled::min_limit::MinLimit;
use crate::engine::settled::presets::{Listed, PresetFit};
use crate::engine::side_by_side::{ByKey, SideBySide};
use crate::policy_report::{CheckReport, LayerNeeds, ReplayReport};
use crate::report::{CONTRACT, CurveSegment, LimiterReport, MinBucket, MinRate};

/// `ratelimit schema`.
#[derive(Debug, Args)]
pub struct SchemaArgs {
    /// The output whose schema to print; with `--format markdown` and no output, every
    /// output's.
    #[arg(value_enum)]
    pub output: Option<Output>,
    /// `json`, the JSON Schema; `markdown`, the reference page `docs/json.md`.
    #[arg(long, value_enum, default_value = "json")]
    pub format: SchemaFormat,
}

/// How `ratelimit schema` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SchemaFormat {
    /// The JSON Schema (draft 2020-12) of one output.
    Json,
    /// The fields of the outputs, each with its type and meaning, as Markdown.
    Markdown,
}

/// The JSON outputs, by the command that prints them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Output {
    /// `replay --format json`: one limit's report, or with `--limit … --limit …` the
    /// layers' (one schema either way; `layered` is another name for it).
    #[value(alias = "layered")]
    Replay,
    /// `compare --format json`: one report per limiter.
    Compare,
    /// `compare --limit … --limit … --format json`: whole configurations side by side.
    Configurations,
    /// `compare --limit A --limit B --by-key --format json`: one row a key, its drops under
    /// each.
    ByKey,
    /// `min-bucket --format json`: one object per rate.
    MinBucket,
    /// `min-bucket --limit … --limit … --format json`: each layer's need.
    LayerNeeds,
    /// `min-bucket --curve --format json`: the pieces of the burst–rate curve.
    Curve,
    /// `min-rate --format json`: one object per burst.
    MinRate,
    /// `recommend --format json`: the frontier of least bursts that leave a share of the
    /// keys untouched, and the point recommended.
    Recommend,
    /// `check --format json`: one decision, of one limit or, with `--limit … --limit …`,
    /// over several (one schema either way; `layered-check` is another name for it).
    #[value(alias = "layered-check")]
    Check,
    /// `replay --duration COL --format json` (or `--end COL`): requests settled after the
    /// response, each layer's reservations, refunds, debt and overshoot.
    Settled,
    /// `min-limit --format json`: the smallest provider limit, or requests in flight.
    MinLimit,
    /// `min-limit --preset PROVIDER:*:MODEL --format json`: what each tier refused, and
    /// the smallest that refused nothing.
    MinTier,
    /// `presets --format json`: the providers' published limits, with the day each was
    /// read and the layers each is.
    Presets,
    /// `check --limit … --value NAME=N [--settle] --format json`: a live request settled
    /// after the response, decided or settled in Redis, and each layer's answer.
    SettledCheck,
}

pub(super) fn run(args: &SchemaArgs) -> Result<ExitCode> {
    let text = match (args.format, args.output) {
        (SchemaFormat::Json, Some(output)) => {
            let mut text = serde_json::to_vec_pretty(&schema(output))?;
            text.push(b'\n');
            text
        }
        (SchemaFormat::Json, None) => bail!("schema: name the output whose schema to print"),
        (SchemaFormat::Markdown, Some(output)) => page(&[output]).into_bytes(),
        (SchemaFormat::Markdown, None) => page(Output::value_variants()).into_bytes(),
    };
    write_stdout(&text)
}

/// The JSON reference of `outputs`, as Markdown.
fn page(outputs: &[Output]) -> String {
    let described = outputs.iter().map(|output| {
        let value = output.to_possible_value();
        Described {
            name: value.as_ref().map(|v| v.get_name().to_string()).unwrap_or_default(),
            help: value
                .as_ref()
                .and_then(|v| v.get_help())
                .map(ToString::to_string)
                .unwrap_or_default(),
            schema: schema(*output),
        }
    });
    page::page(described.collect())
}

/// The JSON Schema of an output, every object in it closed.
fn schema(output: Output) -> Value {
    let schema = match output {
        Output::Replay => schemars::schema_for!(ReplayReport),
        Output::Compare => schemars::schema_for!(Vec<LimiterReport>),
        Output::Configurations => schemars::schema_for!(SideBySide),
        Output::ByKey => schemars::schema_for!(ByKey),
        Output::MinBucket => schemars::schema_for!(Vec<MinBucket>),
        Output::LayerNeeds => schemars::schema_for!(LayerNeeds),
        Output::Curve => schemars::schema_for!(Vec<CurveSegment>),
        Output::MinRate => schemars::schema_for!(Vec<MinRate>),
        Output::Recommend => schemars::schema_for!(Recommendation),
        Output::Check => schemars::schema_for!(CheckReport),
        Output::Settled => schemars::schema_for!(SettledReport),
        Output::MinLimit => schemars::schema_for!(MinLimit),
        Output::MinTier => schemars::schema_for!(PresetFit),
        Output::Presets => schemars::schema_for!(Vec<Listed>),
        Output::SettledCheck => schemars::schema_for!(SettledCheck),
    };
    let mut schema = schema.to_value();
    closed(&mut schema);
    // The contract's version names the schema, so a program can tell which it was written
    // against.
    let name = output.to_possible_value().map(|v| v.get_name().to_owned()).unwrap_or_default();
    let id = format!("urn:ratelimit:json:v{CONTRACT}:{name}");
    if let Some(object) = schema.as_object_mut() {
        object.insert("$id".to_owned(), Value::String(id));
    }
    schema
}

/// Closes every object the schema describes: a field it does not name is an error, so a
/// field added to an output without being added to its schema is caught.
fn closed(schema: &mut serde_json::Value) {
    match schema {
        serde_json::Value::Object(object) => {
            if object.contains_key("properties") {
                object.entry("unevaluatedProperties").or_insert(serde_json::Value::Bool(false));
            }
            object.values_mut().for_each(closed);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(closed),
        _ => {}
    }
}

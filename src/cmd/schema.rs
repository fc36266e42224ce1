//! `ratelimit schema`: the JSON Schema of a command's `--format json` output, the contract
//! its field names are.

use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, ValueEnum};

use super::write_stdout;
use crate::report::{
    Check, CurveSegment, LayerNeeds, LayeredCheck, LayeredReport, LimiterReport, MinBucket, MinRate,
};

/// `ratelimit schema`.
#[derive(Debug, Args)]
pub struct SchemaArgs {
    /// The output whose schema to print.
    #[arg(value_enum)]
    pub output: Output,
}

/// The JSON outputs, by the command that prints them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Output {
    /// `replay --format json`: one report.
    Replay,
    /// `replay --limit … --limit … --format json`: the layered report.
    Layered,
    /// `compare --format json`: one report per limiter.
    Compare,
    /// `min-bucket --format json`: one object per rate.
    MinBucket,
    /// `min-bucket --limit … --limit … --format json`: each layer's need.
    LayerNeeds,
    /// `min-bucket --curve --format json`: the pieces of the burst–rate curve.
    Curve,
    /// `min-rate --format json`: one object per burst.
    MinRate,
    /// `check --format json`: one decision.
    Check,
    /// `check --limit … --limit … --format json`: one decision over several limits.
    LayeredCheck,
}

pub(super) fn run(args: &SchemaArgs) -> Result<ExitCode> {
    let schema = match args.output {
        Output::Replay => schemars::schema_for!(LimiterReport),
        Output::Layered => schemars::schema_for!(LayeredReport),
        Output::Compare => schemars::schema_for!(Vec<LimiterReport>),
        Output::MinBucket => schemars::schema_for!(Vec<MinBucket>),
        Output::LayerNeeds => schemars::schema_for!(LayerNeeds),
        Output::Curve => schemars::schema_for!(Vec<CurveSegment>),
        Output::MinRate => schemars::schema_for!(Vec<MinRate>),
        Output::Check => schemars::schema_for!(Check),
        Output::LayeredCheck => schemars::schema_for!(LayeredCheck),
    };
    let mut schema = schema.to_value();
    closed(&mut schema);
    let mut text = serde_json::to_vec_pretty(&schema)?;
    text.push(b'\n');
    write_stdout(&text)
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

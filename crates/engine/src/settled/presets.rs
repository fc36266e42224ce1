//! Providers' published LLM limits as data (`crates/engine/presets/*.csv`), each with
//! the day it was read and where, and the layers each one is.

use std::sync::LazyLock;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{LayerSpec, columns, replay_read};
use crate::error::{Error, Result};
use crate::input::catalog::{ReadOptions, ReadStats, Source};
use crate::input::requests::{Completion, read_requests};

/// The presets' files, one a provider, built into the program.
const FILES: [(&str, &str); 5] = [
    ("openai.csv", include_str!("../../presets/openai.csv")),
    ("anthropic.csv", include_str!("../../presets/anthropic.csv")),
    ("azure.csv", include_str!("../../presets/azure.csv")),
    ("bedrock.csv", include_str!("../../presets/bedrock.csv")),
    ("gemini.csv", include_str!("../../presets/gemini.csv")),
];

/// One provider's limits for one tier and model, as published, and how it counts them.
/// The log's columns are named as the layers read them: `prompt_tokens` (the input the
/// provider counts), `max_tokens`, `completion_tokens`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
pub struct Preset {
    /// The provider: `openai`, `anthropic`, `azure`, `bedrock`, `gemini`.
    pub provider: String,
    /// The tier, as the provider names it (`tier-2`), or a quota's size (`tpm-2m`).
    pub tier: String,
    /// The model, or the family that shares one limit.
    pub model: String,
    /// Requests a minute.
    pub rpm: Option<u64>,
    /// Input tokens a minute.
    pub input_tpm: Option<u64>,
    /// Output tokens a minute.
    pub output_tpm: Option<u64>,
    /// Input and output tokens a minute, together.
    pub tpm: Option<u64>,
    /// Tokens a day.
    pub tpd: Option<u64>,
    /// Requests a day.
    pub rpd: Option<u64>,
    /// How a minute is kept: `token-bucket` (a bucket of a minute's limit, refilled over
    /// the minute) or `fixed-window` (Azure's: requests a second at a time, tokens a
    /// minute at a time).
    pub algo: String,
    /// When tokens are counted: `reserve` (the prompt and `max_tokens` on arrival, settled
    /// to the real count at completion), `estimate` (the prompt and `max_tokens` on
    /// arrival, never settled: Azure's) or `arrival` (the prompt, on arrival: Gemini's).
    pub accounting: String,
    /// How many times each output token counts (Bedrock's burndown: 5 for Claude 3.7 and
    /// later).
    pub output_weight: u64,
    /// Whether cached input read back counts: `counted` or `not counted` (then
    /// `prompt_tokens` should leave it out).
    pub cache_reads: String,
    /// The day the figures were read (YYYY-MM-DD).
    pub date: String,
    /// The provider's page that publishes them.
    pub source: String,
    /// The page they were read from, where it is not `source`.
    pub via: Option<String>,
    /// What else to know.
    pub note: Option<String>,
}

/// The presets, in their files' order: each provider's, tier by tier.
static PRESETS: LazyLock<Result<Vec<Preset>, String>> = LazyLock::new(|| {
    let mut all = Vec::new();
    for (name, text) in FILES {
        let mut reader = csv::Reader::from_reader(text.as_bytes());
        for (row, preset) in reader.deserialize::<Preset>().enumerate() {
            let preset = preset.map_err(|e| format!("presets/{name}: row {}: {e}", row + 1))?;
            preset.layers().map_err(|e| format!("presets/{name}: row {}: {e}", row + 1))?;
            all.push(preset);
        }
    }
    Ok(all)
});

/// Returns every preset, or why the built-in files do not read (a test keeps them read).
pub fn presets() -> Result<&'static [Preset], String> {
    PRESETS.as_ref().map(Vec::as_slice).map_err(Clone::clone)
}

/// Returns the presets `name` names, `PROVIDER:TIER:MODEL`, in their order; `*` for the
/// tier (or the model) names them all. None is an error that lists what there is.
pub fn find(name: &str) -> Result<Vec<&'static Preset>, String> {
    let parts: Vec<&str> = name.split(':').collect();
    let [provider, tier, model] = parts[..] else {
        return Err(format!(
            "--preset {name}: PROVIDER:TIER:MODEL, as `ratelimit presets` lists them \
             (anthropic:tier-2:claude-sonnet; * for every tier)"
        ));
    };
    let all = presets()?;
    let matches = |want: &str, have: &str| want == "*" || want.eq_ignore_ascii_case(have);
    let found: Vec<&Preset> = (all.iter())
        .filter(|p| {
            matches(provider, &p.provider) && matches(tier, &p.tier) && matches(model, &p.model)
        })
        .collect();
    if found.is_empty() {
        let names: Vec<String> =
            (all.iter()).filter(|p| matches(provider, &p.provider)).map(Preset::name).collect();
        let known = match names.is_empty() {
            true => {
                let mut providers: Vec<&str> = all.iter().map(|p| p.provider.as_str()).collect();
                providers.dedup();
                format!("the providers are {}", providers.join(", "))
            }
            false => format!("there are {}", names.join(", ")),
        };
        return Err(format!("--preset {name} names no preset: {known}"));
    }
    Ok(found)
}

/// Returns the layers of the one preset `name` names: `*` naming several is an error.
pub fn one(name: &str) -> Result<Vec<LayerSpec>, String> {
    match &find(name)?[..] {
        [preset] => preset.layers(),
        several => {
            let names: Vec<String> = several.iter().map(|p| p.name()).collect();
            Err(format!(
                "--preset {name} names {} presets: give one ({})",
                names.len(),
                names.join(", ")
            ))
        }
    }
}

impl Preset {
    /// Its name, as `--preset` takes it: `PROVIDER:TIER:MODEL`.
    pub fn name(&self) -> String {
        format!("{}:{}:{}", self.provider, self.tier, self.model)
    }

    /// The layers it is, all or nothing, in the order requests, input, output, tokens,
    /// tokens a day, requests a day: each limit a bucket of its count refilled over its
    /// period, or Azure's windows; tokens counted as its accounting says.
    pub fn layers(&self) -> Result<Vec<LayerSpec>, String> {
        let bucket = self.algo == "token-bucket";
        if !bucket && self.algo != "fixed-window" {
            return Err(format!("algo={}: token-bucket or fixed-window", self.algo));
        }
        // A limit of n a period, kept as the provider keeps it.
        let kept = |n: u64, period: &str| match bucket {
            true => format!("algo=token-bucket,rate={n}/{period},burst={n}"),
            false => format!("algo=fixed-window,rate={n}/{period}"),
        };
        let output = match self.output_weight {
            1 => "completion_tokens".to_owned(),
            weight => format!("{weight}*completion_tokens"),
        };
        // What the tokens of a request cost, as it is counted.
        let tokens = |input: bool, output_too: bool| -> Result<String, String> {
            let estimate = match (input, output_too) {
                (true, true) => "prompt_tokens+max_tokens",
                (true, false) => "prompt_tokens",
                (false, _) => "max_tokens",
            };
            let real = match (input, output_too) {
                (true, true) => format!("prompt_tokens+{output}"),
                (true, false) => "prompt_tokens".to_owned(),
                (false, _) => output.clone(),
            };
            match (self.accounting.as_str(), output_too) {
                (_, false) => Ok(format!("cost={real}")),
                ("reserve", true) => Ok(format!("reserve={estimate},cost={real}")),
                ("estimate", true) => Ok(format!("cost={estimate}")),
                ("arrival", true) => {
                    Err("accounting=arrival counts no output tokens: no output_tpm or tpm".into())
                }
                (other, _) => Err(format!("accounting={other}: reserve, estimate or arrival")),
            }
        };
        let mut specs = Vec::new();
        if let Some(rpm) = self.rpm {
            // Azure counts requests a second at a time (or ten, where a second's share is
            // not whole): 600 RPM is 10 a second.
            specs.push(match bucket {
                true => kept(rpm, "m"),
                false if rpm % 60 == 0 => kept(rpm / 60, "s"),
                false if rpm % 6 == 0 => kept(rpm / 6, "10s"),
                false => kept(rpm, "m"),
            });
        }
        if let Some(n) = self.input_tpm {
            specs.push(format!("{},{}", kept(n, "m"), tokens(true, false)?));
        }
        if let Some(n) = self.output_tpm {
            specs.push(format!("{},{}", kept(n, "m"), tokens(false, true)?));
        }
        if let Some(n) = self.tpm {
            let input_only = self.accounting == "arrival";
            specs.push(format!("{},{}", kept(n, "m"), tokens(true, !input_only)?));
        }
        if let Some(n) = self.tpd {
            let input_only = self.accounting == "arrival";
            specs.push(format!("{},{}", kept(n, "d"), tokens(true, !input_only)?));
        }
        if let Some(n) = self.rpd {
            specs.push(format!("algo=fixed-window,rate={n}/d"));
        }
        if specs.is_empty() {
            return Err("no limit: give rpm, input_tpm, output_tpm, tpm, tpd or rpd".into());
        }
        specs
            .iter()
            .map(|spec| spec.parse::<LayerSpec>().map_err(|e| format!("{spec}: {e}")))
            .collect()
    }
}

/// A preset as `ratelimit presets` lists it: its name, its figures and the layers it is.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct Listed {
    /// `PROVIDER:TIER:MODEL`, as `--preset` takes it.
    pub name: String,
    /// The preset, as its file holds it.
    #[serde(flatten)]
    pub preset: Preset,
    /// The layers it is, as `--limit` writes them.
    pub layers: Vec<String>,
}

/// Every preset, listed.
pub fn listed() -> Result<Vec<Listed>, String> {
    (presets()?.iter())
        .map(|preset| {
            let layers = preset.layers()?.iter().map(ToString::to_string).collect();
            Ok(Listed { name: preset.name(), preset: preset.clone(), layers })
        })
        .collect()
}

/// How each tier of a preset did on a log's requests, and the smallest that refused
/// none: what `min-limit --preset PROVIDER:*:MODEL` prints.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct PresetFit {
    /// The input's name: its path, `<stdin>` or `<sample>`.
    pub input: String,
    /// The requests read, after the filters.
    pub requests: u64,
    /// The presets asked for, as `--preset` gave them.
    pub preset: String,
    /// Each preset it names, in the provider's order, with what it refused.
    pub tiers: Vec<TierFit>,
    /// The first of them that refuses no request; `null` if none does.
    pub smallest: Option<String>,
}

/// What one preset refused of a log's requests.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct TierFit {
    /// The preset, `PROVIDER:TIER:MODEL`.
    pub name: String,
    /// The day its figures were read.
    pub date: String,
    /// The requests some layer refused.
    pub refused: u64,
    /// Each layer's refusals, as its spec.
    pub layers: Vec<TierLayer>,
}

/// One layer of a preset, and the requests it refused when asked.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct TierLayer {
    /// The layer, as `--limit` writes it.
    pub spec: String,
    /// The requests it refused.
    pub refused: u64,
}

/// Replays the requests of `source` (read by `read`, completing as `completion` says)
/// through every preset `name` names, each all or nothing, and finds the first that
/// refuses none. The requests are read once, and kept, as [`read_requests`] keeps them.
pub fn fit(
    source: &Source,
    read: &ReadOptions,
    completion: Option<&Completion>,
    name: &str,
) -> Result<(PresetFit, ReadStats)> {
    let policy = |message: String| Error::Policy { message };
    let presets = find(name).map_err(policy)?;
    let specs: Vec<Vec<LayerSpec>> =
        presets.iter().map(|p| p.layers()).collect::<Result<_, String>>().map_err(policy)?;
    if completion.is_none()
        && let Some(spec) = specs.iter().flatten().find(|spec| spec.settles_after())
    {
        return Err(policy(format!(
            "--preset {name} has {spec}, settled after the response: give --duration COLUMN \
             or --end COLUMN, when each request completes"
        )));
    }
    let mut all: Vec<String> = Vec::new();
    for column in specs.iter().flat_map(|specs| columns(specs)) {
        if !all.contains(&column) {
            all.push(column);
        }
    }
    let (requests, stats) = read_requests(source, read, completion, &all)?;
    let mut tiers = Vec::with_capacity(presets.len());
    for (preset, specs) in presets.iter().zip(&specs) {
        let report = replay_read(source, read, (&requests, &all), specs, None)?;
        let layers = (report.layers.iter())
            .map(|layer| TierLayer { spec: layer.spec.clone(), refused: layer.refused })
            .collect();
        tiers.push(TierFit {
            name: preset.name(),
            date: preset.date.clone(),
            refused: report.refused,
            layers,
        });
    }
    let smallest = tiers.iter().find(|tier| tier.refused == 0).map(|tier| tier.name.clone());
    let fit = PresetFit {
        input: source.name(),
        requests: requests.len() as u64,
        preset: name.to_owned(),
        tiers,
        smallest,
    };
    Ok((fit, stats))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layers(name: &str) -> Vec<String> {
        let [preset] = find(name).unwrap()[..] else { panic!("{name} is not one preset") };
        preset.layers().unwrap().iter().map(ToString::to_string).collect()
    }

    #[test]
    fn every_preset_reads_and_has_its_date_and_source() {
        let all = presets().unwrap();
        let mut providers: Vec<&str> = all.iter().map(|p| p.provider.as_str()).collect();
        providers.dedup();
        assert_eq!(providers, ["openai", "anthropic", "azure", "bedrock", "gemini"]);
        for preset in all {
            let date = preset.date.as_bytes();
            assert!(date.len() == 10 && date[4] == b'-' && date[7] == b'-', "{}", preset.name());
            assert!(preset.source.starts_with("https://"), "{}", preset.name());
        }
    }

    #[test]
    fn anthropic_reserves_max_tokens_for_its_output_and_counts_its_input_on_arrival() {
        assert_eq!(
            layers("anthropic:tier-2:claude-sonnet"),
            [
                "algo=token-bucket,rate=1000/m,burst=1000",
                "algo=token-bucket,rate=450000/m,burst=450000,cost=prompt_tokens",
                "algo=token-bucket,rate=90000/m,burst=90000,reserve=max_tokens,cost=completion_tokens",
            ]
        );
    }

    #[test]
    fn azures_600_rpm_is_10_a_second_and_its_tokens_are_the_estimate_never_settled() {
        // learn.microsoft.com: "rate limiting will occur for a 600-RPM deployment if more
        // than 10 requests are received during each 1-second period".
        assert_eq!(
            layers("azure:tpm-100k:gpt-4o"),
            [
                "algo=fixed-window,rate=10/s",
                "algo=fixed-window,rate=100000/m,cost=prompt_tokens+max_tokens",
            ]
        );
    }

    #[test]
    fn bedrock_counts_each_output_token_five_times_at_the_end() {
        assert_eq!(
            layers("bedrock:tpm-2m:claude-sonnet-4"),
            [
                "algo=token-bucket,rate=2000000/m,burst=2000000,reserve=prompt_tokens+max_tokens,cost=prompt_tokens+5*completion_tokens"
            ]
        );
    }

    #[test]
    fn a_star_names_every_tier_and_a_wrong_name_lists_what_there_is() {
        let tiers: Vec<&str> =
            find("openai:*:gpt-4o").unwrap().iter().map(|p| p.tier.as_str()).collect();
        assert_eq!(tiers, ["tier-1", "tier-2", "tier-3", "tier-4", "tier-5"]);
        let err = find("anthropic:tier-9:claude-sonnet").unwrap_err();
        assert!(err.starts_with("--preset anthropic:tier-9:claude-sonnet names no preset: there are anthropic:tier-1:claude-sonnet,"), "{err}");
        assert!(
            find("mistral:*:*")
                .unwrap_err()
                .ends_with("the providers are openai, anthropic, azure, bedrock, gemini")
        );
        assert!(find("openai").unwrap_err().contains("PROVIDER:TIER:MODEL"));
    }
}

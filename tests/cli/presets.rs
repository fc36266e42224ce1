//! `ratelimit presets`, `replay --preset` and `min-limit --preset`: the providers' published
//! limits, held to the worked examples in the providers' own documents.

use crate::harness::{json, run};

/// 32 requests in the first 32 ms, each asking for 64,000 tokens of output, with a prompt
/// that counts nothing, answered in 100 tokens over 10 s.
fn bedrock_burst() -> String {
    let mut log = "time,prompt_tokens,max_tokens,completion_tokens,duration\n".to_owned();
    for i in 0..32 {
        log += &format!("2025-01-01T00:00:00.{i:03}Z,0,64000,100,10s\n");
    }
    log
}

#[test]
fn bedrock_holds_31_requests_of_64k_max_tokens_at_2m_tpm() {
    // AWS: at 2M tokens a minute, with max_tokens of 64K, about 31 requests fit at once
    // (2,000,000 / 64,000 = 31.25): each reserves its max_tokens on arrival.
    let args = ["replay", "-", "--preset", "bedrock:tpm-2m:claude-sonnet-4"];
    let args = [&args[..], &["--duration", "duration", "--format", "json"]].concat();
    let report = json(&run(&args, &bedrock_burst()).ok());
    assert_eq!((report["passed"].as_u64(), report["refused"].as_u64()), (Some(31), Some(1)));
    let layer = &report["layers"][0];
    assert_eq!(layer["reserved"], 31 * 64_000);
    // Each answer counts 5 × 100 at completion; 64,000 − 500 comes back.
    assert_eq!(layer["refunded"], 31 * 63_500);
    crate::json::assert_valid("settled", &report, "replay --preset");
}

#[test]
fn azures_600_rpm_deployment_takes_10_requests_a_second() {
    // learn.microsoft.com: a 600-RPM deployment is rate limited if more than 10 requests
    // come in one 1-second period. Eleven in the first second, then one at 1 s.
    let mut log = "time,prompt_tokens,max_tokens,completion_tokens\n".to_owned();
    for i in 0..11 {
        log += &format!("2025-01-01T00:00:00.{:03}Z,10,100,50\n", i * 50);
    }
    log += "2025-01-01T00:00:01Z,10,100,50\n";
    let args = ["replay", "-", "--preset", "azure:tpm-100k:gpt-4o", "--format", "json"];
    let report = json(&run(&args, &log).ok());
    assert_eq!(report["refused"], 1);
    assert_eq!(report["layers"][0]["spec"], "algo=fixed-window,rate=10/s");
    // Azure counts the prompt and max_tokens on arrival, and never settles: the 11 it
    // admits spend 11 × 110 in the minute.
    assert_eq!(report["layers"][1]["most_spent"], 11 * 110);
    // The next size up refuses none: the smallest tier that loses nothing.
    let fit = ["min-limit", "-", "--preset", "azure:*:gpt-4o", "--format", "json"];
    let fit = json(&run(&fit, &log).ok());
    assert_eq!(fit["smallest"], "azure:tpm-450k:gpt-4o");
    let refused: Vec<u64> =
        fit["tiers"].as_array().unwrap().iter().map(|t| t["refused"].as_u64().unwrap()).collect();
    assert_eq!(refused, [1, 0, 0]);
    crate::json::assert_valid("min-tier", &fit, "min-limit --preset");
}

#[test]
fn no_tier_that_refuses_a_request_is_named_the_smallest() {
    let args = ["min-limit", "-", "--preset", "bedrock:*:claude-sonnet-4", "--duration"];
    let args = [&args[..], &["duration", "--format", "json"]].concat();
    let fit = json(&run(&args, &bedrock_burst()).ok());
    // 200K holds 3 reservations of 64K; 2M holds 31.
    assert_eq!(
        (fit["tiers"][0]["refused"].as_u64(), fit["tiers"][1]["refused"].as_u64()),
        (Some(29), Some(1))
    );
    assert_eq!(fit["smallest"], serde_json::Value::Null);
}

#[test]
fn every_preset_is_listed_with_its_day_its_source_and_its_layers() {
    let listed = json(&run(&["presets", "--format", "json"], "").ok());
    let listed = listed.as_array().unwrap();
    for provider in ["openai", "anthropic", "azure", "bedrock", "gemini"] {
        assert!(listed.iter().any(|p| p["provider"] == provider), "{provider}");
    }
    for preset in listed {
        assert!(preset["date"].as_str().unwrap().starts_with("20"), "{preset}");
        assert!(preset["source"].as_str().unwrap().starts_with("https://"), "{preset}");
        assert!(!preset["layers"].as_array().unwrap().is_empty(), "{preset}");
    }
    crate::json::assert_valid("presets", &serde_json::Value::Array(listed.clone()), "presets");
}

#[test]
fn a_preset_that_is_not_there_or_needs_completions_is_one_line_naming_it() {
    let log = "time,prompt_tokens,max_tokens,completion_tokens\n2025-01-01T00:00:00Z,1,2,3\n";
    let err = run(&["replay", "-", "--preset", "anthropic:tier-9:claude-sonnet"], log).error();
    assert!(err.starts_with("ratelimit: --preset anthropic:tier-9:claude-sonnet names no preset: there are anthropic:tier-1:claude-sonnet"), "{err}");
    let err = run(&["replay", "-", "--preset", "anthropic:*:claude-sonnet"], log).error();
    assert!(err.contains("names 4 presets: give one"), "{err}");
    let err = run(&["replay", "-", "--preset", "anthropic:tier-1:claude-sonnet"], log).error();
    assert!(err.ends_with("is settled after the response: give --duration COLUMN or --end COLUMN, when each request completes"), "{err}");
}

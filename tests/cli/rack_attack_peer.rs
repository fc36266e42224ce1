//! The rack-attack model against Debian's ruby-rack-attack (6.6.1) on ActiveSupport's
//! MemoryStore: `tests/ruby/rack_attack_peer.rb` runs the real middleware with one throttle,
//! `Time.now` frozen at each request's time. Every request of a keyed request log, a seeded
//! bursty stream (equal times, steps of a microsecond and a millisecond) and the catalog
//! must be decided alike.

use std::path::PathBuf;
use std::process::Command;

use crate::peer_events::{agree_everywhere, decisions, peer_decisions, streams};

#[test]
#[ignore = "needs Ruby, Debian's ruby-rack-attack and ruby-activesupport, and ../shared/data"]
fn rack_attack_decides_as_the_real_gem() {
    let helper = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/ruby/rack_attack_peer.rb");
    let streams = streams(false);
    agree_everywhere("rack-attack 6.6.1", &streams, (false, true), |n, ms, events| {
        let spec = format!("algo=rack-attack,limit={n},period={},key=k", ms / 1000);
        let ours = decisions(events, &["--limit", &spec]);
        let mut ruby = Command::new("ruby");
        ruby.arg(&helper).args([n.to_string(), (ms / 1000).to_string()]);
        let lines: String = events.iter().map(|(t, k, c)| format!("{t},{k},{c}\n")).collect();
        let what = "the rack-attack helper (apt-get install ruby-rack-attack ruby-activesupport)";
        (spec, ours, peer_decisions(ruby, lines, what))
    });
}

#[test]
#[ignore = "needs Ruby, Debian's ruby-rack-attack and ruby-activesupport"]
fn rack_attacks_config_is_a_throttle_rack_attack_takes() {
    // Each snippet, loaded after rack-attack, defines the throttle it says.
    for (key, discriminator) in [(None, "request.ip"), (Some("X-Api-Key"), "HTTP_X_API_KEY")] {
        let mut args = vec!["config", "--for", "rack-attack", "--rate", "7/m"];
        args.extend(key.map(|k| ["--key", k]).into_iter().flatten());
        let config = crate::harness::run(&args, "").ok();
        assert!(config.contains(discriminator), "{config}");
        let check = format!(
            "require 'rack/attack'\n{config}\nt = Rack::Attack.throttles.fetch('ratelimit')\n\
             raise t.inspect unless [t.limit, t.period] == [7, 60]\n"
        );
        let ruby = Command::new("ruby").args(["-e", &check]).output().expect("ruby runs");
        assert!(ruby.status.success(), "{}\n{config}", String::from_utf8_lossy(&ruby.stderr));
    }
}

//! Integration tests of the `ratelimit` command line.

mod harness;
mod redis_server;

mod bad_input;
mod browser;
mod brute;
mod cluster;
mod compare;
mod config;
mod conventions;
mod docs;
mod emit;
mod faked_clock;
mod fdsn;
mod fetch;
mod fetch_misbehaving;
mod filter;
mod fleet;
mod formats;
mod guava_peer;
mod haproxy;
mod inputs;
mod json;
mod key_text;
mod keys;
mod layers;
mod limits_peer;
mod min_bucket;
mod nginx;
mod npm_peers;
mod outputs;
mod parquet;
mod peer_events;
mod peers;
mod plot;
mod presets;
mod rack_attack_peer;
mod real_data;
mod recommend;
mod replay;
mod report;
mod rotated;
mod schema;
mod settled;
mod several;
mod shared;
mod side_by_side;
mod sizing;
mod synth;
mod ties;
mod traefik;
mod weighted;

/// A small USGS-layout catalog, newest first as USGS serves it. Sorted, at 2/h:
///
/// | id   | time  | mag |
/// |------|-------|-----|
/// | t1b  | 00:30 | 5.0 | (the same time as t1a, and before it in the file)
/// | t1a  | 00:30 | 6.1 |
/// | t3   | 00:40 | 4.9 |
/// | t4   | 00:50 | 5.3 |
/// | t5   | 01:00 | 5.6 |
/// | t6   | 01:10 | 5.0 |
/// | t7   | 02:30 | 5.2 |
pub const QUAKES: &str = "\
time,latitude,longitude,depth,mag,magType,nst,gap,dmin,rms,net,id,updated,place,type
2025-07-30T02:30:00.000Z,52.1,160.2,20,5.2,mb,,,,0.7,us,t7,2025-08-01T00:00:00.000Z,\"100 km SE of Petropavlovsk-Kamchatsky, Russia\",earthquake
2025-07-30T01:10:00.000Z,52.3,160.1,35,5.0,mb,,,,0.6,us,t6,2025-08-01T00:00:00.000Z,\"90 km SE of Petropavlovsk-Kamchatsky, Russia\",earthquake
2025-07-30T01:00:00.000Z,52.4,160.0,10,5.6,mww,,,,0.9,us,t5,2025-08-01T00:00:00.000Z,\"Kuril Islands, Russia\",earthquake
2025-07-30T00:50:00.000Z,52.0,159.9,22,5.3,mb,,,,0.8,us,t4,2025-08-01T00:00:00.000Z,\"off the east coast of Kamchatka\",earthquake
2025-07-30T00:40:00.000Z,51.9,159.8,15,4.9,mb,,,,0.5,us,t3,2025-08-01T00:00:00.000Z,\"Kamchatka, Russia\",earthquake
2025-07-30T00:30:00.000Z,52.5,160.3,30,5.0,mb,,,,0.7,us,t1b,2025-08-01T00:00:00.000Z,\"Kamchatka, Russia\",earthquake
2025-07-30T00:30:00.000Z,52.5,160.3,30,6.1,mww,,,,0.7,us,t1a,2025-08-01T00:00:00.000Z,\"Kamchatka, Russia\",earthquake
";

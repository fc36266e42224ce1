//! Redis Cluster: a real three-master cluster decides as memory does, with keys on every
//! master; a slot without a master and a master lost mid-run are one-line errors.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::harness::{
    RedisCluster, Stdin, command, finished, real_catalog, run, run_with, temp_file,
};

const ALGOS: [&str; 6] =
    ["fixed-window", "sliding-log", "sliding-counter", "token-bucket", "gcra", "leaky-queue"];

/// Returns how many keys a node holds.
fn keys_on(cluster: &RedisCluster, node: usize) -> i64 {
    let mut con = cluster.nodes[node].connection().unwrap();
    redis::cmd("DBSIZE").query(&mut con).unwrap()
}

#[test]
#[ignore = "needs ../shared/data and redis-server"]
fn a_redis_cluster_decides_as_memory_does_and_a_lost_master_ends_the_run() {
    let path = real_catalog("usgs_m5_2015_2025.csv");
    let mut cluster = RedisCluster::start();
    let file = path.to_str().unwrap();
    let seed = cluster.url(0);

    // Every limiter on the whole catalog, given one seed node.
    for algo in ALGOS {
        let burst: &[&str] = match algo {
            "token-bucket" | "gcra" | "leaky-queue" => &["--burst", "5"],
            _ => &[],
        };
        let args = [&["replay", file, "--algo", algo, "--rate", "5/h", "--format", "json"], burst]
            .concat();
        let memory = run_with(&args, Stdin::Null).ok();
        let in_cluster = run_with(&[&args[..], &["--redis", &seed]].concat(), Stdin::Null).ok();
        assert_eq!(memory, in_cluster, "{algo}");
    }
    // All six with a key per event, 19,032 keys, given two seed nodes: every master holds
    // some of them.
    let before: Vec<i64> = (0..3).map(|n| keys_on(&cluster, n)).collect();
    let args =
        ["compare", file, "--rate", "2/h", "--burst", "3", "--key", "id", "--format", "json"];
    let memory = run_with(&args, Stdin::Null).ok();
    let seeds = ["--redis", &cluster.url(1), "--redis", &cluster.url(2)];
    assert_eq!(run_with(&[&args[..], &seeds].concat(), Stdin::Null).ok(), memory);
    for (node, before) in before.into_iter().enumerate() {
        assert!(keys_on(&cluster, node) > before + 1_000, "node {node} holds few keys");
    }
    // A live check, on whichever master holds the key.
    let check = ["check", "alert:bob", "--rate", "5/h", "--burst", "5", "--redis", &seed];
    let codes: Vec<i32> = (0..7).map(|_| run(&check, "").code).collect();
    assert_eq!(codes, [0, 0, 0, 0, 0, 1, 1]);

    // Layers keyed by one column run too, each event one script call on the master of its
    // key; beside an unkeyed layer, whose key lies in another slot, they are refused.
    let keyed = "algo=gcra,rate=2/h,burst=3,key=magType";
    let args =
        ["replay", file, "--limit", keyed, "--limit", "algo=sliding-log,rate=5/h,key=magType"];
    let args = [&args[..], &["--format", "json"]].concat();
    let memory = run_with(&args, Stdin::Null).ok();
    assert_eq!(run_with(&[&args[..], &["--redis", &seed]].concat(), Stdin::Null).ok(), memory);
    let mixed = ["replay", file, "--limit", keyed, "--limit", "algo=sliding-log,rate=5/h"];
    let want = "ratelimit: on a Redis Cluster, one script reaches the keys of one slot, and a \
                keyed layer's keys lie in other slots than an unkeyed layer's: key every layer \
                or none, or use one Redis server";
    assert_eq!(run_with(&[&mixed[..], &["--redis", &seed]].concat(), Stdin::Null).error(), want);

    // A slot that no master serves is refused before anything runs.
    let mut con = cluster.nodes[0].connection().unwrap();
    let () = redis::cmd("CLUSTER").arg("DELSLOTS").arg(0).query(&mut con).unwrap();
    let want = format!("ratelimit: Redis Cluster at {seed}: slot 0 is served by no node");
    assert_eq!(run(&check, "").error(), want);
    let () = redis::cmd("CLUSTER").arg("ADDSLOTS").arg(0).query(&mut con).unwrap();

    // A master killed mid-run: exit 2 at once, one line naming it, no report.
    let lost = cluster.nodes[2].port;
    let child = started(&[&args[..], &["--redis", &seed]].concat());
    let keys = keys_on(&cluster, 2);
    let deadline = Instant::now() + Duration::from_secs(30);
    while keys_on(&cluster, 2) == keys {
        assert!(Instant::now() < deadline, "the run wrote nothing to node 2");
        std::thread::sleep(Duration::from_millis(2));
    }
    cluster.nodes[2].kill();
    let killed = Instant::now();
    let out = finished(child.wait_with_output().unwrap());
    assert!(killed.elapsed() < Duration::from_secs(5), "took {:?}", killed.elapsed());
    let line = out.error();
    assert!(line.contains(&format!("redis://127.0.0.1:{lost}")), "{line}");
}

/// Starts `ratelimit` with `args`, its output piped, and returns it running.
fn started(args: &[&str]) -> std::process::Child {
    let mut cmd = command();
    cmd.args(args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd.spawn().unwrap()
}

/// Sends one command to a node of the cluster.
fn on<T: redis::FromRedisValue>(cluster: &RedisCluster, node: usize, args: &[&str]) -> T {
    let mut con = cluster.nodes[node].connection().unwrap();
    let mut cmd = redis::cmd(args[0]);
    for arg in &args[1..] {
        cmd.arg(*arg);
    }
    cmd.query(&mut con).unwrap()
}

#[test]
#[ignore = "needs redis-server"]
fn a_slot_resharded_mid_run_admits_exactly_as_many_as_one_node_would() {
    let cluster = RedisCluster::start();
    let seed = cluster.url(0);
    let ids: Vec<String> = (0..3).map(|n| on(&cluster, n, &["CLUSTER", "MYID"])).collect();
    for algo in ["fixed-window", "sliding-log", "sliding-counter", "token-bucket", "gcra"] {
        let key = format!("reshard:{algo}");
        let check = ["check", &key, "--algo", algo, "--rate", "5/d", "--redis", &seed];
        let mut codes = Vec::new();
        let mut decide = |n: usize| {
            for _ in 0..n {
                let out = run(&check, "");
                assert!(out.code < 2, "{algo}: {}", out.stderr);
                codes.push(out.code);
            }
        };
        decide(2);
        // The node that holds the key's slot, and one to move it to.
        let (from, name) = (0..3)
            .find_map(|n| {
                let keys: Vec<String> = on(&cluster, n, &["KEYS", &format!("*{key}*")]);
                keys.into_iter().next().map(|name| (n, name))
            })
            .expect("the key is on a node");
        let to = (from + 1) % 3;
        let slot: i64 = on(&cluster, from, &["CLUSTER", "KEYSLOT", &name]);
        let slot = slot.to_string();
        let () = on(&cluster, to, &["CLUSTER", "SETSLOT", &slot, "IMPORTING", &ids[from]]);
        let () = on(&cluster, from, &["CLUSTER", "SETSLOT", &slot, "MIGRATING", &ids[to]]);
        // Migrating: the key is still on its node.
        decide(2);
        let keys: Vec<String> = on(&cluster, from, &["CLUSTER", "GETKEYSINSLOT", &slot, "100"]);
        let port = cluster.nodes[to].port.to_string();
        let mut migrate = vec!["MIGRATE", "127.0.0.1", &port, "", "0", "5000", "KEYS"];
        migrate.extend(keys.iter().map(String::as_str));
        let moved: String = on(&cluster, from, &migrate);
        assert_eq!(moved, "OK", "{algo}: MIGRATE");
        // Moved, the slot not yet handed over: the old node asks the new one (ASK).
        decide(3);
        for node in 0..3 {
            let () = on(&cluster, node, &["CLUSTER", "SETSLOT", &slot, "NODE", &ids[to]]);
        }
        // Handed over: the old node sends it on (MOVED).
        decide(2);
        assert_eq!(codes, [0, 0, 0, 0, 0, 1, 1, 1, 1], "{algo}");
    }
}

#[test]
#[ignore = "needs redis-server"]
fn a_replay_through_a_slot_resharded_mid_run_decides_as_memory_does() {
    // Every client sends 7.5 an hour against 5/h: every limiter drops some, and every
    // client's key is busy all through the run.
    replay_through_a_reshard(&ALGOS, "5/h", Duration::from_millis(20));
}

#[test]
#[ignore = "needs redis-server"]
fn a_sliding_log_that_empties_while_its_slot_migrates_decides_as_memory_does() {
    // Each client's events come 8 minutes apart against 1 in 9: every other one is refused,
    // and the one after finds its log's only event gone. A script that emptied the log
    // before it was done with it was refused by the migrating node ("non local key").
    replay_through_a_reshard(&["sliding-log"], "1/9m", Duration::from_millis(100));
}

/// Replays a log of eight clients, one event a minute in turn, through each of `algos` at
/// `rate`, in memory and in a Redis Cluster whose first key's slot starts migrating as
/// the run begins, stays so for `migrating`, and is then moved and handed over; the two
/// reports must be the same.
fn replay_through_a_reshard(algos: &[&str], rate: &str, migrating: Duration) {
    let mut log = String::from("time,client\n");
    for i in 0..30_000 {
        let (h, m) = (i / 60, i % 60);
        let (month, day) = (1 + h / 24 / 28, 1 + h / 24 % 28);
        log += &format!("2025-{month:02}-{day:02}T{:02}:{m:02}:00Z,c{}\n", h % 24, i % 8);
    }
    let log = temp_file("clients.csv", &log);
    let cluster = RedisCluster::start();
    let seed = cluster.url(0);
    let ids: Vec<String> = (0..3).map(|n| on(&cluster, n, &["CLUSTER", "MYID"])).collect();
    for &algo in algos {
        let burst: &[&str] = match algo {
            "token-bucket" | "gcra" | "leaky-queue" => &["--burst", "5"],
            _ => &[],
        };
        let args = ["replay", log.to_str().unwrap(), "--key", "client", "--algo", algo];
        let args = [&args[..], &["--rate", rate, "--format", "json"], burst].concat();
        let memory = run_with(&args, Stdin::Null).ok();
        for node in 0..3 {
            let () = on(&cluster, node, &["FLUSHALL"]);
        }
        let mut child = started(&[&args[..], &["--redis", &seed]].concat());
        // The first key the run writes, on whichever master holds it: its slot moves.
        let deadline = Instant::now() + Duration::from_secs(30);
        let (from, name) = loop {
            let found = (0..3).find_map(|n| {
                let keys: Vec<String> = on(&cluster, n, &["KEYS", "*"]);
                keys.into_iter().next().map(|name| (n, name))
            });
            if let Some(found) = found {
                break found;
            }
            assert!(Instant::now() < deadline, "{algo}: the run wrote no key");
            std::thread::sleep(Duration::from_millis(1));
        };
        let to = (from + 1) % 3;
        let slot: i64 = on(&cluster, from, &["CLUSTER", "KEYSLOT", &name]);
        let slot = slot.to_string();
        let () = on(&cluster, to, &["CLUSTER", "SETSLOT", &slot, "IMPORTING", &ids[from]]);
        let () = on(&cluster, from, &["CLUSTER", "SETSLOT", &slot, "MIGRATING", &ids[to]]);
        std::thread::sleep(migrating);
        let keys: Vec<String> = on(&cluster, from, &["CLUSTER", "GETKEYSINSLOT", &slot, "1000"]);
        if keys.is_empty() {
            let out = finished(child.wait_with_output().unwrap());
            panic!("{algo}: no key to move; the run said: {}", out.stderr);
        }
        let port = cluster.nodes[to].port.to_string();
        let mut migrate = vec!["MIGRATE", "127.0.0.1", &port, "", "0", "5000", "KEYS"];
        migrate.extend(keys.iter().map(String::as_str));
        let moved: String = on(&cluster, from, &migrate);
        assert_eq!(moved, "OK", "{algo}: MIGRATE");
        // Moved, not yet handed over (ASK); then handed over (MOVED), the old node first:
        // for 150 ms the new one, still importing, sends the slot's calls back to it.
        std::thread::sleep(Duration::from_millis(50));
        let () = on(&cluster, from, &["CLUSTER", "SETSLOT", &slot, "NODE", &ids[to]]);
        std::thread::sleep(Duration::from_millis(150));
        for node in (0..3).filter(|&n| n != from) {
            let () = on(&cluster, node, &["CLUSTER", "SETSLOT", &slot, "NODE", &ids[to]]);
        }
        let ended = child.try_wait().unwrap();
        let out = finished(child.wait_with_output().unwrap());
        assert!(ended.is_none(), "{algo}: the run ended before the reshard: {}", out.stderr);
        let in_cluster = out.ok();
        assert_eq!(in_cluster, memory, "{algo}");
    }
}

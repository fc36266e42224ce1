//! The limit specs' tests: what a spec reads as, and the one-line errors it gives.
use super::*;

fn error(text: &str) -> String {
    text.parse::<Limit>().unwrap_err().to_string()
}

#[test]
fn a_systems_own_burst_word_is_its_burst_and_no_one_elses() {
    let own: Limit = "algo=redis-cell,count=5,period=3600,max_burst=4".parse().unwrap();
    let plain: Limit = "algo=redis-cell,rate=5/h,burst=4".parse().unwrap();
    assert_eq!((own.rate, own.burst), (plain.rate, plain.burst));
    let other = error("algo=gcra,rate=5/h,max_burst=4");
    assert!(other.contains("max_burst= is redis-cell's burst: gcra takes burst="), "{other}");
    assert!(error("algo=redis-cell,rate=5/h,max_burst=x").contains("not a whole number"));
}

#[test]
fn reads_what_docker_mount_style_says() {
    let spec: Limit = "algo=gcra,rate=60/m,burst=10,key=api_key".parse().unwrap();
    assert_eq!(spec.algorithm, Algorithm::Gcra);
    assert_eq!(spec.burst, Some(10));
    assert_eq!((spec.cost.clone(), spec.key.as_deref()), (Cost::Each(1), Some("api_key")));
    assert_eq!(spec.to_string(), "algo=gcra,rate=60/m,burst=10,key=api_key");
    let tokens: Limit = "rate=200000/m,algo=gcra,cost=total_tokens".parse().unwrap();
    assert_eq!(tokens.cost, Cost::Column("total_tokens".into()));
    assert_eq!(tokens.to_string(), "algo=gcra,rate=200000/m,cost=total_tokens");
}

#[test]
fn says_what_is_wrong() {
    assert_eq!(error("rate=5/h"), "a limit needs algo=");
    assert_eq!(error("algo=gcra"), "a limit needs rate=");
    assert!(error("algo=gcra,rate=5/h,rate=6/h").contains("rate= is given twice"));
    assert!(error("algo=nope,rate=5/h").contains("not a limiter"));
    assert!(error("algo=gcra,rate=5/h,size=3").contains("'size' is not a key"));
    assert!(error("algo=gcra,rate=5/h,burst").contains("not key=value"));
    assert!(error("algo=sliding-log,rate=5/h,burst=3").contains("not sliding-log"));
    assert!(error("algo=gcra,rate=5/h,burst=0").starts_with("burst=0: a burst must be at least 1"));
    assert!("algo=nginx,rate=5/s,burst=0".parse::<Limit>().is_ok());
    assert!(error("algo=gcra,rate=5/h,key=").contains("needs a column"));
    assert_eq!(error("algo=gcra,rate=5/h,nodelay"), "nodelay applies to nginx, not gcra");
    assert!(error("algo=nginx,rate=5/s,nodelay,delay=2").contains("give one"));
    assert!(error("algo=nginx,rate=5/s,delay=x").contains("not a whole number"));
}

#[test]
fn a_misspelled_or_spaced_spec_is_offered_what_it_may_mean() {
    let said = |text: &str| text.parse::<Limit>().unwrap_err().to_string();
    let algo = said("algo=gcar,rate=5/h");
    assert!(algo.starts_with("algo=gcar is not a limiter (did you mean 'gcra'?): one of "));
    assert_eq!(
        said("algo=nginx,rate=5r/s,nodealy"),
        "'nodealy' is not key=value (algo=, rate=, burst=, cost=, key=) (did you mean 'nodelay'?)"
    );
    assert!(
        said("algo=gcra,rate=5/h,brust=5")
            .starts_with("'brust' is not a key of a limit (did you mean 'burst'?): algo, rate,")
    );
    // Parts spaced apart, as a configuration writes them, joined by commas; a comma
    // with a space after it is a SPEC as it is.
    assert_eq!(
        said("algo=nginx rate=10r/s burst=20 nodelay"),
        "'algo=nginx rate=10r/s burst=20 nodelay' is spaced: a SPEC's parts are joined by \
         commas (did you mean 'algo=nginx,rate=10r/s,burst=20,nodelay'?)"
    );
    assert_eq!(
        said("algo=gcra rate=5/h,burst=2").split(" (did").nth(1).unwrap(),
        " you mean 'algo=gcra,rate=5/h,burst=2'?)"
    );
    let spaced_after_commas: Limit = "algo=gcra, rate=5/h, burst=2".parse().unwrap();
    assert_eq!(spaced_after_commas.to_string(), "algo=gcra,rate=5/h,burst=2");
    // What is near nothing known is not offered anything.
    assert!(!said("algo=zzzzzz,rate=5/h").contains("did you mean"));
}

#[test]
fn errors_name_the_value_they_refuse() {
    let named = |pairs: &[(&str, Option<&str>)]| Limit::from_named(pairs.iter().copied());
    let unknown = named(&[("algo", Some("gcra")), ("brust", Some("5"))]).unwrap_err();
    assert_eq!(unknown, LimitError::Unknown { name: "brust".into() });
    let missing = named(&[("algo", Some("gcra"))]).unwrap_err();
    assert!(matches!(missing, LimitError::Invalid { name: Some(n), .. } if n == "rate"));
    let burst = named(&[("algo", Some("gcra")), ("rate", Some("5/h")), ("burst", Some("0"))]);
    assert!(matches!(burst, Err(LimitError::Invalid { name: Some(n), .. }) if n == "burst"));
    let delay = named(&[("algo", Some("nginx")), ("rate", Some("5/s")), ("delay", Some("x"))]);
    assert!(matches!(delay, Err(LimitError::Invalid { name: Some(n), .. }) if n == "delay"));
    // A name a limit takes, given bare, needs its value; one it does not is unknown.
    let bare = named(&[("algo", Some("gcra")), ("burst", None)]).unwrap_err();
    assert_eq!(bare.to_string(), "burst= needs a value");
    let nodelay = named(&[("algo", Some("nginx")), ("rate", Some("5r/s")), ("nodelay", None)]);
    assert_eq!(nodelay.unwrap().to_string(), "algo=nginx,rate=5r/s,nodelay");
}

#[test]
fn settings_make_the_bucket_the_system_writes() {
    let settings = |text: &str| text.parse::<Limit>().unwrap().settings(None, true, "");
    // nginx's burst counts the requests beyond the first; its default is 0.
    let nginx = settings("algo=nginx,rate=10r/s,burst=0").unwrap();
    assert_eq!((nginx.burst.get(), nginx.window), (1, "1s".parse().unwrap()));
    assert_eq!(settings("algo=nginx,rate=10r/s").unwrap().burst.get(), 1);
    // GCRA's default is a full period's count.
    assert_eq!(settings("algo=gcra,rate=5/h").unwrap().burst.get(), 5);
    let big = format!("algo=gcra,rate=5/h,burst={}", MAX_BURST + 1);
    let refused = settings(&big).unwrap_err();
    assert_eq!(refused.to_string(), format!("burst= may be at most {MAX_BURST}"));
    let haproxy = settings("algo=haproxy,rate=5/1500us").unwrap_err();
    assert!(matches!(haproxy, LimitError::Invalid { name: Some(n), .. } if n == "rate"));
}

#[test]
fn nginx_layers_take_its_delay_nodelay_and_dry_run() {
    for text in ["algo=nginx,rate=5r/s,burst=3,delay=2", "algo=nginx,rate=30r/m,nodelay"] {
        assert_eq!(text.parse::<Limit>().unwrap().to_string(), text);
    }
    let dry: Limit = "algo=nginx,rate=5/s,dry-run".parse().unwrap();
    let settled = dry.params.settle(dry.algorithm, true, "").unwrap();
    assert_eq!(settled.to_string(), "dry-run");
    // In nginx's notation, as its config writes the rate; one it cannot write, as ours.
    assert_eq!(dry.to_string(), "algo=nginx,rate=5r/s,dry-run");
    let odd: Limit = "algo=nginx,rate=5/h".parse().unwrap();
    assert_eq!(odd.rate, "5/h".parse().unwrap());
    // Traefik's own names for its rate: average a period, 1s unless said.
    let traefik: Limit = "algo=traefik,average=100,period=1m,burst=50".parse().unwrap();
    assert_eq!(traefik.rate, "100/m".parse().unwrap());
    assert_eq!(traefik.to_string(), "algo=traefik,average=100,period=1m,burst=50");
    let second: Limit = "algo=traefik,average=5".parse().unwrap();
    assert_eq!(second.rate, "5/s".parse().unwrap());
    assert!(error("algo=gcra,average=5").starts_with("average= and period= are Traefik's"));
    assert!(error("algo=traefik,rate=5/s,average=5").contains("give one"));
    // HAProxy's: sc_http_req_rate(0) gt N over http_req_rate(PERIOD).
    let haproxy: Limit = "algo=haproxy,http_req_rate=10s,gt=20".parse().unwrap();
    assert_eq!(haproxy.rate, "20/10s".parse().unwrap());
    assert_eq!(haproxy.to_string(), "algo=haproxy,http_req_rate=10s,gt=20");
    assert!(error("algo=haproxy,gt=20").contains("give both"));
    let gcra = error("algo=gcra,gt=20,http_req_rate=1s");
    assert!(gcra.starts_with("gt= and http_req_rate= are HAProxy's"), "{gcra}");
    assert_eq!(odd.to_string(), "algo=nginx,rate=5/h");
}

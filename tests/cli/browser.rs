//! A real headless Chromium, driven over its DevTools protocol on a pipe
//! (`--remote-debugging-pipe`: commands go in on its fd 3, answers and events come out of
//! its fd 4, each message JSON ended by a NUL byte).

use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const CHROMIUM: &str = "/usr/bin/chromium";

/// The flags this machine needs: no sandbox (root), no GPU, and none of the background
/// traffic that a closed network refuses.
const FLAGS: [&str; 9] = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-pipe",
];

/// A browser with one page open; stopped when dropped.
pub struct Browser {
    child: Child,
    to: std::io::PipeWriter,
    from: BufReader<std::io::PipeReader>,
    next: u64,
    session: String,
    /// Every event the page sent, in order.
    pub events: Vec<Value>,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts Chromium, opens a page of `width`×`height` CSS pixels, and loads `url` in it,
    /// waiting until the page says it is drawn (`document.body.dataset.ready`); returns the
    /// browser and how long the page took from navigation to drawn.
    pub fn open(url: &str, width: u32, height: u32) -> (Browser, Duration) {
        assert!(
            std::path::Path::new(CHROMIUM).exists(),
            "{CHROMIUM} is missing: install chromium (see .ci/run)"
        );
        let profile = tempfile::tempdir().unwrap();
        let (their_in, to) = std::io::pipe().unwrap();
        let (from, their_out) = std::io::pipe().unwrap();
        let (fd_in, fd_out) = (their_in.as_raw_fd(), their_out.as_raw_fd());
        let mut command = Command::new(CHROMIUM);
        command
            .args(FLAGS)
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: fcntl and dup2 are async-signal-safe. They give the child its ends as fds
        // 3 and 4, without close-on-exec; each end is first moved above 9, so that neither
        // is overwritten when it is itself fd 3 or 4.
        unsafe {
            command.pre_exec(move || {
                let (high_in, high_out) =
                    (libc::fcntl(fd_in, libc::F_DUPFD, 10), libc::fcntl(fd_out, libc::F_DUPFD, 10));
                if high_in < 0
                    || high_out < 0
                    || libc::dup2(high_in, 3) < 0
                    || libc::dup2(high_out, 4) < 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command.spawn().expect("chromium starts");
        drop((their_in, their_out));
        let mut browser = Browser {
            child,
            to,
            from: BufReader::new(from),
            next: 0,
            session: String::new(),
            events: Vec::new(),
            _profile: profile,
        };
        let target = browser.call("Target.createTarget", json!({ "url": "about:blank" }));
        let target = target["targetId"].clone();
        let attached =
            browser.call("Target.attachToTarget", json!({ "targetId": target, "flatten": true }));
        browser.session = attached["sessionId"].as_str().unwrap().to_owned();
        for domain in ["Runtime.enable", "Log.enable", "Network.enable", "Page.enable"] {
            browser.call(domain, json!({}));
        }
        let metrics =
            json!({ "width": width, "height": height, "deviceScaleFactor": 1, "mobile": false });
        browser.call("Emulation.setDeviceMetricsOverride", metrics);
        let began = Instant::now();
        browser.call("Page.navigate", json!({ "url": url }));
        let deadline = began + Duration::from_secs(60);
        while browser.eval("document.body && document.body.dataset.ready === 'true'") != json!(true)
        {
            assert!(
                Instant::now() < deadline,
                "the page was not drawn within 60 s: {:?}",
                browser.errors()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let took = began.elapsed();
        (browser, took)
    }

    /// Sends a command to the page (or the browser, before one is attached) and returns its
    /// result, keeping the events that come meanwhile.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        let mut message = json!({ "id": id, "method": method, "params": params });
        if !self.session.is_empty() {
            message["sessionId"] = json!(self.session);
        }
        let mut bytes = serde_json::to_vec(&message).unwrap();
        bytes.push(0);
        self.to.write_all(&bytes).unwrap();
        loop {
            let mut buffer = Vec::new();
            let read = self.from.read_until(0, &mut buffer).unwrap();
            assert!(read > 0, "chromium closed its pipe");
            buffer.pop();
            let answer: Value = serde_json::from_slice(&buffer).unwrap();
            if answer["id"] == json!(id) {
                assert!(answer.get("error").is_none(), "{method}: {answer}");
                return answer["result"].clone();
            }
            if answer.get("method").is_some() {
                self.events.push(answer);
            }
        }
    }

    /// Evaluates `expression` in the page and returns its value.
    pub fn eval(&mut self, expression: &str) -> Value {
        let params =
            json!({ "expression": expression, "returnByValue": true, "awaitPromise": true });
        let result = self.call("Runtime.evaluate", params);
        assert!(result.get("exceptionDetails").is_none(), "{expression}: {result}");
        result["result"]["value"].clone()
    }

    /// Clicks the element `selector` as a person would: a press and a release of the mouse
    /// at its middle.
    pub fn click(&mut self, selector: &str) {
        let at = self.eval(&format!(
            "(() => {{ const r = document.querySelector('{selector}').getBoundingClientRect(); \
             return [r.x + r.width / 2, r.y + r.height / 2]; }})()"
        ));
        let (x, y) = (at[0].as_f64().unwrap(), at[1].as_f64().unwrap());
        for kind in ["mousePressed", "mouseReleased"] {
            let event = json!({ "type": kind, "x": x, "y": y, "button": "left", "clickCount": 1 });
            self.call("Input.dispatchMouseEvent", event);
        }
    }

    /// Moves the mouse to the middle of the element `selector`.
    pub fn hover(&mut self, selector: &str) {
        let at = self.eval(&format!(
            "(() => {{ const r = document.querySelector('{selector}').getBoundingClientRect(); \
             return [r.x + r.width / 2, r.y + r.height / 2]; }})()"
        ));
        let event = json!({ "type": "mouseMoved", "x": at[0], "y": at[1] });
        self.call("Input.dispatchMouseEvent", event);
    }

    /// Types `key` (one character) into the element that has the focus.
    pub fn key(&mut self, key: &str) {
        for kind in ["keyDown", "keyUp"] {
            self.call("Input.dispatchKeyEvent", json!({ "type": kind, "key": key, "text": key }));
        }
    }

    /// Returns a PNG of what the page shows.
    pub fn screenshot(&mut self) -> Vec<u8> {
        let shot = self.call("Page.captureScreenshot", json!({ "format": "png" }));
        base64(shot["data"].as_str().unwrap())
    }

    /// The errors the page reported: exceptions, console errors and log errors.
    pub fn errors(&self) -> Vec<String> {
        self.events
            .iter()
            .filter(|e| match e["method"].as_str() {
                Some("Runtime.exceptionThrown") => true,
                Some("Runtime.consoleAPICalled") => {
                    matches!(e["params"]["type"].as_str(), Some("error" | "assert"))
                }
                Some("Log.entryAdded") => e["params"]["entry"]["level"] == "error",
                _ => false,
            })
            .map(Value::to_string)
            .collect()
    }

    /// The URLs the page asked for.
    pub fn requests(&self) -> Vec<String> {
        (self.events.iter())
            .filter(|e| e["method"] == "Network.requestWillBeSent")
            .map(|e| e["params"]["request"]["url"].as_str().unwrap_or_default().to_owned())
            .collect()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Decodes standard base64.
fn base64(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("not base64: {c}"),
    };
    let digits: Vec<u8> = text.bytes().filter(|&c| c != b'=').map(value).collect();
    let mut out = Vec::with_capacity(digits.len() * 3 / 4);
    for chunk in digits.chunks(4) {
        let bits =
            chunk.iter().enumerate().fold(0u32, |acc, (i, &d)| acc | u32::from(d) << (18 - 6 * i));
        out.extend(&bits.to_be_bytes()[1..chunk.len()]);
    }
    out
}

//! The conventions of a well-made CLI: shell completions and a manual page, from the same
//! definitions as the parser.

use crate::harness::{Stdin, run_with};

#[test]
fn completions_for_every_shell_know_every_command() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let script = run_with(&["completions", shell], Stdin::Null).ok();
        for command in ["replay", "compare", "min-bucket", "min-rate", "check", "synth"] {
            assert!(script.contains(command), "{shell} completion lacks {command}");
        }
        assert!(script.contains("redis-timeout"), "{shell}");
    }
    let err = run_with(&["completions", "nushell"], Stdin::Null).error();
    assert!(err.contains("[possible values: bash, elvish, fish, powershell, zsh]"), "{err}");
}

#[test]
fn the_manual_page_is_roff_with_every_command() {
    let page = run_with(&["man"], Stdin::Null).ok();
    assert!(page.contains(".TH ratelimit 1"), "{}", &page[..200]);
    for command in ["replay", "compare", "plot", "min\\-bucket", "min\\-rate", "check", "synth"] {
        assert!(page.contains(command), "the page lacks {command}");
    }
}

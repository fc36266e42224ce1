//! Nothing: the package only names the crate .ci/run fetches (Cargo.toml).

//! napi-rs's link settings for a Node addon (none are needed on Linux;
//! macOS needs `-undefined dynamic_lookup`).
fn main() {
    napi_build::setup();
}

//! Any bytes as a profile: parsed, resolved and compiled as `sbx enforce` does; no panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = sbx::fuzzing::parse_profile(data);
});

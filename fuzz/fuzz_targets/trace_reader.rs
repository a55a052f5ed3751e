//! Any bytes as a trace: no panic, and the strings the events carry stay within the reader's
//! bounds (`-rss_limit_mb` catches an allocation that the accounting would miss).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let s = sbx::fuzzing::read_trace(data);
    let (per_event, total) = sbx::fuzzing::trace_budget(data.len());
    assert!(s.max_event_bytes <= per_event && s.string_bytes <= total, "{s:?}");
    if let Some(e) = &s.error {
        assert!(!e.contains('\n'), "{e}");
    }
});

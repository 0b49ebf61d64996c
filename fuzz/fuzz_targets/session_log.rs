#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ssdlab_fuzz::session_log(data));

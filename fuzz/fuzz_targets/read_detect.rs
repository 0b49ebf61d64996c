#![no_main]
use libfuzzer_sys::fuzz_target;

// No format named: detection from the first lines, then whichever reader it picked.
fuzz_target!(|data: &[u8]| ssdlab_fuzz::read_all(data, None));

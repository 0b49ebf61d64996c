#![no_main]
use libfuzzer_sys::fuzz_target;
use ssdlab::workload::trace::Format;

fuzz_target!(|data: &[u8]| ssdlab_fuzz::read_all(data, Some(Format::Spc)));

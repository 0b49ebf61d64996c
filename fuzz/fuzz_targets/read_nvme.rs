#![no_main]
use libfuzzer_sys::fuzz_target;
use ssdlab::workload::trace::Format;

// The NVMe tracepoint reader, with 512-byte and with the largest (64 KiB) logical blocks, where
// an LBA times the block size is nearest to overflowing.
fuzz_target!(|data: &[u8]| {
    ssdlab_fuzz::read_all(data, Some(Format::Nvme));
    ssdlab_fuzz::read_all_lba(data, Some(Format::Nvme), 65536);
});

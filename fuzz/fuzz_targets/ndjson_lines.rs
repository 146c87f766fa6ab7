//! NDJSON line splitting: the lines do not depend on how the bytes were
//! chunked, no line is longer than the limit, and nothing panics.
#![no_main]

use augur::inputs::LineSplitter;
use libfuzzer_sys::fuzz_target;

fn lines(chunks: &[&[u8]], max: usize) -> Vec<Result<Vec<u8>, ()>> {
    let mut s = LineSplitter::new(max);
    let mut out = Vec::new();
    for c in chunks {
        s.push(c);
        while let Some(l) = s.next_line() {
            out.push(l.map(|b| b.to_vec()).map_err(|_| ()));
        }
    }
    while let Some(l) = s.finish() {
        out.push(l.map(|b| b.to_vec()).map_err(|_| ()));
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let Some((&seed, data)) = data.split_first() else {
        return;
    };
    let max = 1 + usize::from(seed % 64);
    let whole = lines(&[data], max);
    for l in whole.iter().flatten() {
        assert!(l.len() <= max && !l.contains(&b'\n'));
    }
    // The same bytes in pieces of every size from the seed.
    let step = 1 + usize::from(seed / 64);
    let pieces: Vec<&[u8]> = data.chunks(step).collect();
    assert_eq!(lines(&pieces, max), whole);
});

//! The splitter: unit cases, and that the lines do not depend on how the
//! input is chunked (every split point, byte by byte, seeded random splits).

use super::*;

/// Everything the splitter yields for `chunks`, pushed one by one, with
/// the lines taken after each push and the end of the stream last.
fn run(max_line: usize, chunks: &[&[u8]]) -> Vec<Result<Bytes, LineTooLong>> {
    let mut s = LineSplitter::new(max_line);
    let mut out = Vec::new();
    for chunk in chunks {
        s.push(chunk);
        while let Some(item) = s.next_line() {
            out.push(item);
        }
    }
    while let Some(item) = s.finish() {
        out.push(item);
    }
    out
}

fn ok(lines: &[&str]) -> Vec<Result<Bytes, LineTooLong>> {
    lines
        .iter()
        .map(|l| Ok(Bytes::copy_from_slice(l.as_bytes())))
        .collect()
}

#[test]
fn complete_lines_come_out_without_their_newline() {
    assert_eq!(
        run(64, &[b"{\"a\":1}\n{\"b\":2}\n"]),
        ok(&["{\"a\":1}", "{\"b\":2}"])
    );
}

#[test]
fn a_line_split_across_chunks_comes_out_once_complete() {
    let mut s = LineSplitter::new(64);
    s.push(b"{\"a\"");
    assert!(s.next_line().is_none());
    assert_eq!(s.buffered(), 4);
    s.push(b":1}");
    assert!(s.next_line().is_none());
    s.push(b"\n");
    assert_eq!(s.next_line(), Some(Ok(Bytes::from_static(b"{\"a\":1}"))));
    assert_eq!(s.buffered(), 0);
}

#[test]
fn blank_lines_are_skipped() {
    assert_eq!(run(64, &[b"\n \r\n{}\n\t\n{}\n  "]), ok(&["{}", "{}"]));
}

#[test]
fn the_last_line_without_a_newline_comes_at_the_end() {
    assert_eq!(
        run(64, &[b"{}\n{\"done\":", b"true}"]),
        ok(&["{}", "{\"done\":true}"])
    );
}

#[test]
fn a_line_at_the_limit_passes_and_one_over_it_fails_once() {
    assert_eq!(run(4, &[b"abcd\n"]), ok(&["abcd"]));
    assert_eq!(run(4, &[b"abcd"]), ok(&["abcd"]));
    let over = vec![Ok(Bytes::from_static(b"ab")), Err(LineTooLong { limit: 4 })];
    assert_eq!(run(4, &[b"ab\nabcde\nab\n"]), over);
    // In pieces, the error comes before the line is complete.
    let mut s = LineSplitter::new(4);
    s.push(b"abc");
    assert!(s.next_line().is_none());
    s.push(b"de");
    assert_eq!(s.next_line(), Some(Err(LineTooLong { limit: 4 })));
    assert_eq!(s.buffered(), 0);
    s.push(b"\nab\n");
    assert!(s.next_line().is_none());
    assert!(s.finish().is_none());
}

#[test]
fn an_endless_line_is_not_held_past_the_limit() {
    let mut s = LineSplitter::new(1024);
    let mut failed = false;
    for _ in 0..100 {
        s.push(&[b'x'; 100]);
        if let Some(item) = s.next_line() {
            assert!(item.is_err());
            failed = true;
        }
        assert!(s.buffered() <= 1024 + 100);
    }
    assert!(failed);
}

/// A small deterministic generator (xorshift), so the property below needs
/// no dependency and fails the same way every time.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Split `input` at the given points (sorted, within bounds).
fn chunked<'a>(input: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut chunks = Vec::new();
    let mut start = 0;
    for &cut in cuts {
        chunks.push(&input[start..cut]);
        start = cut;
    }
    chunks.push(&input[start..]);
    chunks
}

#[test]
fn lines_do_not_depend_on_how_the_input_is_chunked() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let alphabet = b"ab{}\" \n\n\r";
    for case in 0..400 {
        let len = rng.below(40);
        let input: Vec<u8> = (0..len)
            .map(|_| alphabet[rng.below(alphabet.len())])
            .collect();
        let max_line = 1 + rng.below(12);
        let whole = run(max_line, &[&input]);
        // Every single split point, including empty chunks at both ends.
        for cut in 0..=input.len() {
            let got = run(max_line, &chunked(&input, &[cut]));
            assert_eq!(got, whole, "case {case}, {input:?} cut at {cut}");
        }
        // Byte by byte.
        let bytes: Vec<&[u8]> = input.chunks(1).collect();
        assert_eq!(run(max_line, &bytes), whole, "case {case}, byte by byte");
        // Random splits.
        for _ in 0..20 {
            let mut cuts: Vec<usize> = (0..rng.below(6))
                .map(|_| rng.below(input.len() + 1))
                .collect();
            cuts.sort_unstable();
            let got = run(max_line, &chunked(&input, &cuts));
            assert_eq!(got, whole, "case {case}, {input:?} cut at {cuts:?}");
        }
    }
}

#[test]
fn the_lines_are_the_input_split_at_newlines() {
    let mut rng = Rng(7);
    for _ in 0..200 {
        let lines: Vec<String> = (0..rng.below(6))
            .map(|_| "x".repeat(1 + rng.below(8)))
            .collect();
        let mut input = lines.join("\n");
        if rng.below(2) == 0 {
            input.push('\n');
        }
        let expected: Vec<&str> = lines.iter().map(String::as_str).collect();
        assert_eq!(run(8, &[input.as_bytes()]), ok(&expected));
    }
}

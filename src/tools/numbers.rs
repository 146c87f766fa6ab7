//! Numbers mentioned in text, written with digits (`12`, `1,000`, `3.5`)
//! or as English words (`five`, `twenty-five`, `three hundred`, `a
//! dozen`, `third`), for the grounding rule ([`super::grounding`]).

/// Most numbers collected from one text.
const MAX_NUMBERS: usize = 50_000;

/// The numbers in `text` (lower-case), as absolute values, sorted and
/// without duplicates.
pub(crate) fn numbers_in(text: &str) -> Vec<f64> {
    let mut numbers = Vec::new();
    digits_in(text, &mut numbers);
    words_in(text, &mut numbers);
    numbers.sort_by(f64::total_cmp);
    numbers.dedup();
    numbers
}

/// Numbers written with digits (`12`, `1,000`, `3.5`), as absolute values.
fn digits_in(text: &str, out: &mut Vec<f64>) {
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() && out.len() < MAX_NUMBERS {
        if !b[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        // Thousands separators: ",ddd" not followed by another digit.
        while b.get(i) == Some(&b',')
            && b.get(i + 1..i + 4)
                .is_some_and(|d| d.iter().all(u8::is_ascii_digit))
            && !b.get(i + 4).is_some_and(u8::is_ascii_digit)
        {
            i += 4;
        }
        if b.get(i) == Some(&b'.') && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
            i += 1;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
        }
        let digits = text[start..i].replace(',', "");
        if let Ok(n) = digits.parse::<f64>() {
            out.push(n);
        }
        // The group before a separator stands alone too ("1,000" or "1, 000").
        if let Some(first) = text[start..i].split(',').next()
            && first.len() < i - start
            && let Ok(n) = first.parse::<f64>()
        {
            out.push(n);
        }
    }
}

/// Numbers written as English words: `five`, `twenty-five`, `three
/// hundred`, `a dozen`, `third`.
fn words_in(text: &str, out: &mut Vec<f64>) {
    let words: Vec<&str> = text
        .split(|c: char| !c.is_ascii_alphabetic())
        .filter(|w| !w.is_empty())
        .collect();
    for (i, w) in words.iter().enumerate() {
        if out.len() >= MAX_NUMBERS {
            return;
        }
        let Some(n) = word_value(w) else { continue };
        out.push(n);
        let next = words.get(i + 1).and_then(|w| word_value(w));
        match next {
            Some(u) if (20.0..100.0).contains(&n) && n % 10.0 == 0.0 && u < 10.0 => out.push(n + u),
            Some(m)
                if m >= 100.0
                    && n < 100.0
                    && matches!(words[i + 1], "hundred" | "thousand" | "million") =>
            {
                out.push(n * m)
            }
            _ => {}
        }
    }
}

fn word_value(w: &str) -> Option<f64> {
    const WORDS: [(&str, f64); 40] = [
        ("zero", 0.0),
        ("one", 1.0),
        ("two", 2.0),
        ("three", 3.0),
        ("four", 4.0),
        ("five", 5.0),
        ("six", 6.0),
        ("seven", 7.0),
        ("eight", 8.0),
        ("nine", 9.0),
        ("ten", 10.0),
        ("eleven", 11.0),
        ("twelve", 12.0),
        ("thirteen", 13.0),
        ("fourteen", 14.0),
        ("fifteen", 15.0),
        ("sixteen", 16.0),
        ("seventeen", 17.0),
        ("eighteen", 18.0),
        ("nineteen", 19.0),
        ("twenty", 20.0),
        ("thirty", 30.0),
        ("forty", 40.0),
        ("fifty", 50.0),
        ("sixty", 60.0),
        ("seventy", 70.0),
        ("eighty", 80.0),
        ("ninety", 90.0),
        ("hundred", 100.0),
        ("thousand", 1000.0),
        ("million", 1_000_000.0),
        ("dozen", 12.0),
        ("first", 1.0),
        ("second", 2.0),
        ("third", 3.0),
        ("fourth", 4.0),
        ("fifth", 5.0),
        ("sixth", 6.0),
        ("half", 0.5),
        ("once", 1.0),
    ];
    WORDS.iter().find(|(k, _)| *k == w).map(|(_, v)| *v)
}

#[cfg(test)]
#[path = "numbers_tests.rs"]
mod tests;

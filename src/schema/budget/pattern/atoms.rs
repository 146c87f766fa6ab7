//! What one atom outside a class costs: a literal, a Perl class, an
//! escape, a Unicode property (by a table of measured sizes).

use super::state::{Cost, Cursor, MAX_PROPERTY, NEGATION};

/// A literal character: a state per UTF-8 byte, and under `(?i)` its case
/// variants (for ASCII only `k` and `s` have non-ASCII ones).
pub(super) fn literal(c: char, case_insensitive: bool) -> u64 {
    match (c.is_ascii(), case_insensitive) {
        (true, true) if matches!(c.to_ascii_lowercase(), 'k' | 's') => 3,
        (true, _) => 1,
        (false, false) => c.len_utf8() as u64,
        (false, true) => 2 * c.len_utf8() as u64,
    }
}

/// `\d`, `\D`, `\w`, `\W`, `\s`, `\S`: measured sizes as translated
/// (ASCII, ECMA-262 white space) and as Unicode classes.
pub(super) fn perl_class(c: char) -> Option<Cost> {
    let (ecma, unicode) = match c {
        'd' => (1, 25),
        'D' => (NEGATION, 30),
        'w' => (1, 316),
        'W' => (NEGATION, 318),
        's' => (10, 10),
        'S' => (17, 17),
        _ => return None,
    };
    Some(Cost { ecma, unicode })
}

/// An escape outside a class (after the `\`).
pub(super) fn escape(cur: &mut Cursor, case_insensitive: bool, fancy: &mut bool) -> Cost {
    let Some(c) = cur.next() else {
        return Cost::both(1);
    };
    if let Some(cost) = perl_class(c) {
        return cost;
    }
    match c {
        'p' | 'P' => Cost::both(property(cur, c == 'P')).folded(case_insensitive),
        'x' | 'u' | 'U' => Cost::both(literal(code_point(cur, c), case_insensitive)),
        '1'..='9' => {
            // A back-reference: only `fancy-regex` has them.
            *fancy = true;
            while cur.peek().is_some_and(|c| c.is_ascii_digit()) {
                cur.next();
            }
            Cost::both(1)
        }
        'k' => {
            *fancy = true;
            if matches!(cur.peek(), Some('<' | '{')) {
                let end = if cur.next() == Some('<') { '>' } else { '}' };
                cur.until(end, 0);
            }
            Cost::both(1)
        }
        'c' => {
            cur.next();
            Cost::both(1)
        }
        c => Cost::both(literal(c, case_insensitive)),
    }
}

/// The character of `\x7F`, `\x{…}`, `\u00E9`, `\U0001F600` (after the
/// letter); one of four UTF-8 bytes if unreadable.
pub(super) fn code_point(cur: &mut Cursor, kind: char) -> char {
    let hex = if cur.eat('{') {
        cur.until('}', 8)
    } else {
        let digits = match kind {
            'x' => 2,
            'u' => 4,
            _ => 8,
        };
        let mut hex = String::new();
        while hex.len() < digits && cur.peek().is_some_and(|c| c.is_ascii_hexdigit()) {
            hex.extend(cur.next());
        }
        hex
    };
    u32::from_str_radix(hex.trim(), 16)
        .ok()
        .and_then(char::from_u32)
        .unwrap_or('\u{10000}')
}

/// A Unicode property (after `\p` or `\P`): `\pL` or `\p{…}`, its measured
/// size, plus [`NEGATION`] for `\P` or `!=`.
pub(super) fn property(cur: &mut Cursor, negated: bool) -> u64 {
    let name = if cur.eat('{') {
        cur.until('}', 64)
    } else {
        cur.next().map(String::from).unwrap_or_default()
    };
    let name: String = name
        .chars()
        .filter(|c| !matches!(c, ' ' | '_' | '-') && !c.is_whitespace())
        .flat_map(char::to_lowercase)
        .collect();
    let (negated, cost) = match name.split_once(['=', ':']) {
        Some((key, value)) => {
            let (key, negated) = match key.strip_suffix('!') {
                Some(key) => (key, !negated),
                None => (key, negated),
            };
            let cost = match key {
                "gc" | "generalcategory" | "sc" | "script" => property_size(value),
                "scx" | "scriptextensions" => property_size(value).saturating_mul(2),
                _ => MAX_PROPERTY,
            };
            (negated, cost.min(MAX_PROPERTY))
        }
        None => (negated, property_size(&name)),
    };
    cost + if negated { NEGATION } else { 0 }
}

/// Measured NFA states of a property (name lower-cased, without spaces,
/// `_` and `-`), rounded up; [`MAX_PROPERTY`] for any other.
pub(super) fn property_size(name: &str) -> u64 {
    match name {
        "l" | "letter" => 300,
        "lu" | "uppercaseletter" | "upper" | "uppercase" => 80,
        "ll" | "lowercaseletter" | "lower" | "lowercase" => 90,
        "lt" | "titlecaseletter" | "me" | "enclosingmark" => 8,
        "lm" | "modifierletter" => 64,
        "lo" | "otherletter" => 256,
        "lc" | "casedletter" | "cased" => 80,
        "m" | "mark" | "combiningmark" | "mn" | "nonspacingmark" => 176,
        "mc" | "spacingmark" => 88,
        "n" | "number" => 96,
        "nd" | "decimalnumber" | "digit" => 28,
        "nl" | "letternumber" => 20,
        "no" | "othernumber" => 76,
        "p" | "punctuation" | "punct" => 130,
        "pc" | "connectorpunctuation" | "pi" | "initialpunctuation" => 8,
        "pf" | "finalpunctuation" => 8,
        "pd" | "dashpunctuation" | "dash" => 24,
        "ps" | "openpunctuation" | "pe" | "closepunctuation" => 24,
        "po" | "otherpunctuation" => 120,
        "s" | "symbol" => 144,
        "sm" | "mathsymbol" | "math" => 48,
        "sc" | "currencysymbol" | "sk" | "modifiersymbol" => 28,
        "so" | "othersymbol" => 120,
        "z" | "separator" | "zs" | "spaceseparator" => 8,
        "whitespace" | "wspace" | "space" => 8,
        "zl" | "lineseparator" | "zp" | "paragraphseparator" | "cc" | "control" => 4,
        "cf" | "format" => 32,
        "co" | "privateuse" | "any" => 8,
        "ascii" => 1,
        "emoji" => 52,
        "extendedpictographic" | "extpict" => 48,
        "latin" | "latn" => 48,
        "greek" | "grek" | "arabic" | "arab" => 32,
        "cyrillic" | "cyrl" => 24,
        "han" | "hani" => 40,
        "hebrew" | "hebr" => 8,
        "hiragana" | "hira" | "katakana" | "kana" | "hangul" | "hang" => 20,
        "ethiopic" | "ethi" => 20,
        "devanagari" | "deva" | "thai" | "armenian" | "armn" => 12,
        "georgian" | "geor" | "tamil" | "taml" | "bengali" | "beng" => 12,
        "common" | "zyyy" => 120,
        "inherited" | "zinh" | "qaai" => 36,
        "ideographic" | "ideo" => 36,
        "unifiedideograph" | "uideo" | "softdotted" | "sd" => 32,
        "noncharactercodepoint" | "nchar" => 8,
        "defaultignorablecodepoint" | "di" => 28,
        "changeswhencasemapped" | "cwcm" | "changeswhencasefolded" | "cwcf" => 72,
        "changeswhenlowercased" | "cwl" | "changeswhenuppercased" | "cwu" => 72,
        "changeswhentitlecased" | "cwt" => 72,
        "diacritic" | "dia" => 144,
        "graphemeextend" | "grext" => 180,
        "caseignorable" | "ci" => 220,
        _ => MAX_PROPERTY,
    }
}

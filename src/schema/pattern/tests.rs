//! `pattern` rewriting against the converter's subset.

use super::to_grammar_pattern as t;

#[test]
fn anchors_unanchored_patterns() {
    assert_eq!(t("ab+").as_deref(), Ok("^.*(?:ab+).*$"));
    assert_eq!(t("^ab+$").as_deref(), Ok("^ab+$"));
    assert_eq!(t("^ab").as_deref(), Ok("^(?:ab).*$"));
    assert_eq!(t("ab$").as_deref(), Ok("^.*(?:ab)$"));
    assert_eq!(t("a|b").as_deref(), Ok("^.*(?:a|b).*$"));
    assert_eq!(t("^a|b$").as_deref(), Ok("^(?:(a).*|.*(b))$"));
}

#[test]
fn translates_shorthand_classes() {
    assert_eq!(t(r"^\d{3}-\d{4}$").as_deref(), Ok("^[0-9]{3}-[0-9]{4}$"));
    assert_eq!(t(r"^\w+$").as_deref(), Ok("^[a-zA-Z0-9_]+$"));
    assert_eq!(t(r"^[\d.]+$").as_deref(), Ok("^[0-9.]+$"));
    assert_eq!(t(r"^\s*$").as_deref(), Ok(r"^[ \t\n\r]*$"));
    assert_eq!(t(r"^a\.b$").as_deref(), Ok("^a[.]b$"));
    assert_eq!(t(r"^[a\-z]$").as_deref(), Ok(r"^[a\x2Dz]$"));
    assert_eq!(t(r"^a\/b$").as_deref(), Ok("^a[/]b$"));
    assert_eq!(t("^(?<y>[0-9]{4})$").as_deref(), Ok("^([0-9]{4})$"));
    assert_eq!(t("^a+?$").as_deref(), Ok("^a+$"));
}

#[test]
fn refuses_untranslatable_patterns() {
    for p in [
        r"\bword\b",
        "(?=a)b",
        "(?!x)",
        r"(a)\1",
        r"\p{L}+",
        "a{5000}",
        "(a{100}){100}",
        "",
        "a^b",
        "(ab",
        "[ab",
        "*a",
        r"[\D]",
    ] {
        assert!(t(p).is_err(), "{p} should be refused");
    }
}

//! Unit tests of `model_name`.

use super::*;

#[test]
fn every_spelling_of_a_model_is_one_name() {
    for alias in [
        "gemma3",
        "gemma3:latest",
        "library/gemma3",
        "registry.ollama.ai/library/gemma3",
        "registry.ollama.ai/library/gemma3:latest",
        "https://registry.ollama.ai/library/gemma3:latest",
        "GEMMA3",
        "Library/Gemma3:LATEST",
        " gemma3 ",
        "gemma3:local",
    ] {
        assert_eq!(normalize_model_name(alias), "gemma3:latest", "{alias}");
    }
    assert_eq!(
        normalize_model_name("registry.ollama.ai/library/gemma3:4b"),
        "gemma3:4b"
    );
    assert_eq!(normalize_model_name("gemma3:4b:local"), "gemma3:4b");
}

proptest::proptest! {
    /// The short form, where it applies, is what parsing in full gives.
    #[test]
    fn the_short_form_agrees_with_the_full_parse(name in "[a-z0-9._-]{1,8}(:[a-z0-9._-]{0,8}(-cloud|cloud|local)?)?|[a-zA-Z0-9._:/ -]{1,14}") {
        let trimmed = name.trim();
        if let Some(short) = short_form(trimmed) {
            proptest::prop_assert_eq!(short, general_form(trimmed));
        }
    }
}

#[test]
fn hosts_namespaces_and_sources_are_kept() {
    assert_eq!(
        normalize_model_name("hf.co/org/m:Q4_K_M"),
        "hf.co/org/m:q4_k_m"
    );
    assert_eq!(normalize_model_name("org/m"), "org/m:latest");
    // Ollama reads "localhost:5000" here as a namespace, which it refuses.
    assert_eq!(normalize_model_name("localhost:5000/m"), "localhost:5000/m");
    assert_eq!(
        normalize_model_name("localhost:5000/ns/m:1"),
        "localhost:5000/ns/m:1"
    );
    assert_eq!(
        normalize_model_name("gpt-oss:20b:cloud"),
        "gpt-oss:20b:cloud"
    );
    assert_eq!(
        normalize_model_name("gpt-oss:20b-cloud"),
        "gpt-oss:20b:cloud"
    );
    assert_eq!(
        normalize_model_name("gpt-oss:cloud"),
        "gpt-oss:latest:cloud"
    );
    assert_eq!(normalize_model_name(""), "");
    // Names Ollama refuses stay themselves.
    assert_eq!(normalize_model_name("Ünï"), "ünï");
    assert_eq!(normalize_model_name("a b"), "a b");
    assert_eq!(normalize_model_name("/x"), "/x");
}

#[test]
fn only_names_ollama_accepts_are_valid() {
    for good in [
        "gemma3",
        "Gemma3:4B",
        " gemma3 ",
        "library/gemma3:latest",
        "hf.co/org/m:Q4_K_M",
        "https://registry.ollama.ai/library/gemma3:latest",
        "gpt-oss:20b-cloud",
        "gemma3:local",
        // Surrounding whitespace is not part of the name.
        "big\n",
    ] {
        assert!(is_valid_model_name(good), "{good:?}");
    }
    for bad in [
        "",
        " ",
        "big\r\nX-Evil: 1",
        "bi\tg",
        "big\u{7f}",
        "big\0",
        "a b",
        "gemma3:*",
        "Ünï",
        "/x",
        "x:",
        "gemma3:4b:cloud:local",
        "-x",
    ] {
        assert!(!is_valid_model_name(bad), "{bad:?}");
    }
}

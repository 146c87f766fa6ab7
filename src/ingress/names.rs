//! Reading the models a JSON body names the way Ollama's Go decoder reads
//! them, or refusing the body.
//!
//! Auth and limits act on the model augur reads from the body; the upstream
//! runs the model Go's `encoding/json` reads from the same bytes. Where the
//! two readings could differ, the body is refused (400) rather than
//! forwarded:
//!
//! * Go matches keys case-insensitively (with Unicode folding: `ſ` is `s`,
//!   the Kelvin sign is `k`) and the last match wins, so a known field
//!   spelled other than in lowercase, or written twice, is refused;
//! * Go reads only the first JSON value, so anything but whitespace after
//!   the object is refused;
//! * a model field must be a string (or `null`, which Go leaves empty).
//!
//! Values of other fields are skipped without being built: lone surrogate
//! escapes, numbers out of `f64` range and deep nesting are accepted there,
//! as Go accepts them in fields it skips. The same pass notes whether the
//! fields augur acts on (`format`, `tools`, `think`, `response_format`,
//! `output_config`, …) are present, so most requests are never parsed in
//! full.

use std::{borrow::Cow, collections::HashSet, fmt};

use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};

/// Top-level fields augur reads somewhere; each must be spelled exactly so.
const KNOWN: [&str; 36] = [
    "model",
    "name",
    "from",
    "source",
    "destination",
    "modelfile",
    "messages",
    "prompt",
    "system",
    "template",
    "format",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "think",
    "thinking",
    "stream",
    "stream_options",
    "options",
    "response_format",
    "keep_alive",
    "raw",
    "suffix",
    "images",
    "input",
    "instructions",
    "text",
    "reasoning",
    "reasoning_effort",
    "max_tokens",
    "max_completion_tokens",
    "max_output_tokens",
    "temperature",
    "top_p",
    "output_format",
    "output_config",
];

/// Fields whose presence (not `null`) means augur may change the request,
/// on any surface: Ollama's `format`, `tools`, `think`; OpenAI's
/// `response_format`, `text` (Responses) and `reasoning`; Anthropic's
/// `thinking` and structured outputs (`output_config`, whose `effort` is
/// thinking too, and the beta's `output_format`).
const ACTED_ON: [&str; 9] = [
    "format",
    "tools",
    "think",
    "response_format",
    "text",
    "reasoning",
    "thinking",
    "output_format",
    "output_config",
];

/// Why a body was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NamesError {
    #[error("missing request body")]
    Empty,
    #[error("invalid JSON body: {0}")]
    Json(String),
    #[error("the request body must be a JSON object")]
    NotObject,
    #[error("field {0:?} appears more than once")]
    Duplicate(String),
    #[error("field {found:?} must be written {expected:?}")]
    Spelling {
        found: String,
        expected: &'static str,
    },
    #[error("field {0:?} must be a string")]
    NotString(&'static str),
}

/// What a body says, read once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Names {
    /// `(field, value)` for each model-naming field with a non-empty value,
    /// in the order of the route's field list.
    pub models: Vec<(&'static str, String)>,
    /// A field augur may act on is present.
    pub acted_on: bool,
}

impl Names {
    /// The model limits are counted for: the first named one.
    pub fn primary(&self) -> Option<&str> {
        self.models.first().map(|(_, m)| m.as_str())
    }
}

/// Go's case folding of a key, as far as it matters for ASCII field names:
/// ASCII letters ignore case, `ſ` (U+017F) is `s` and `K` (U+212A) is `k`.
fn go_fold(key: &str) -> Cow<'_, str> {
    if key
        .bytes()
        .all(|b| b.is_ascii_lowercase() || !b.is_ascii_alphabetic() && b.is_ascii())
    {
        return Cow::Borrowed(key);
    }
    Cow::Owned(
        key.chars()
            .map(|c| match c {
                '\u{017F}' => 's',
                '\u{212A}' => 'k',
                c => c.to_ascii_lowercase(),
            })
            .collect(),
    )
}

/// Read the models named by `fields` in `body` (see the module doc).
/// When `fields` holds `from`, the `FROM` lines of a legacy `modelfile`
/// name models too.
pub fn read(body: &[u8], fields: &'static [&'static str]) -> Result<Names, NamesError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(NamesError::Empty);
    }
    let mut de = serde_json::Deserializer::from_slice(body);
    let mut found = Found {
        fields,
        values: vec![None; fields.len()],
        modelfile: None,
        acted_on: false,
        refusal: None,
    };
    if let Err(e) = (&mut de).deserialize_any(TopLevel(&mut found)) {
        return Err(found
            .refusal
            .take()
            .unwrap_or_else(|| NamesError::Json(e.to_string())));
    }
    de.end().map_err(|e| NamesError::Json(e.to_string()))?;
    let mut models = Vec::new();
    for (field, value) in fields.iter().zip(found.values) {
        if let Some(v) = value.filter(|v| !v.trim().is_empty()) {
            models.push((*field, v));
        }
    }
    if let Some(text) = found.modelfile {
        for base in modelfile_bases(&text) {
            models.push(("modelfile", base));
        }
    }
    Ok(Names {
        models,
        acted_on: found.acted_on,
    })
}

/// The base models of a Modelfile: the argument of each `FROM` line.
fn modelfile_bases(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| {
            let line = line.trim();
            let (cmd, rest) = line.split_once(char::is_whitespace)?;
            cmd.eq_ignore_ascii_case("from")
                .then(|| rest.trim().trim_matches('"').to_string())
        })
        .filter(|m| !m.is_empty())
        .collect()
}

struct Found {
    fields: &'static [&'static str],
    values: Vec<Option<String>>,
    modelfile: Option<String>,
    acted_on: bool,
    /// Why the body was refused, when augur (not the JSON syntax) refused it.
    refusal: Option<NamesError>,
}

impl Found {
    fn refuse<E: de::Error>(&mut self, why: NamesError) -> E {
        let e = E::custom(&why);
        self.refusal = Some(why);
        e
    }
}

struct TopLevel<'a>(&'a mut Found);

impl<'de> Visitor<'de> for TopLevel<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let found = self.0;
        // Keys as Go matches them; borrowed from the body when they can be.
        let mut seen = Seen::default();
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            let folded = match &key {
                Cow::Borrowed(k) => go_fold(k),
                Cow::Owned(k) => Cow::Owned(go_fold(k).into_owned()),
            };
            if !seen.insert(folded.clone()) {
                return Err(found.refuse(NamesError::Duplicate(key.into_owned())));
            }
            let Some(known) = KNOWN.iter().copied().find(|k| *k == folded) else {
                map.next_value::<IgnoredAny>()?;
                continue;
            };
            if key != known {
                let found_key = key.into_owned();
                return Err(found.refuse(NamesError::Spelling {
                    found: found_key,
                    expected: known,
                }));
            }
            let index = found.fields.iter().position(|f| *f == known);
            let modelfile = known == "modelfile" && found.fields.contains(&"from");
            if index.is_none() && !modelfile {
                let present = map.next_value::<Option<IgnoredAny>>()?.is_some();
                found.acted_on |= present && ACTED_ON.contains(&known);
                continue;
            }
            let value = match map.next_value_seed(StringOrNull)? {
                Ok(v) => v,
                Err(NotString) => return Err(found.refuse(NamesError::NotString(known))),
            };
            match index {
                Some(i) => found.values[i] = value,
                None => found.modelfile = value,
            }
        }
        Ok(())
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, _: A) -> Result<(), A::Error> {
        Err(self.0.refuse(NamesError::NotObject))
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Err(self.0.refuse(NamesError::NotObject))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Err(self.0.refuse(NamesError::NotObject))
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Err(self.0.refuse(NamesError::NotObject))
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Err(self.0.refuse(NamesError::NotObject))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Err(self.0.refuse(NamesError::NotObject))
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Err(self.0.refuse(NamesError::NotObject))
    }
}

/// The keys of an object seen so far: a short list scanned in place (most
/// bodies have a handful of keys), a hash set past [`Seen::FEW`].
#[derive(Default)]
struct Seen<'de> {
    few: Vec<Cow<'de, str>>,
    many: HashSet<Cow<'de, str>>,
}

impl<'de> Seen<'de> {
    const FEW: usize = 16;

    /// Whether `key` is new.
    fn insert(&mut self, key: Cow<'de, str>) -> bool {
        if self.many.is_empty() {
            if self.few.contains(&key) {
                return false;
            }
            if self.few.len() < Self::FEW {
                self.few.push(key);
                return true;
            }
            // The list is full: its keys move to the set.
            self.many.extend(self.few.drain(..));
        }
        self.many.insert(key)
    }
}

/// An object key, borrowed from the body unless it holds escapes (serde's
/// own `Cow` always copies).
struct Key<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object key")
            }

            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

/// A model field held something other than a string or `null`.
struct NotString;

/// A model field: a string, or `null` (left empty, as Go does). Any other
/// value is consumed and reported as [`NotString`].
struct StringOrNull;

impl<'de> DeserializeSeed<'de> for StringOrNull {
    type Value = Result<Option<String>, NotString>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for StringOrNull {
    type Value = Result<Option<String>, NotString>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Ok(Some(v.to_string())))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Ok(None))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Err(NotString))
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(Err(NotString))
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(Err(NotString))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(Err(NotString))
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Err(NotString))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Err(NotString))
    }
}

#[cfg(test)]
#[path = "names_tests.rs"]
mod tests;

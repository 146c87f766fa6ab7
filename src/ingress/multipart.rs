//! `multipart/form-data` bodies that name a model
//! (`POST /v1/audio/transcriptions`), read strictly and forwarded
//! re-encoded.
//!
//! Ollama reads the model with Go's `Request.FormValue("model")`: the
//! multipart form first, then the query string, with Go's lenient MIME
//! parsing. Rather than imitate every rule of it, augur parses the form
//! strictly, refuses what it cannot read plainly (400), and forwards a form
//! it wrote itself holding only the fields Ollama reads, with no query
//! string: the upstream can only read what augur read.

use bytes::{BufMut, Bytes, BytesMut};

/// The form fields Ollama's transcription endpoint reads.
const FIELDS: [&str; 5] = ["model", "file", "response_format", "language", "prompt"];

/// Why a form was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormError {
    #[error("the request body must be multipart/form-data with a boundary")]
    ContentType,
    #[error("malformed multipart body: {0}")]
    Malformed(&'static str),
    #[error("form field {0:?} appears more than once")]
    Duplicate(String),
}

/// One form field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    pub name: String,
    pub filename: Option<String>,
    pub content_type: Option<String>,
    pub data: Bytes,
}

/// The fields Ollama reads, each at most once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Form {
    pub fields: Vec<Field>,
}

impl Form {
    /// The `model` field, as text.
    pub fn model(&self) -> Option<String> {
        self.fields
            .iter()
            .find(|f| f.name == "model")
            .map(|f| String::from_utf8_lossy(&f.data).into_owned())
    }

    /// A boundary that occurs in no field's data.
    pub fn fresh_boundary(&self) -> String {
        loop {
            let b = format!("augur-{}", uuid::Uuid::new_v4().simple());
            if !self.fields.iter().any(|f| contains(&f.data, b.as_bytes())) {
                return b;
            }
        }
    }

    /// The form re-encoded with `boundary` (which must occur in no field's
    /// data): `(content type, body)`.
    pub fn encode(&self, boundary: &str) -> (String, Bytes) {
        let mut out = BytesMut::new();
        for f in &self.fields {
            out.put_slice(format!("--{boundary}\r\n").as_bytes());
            let mut disposition = format!("Content-Disposition: form-data; name=\"{}\"", f.name);
            if let Some(name) = &f.filename {
                disposition.push_str(&format!("; filename=\"{}\"", escape(name)));
            }
            out.put_slice(disposition.as_bytes());
            out.put_slice(b"\r\n");
            if let Some(ct) = &f.content_type {
                out.put_slice(format!("Content-Type: {ct}\r\n").as_bytes());
            }
            out.put_slice(b"\r\n");
            out.put_slice(&f.data);
            out.put_slice(b"\r\n");
        }
        out.put_slice(format!("--{boundary}--\r\n").as_bytes());
        (
            format!("multipart/form-data; boundary={boundary}"),
            out.freeze(),
        )
    }
}

/// A filename as a quoted-string: quotes and backslashes escaped, line
/// breaks dropped.
fn escape(s: &str) -> String {
    s.chars()
        .filter(|c| !c.is_control() || *c == '\t')
        .flat_map(|c| match c {
            '"' | '\\' => vec!['\\', c],
            c => vec![c],
        })
        .collect()
}

/// The boundary of a `multipart/form-data` content type.
pub(crate) fn boundary(content_type: &str) -> Result<String, FormError> {
    let mut parts = content_type.split(';');
    let media = parts.next().unwrap_or_default().trim();
    if !media.eq_ignore_ascii_case("multipart/form-data") {
        return Err(FormError::ContentType);
    }
    let mut found = None;
    for param in parts {
        let (k, v) = param.split_once('=').ok_or(FormError::ContentType)?;
        if k.trim().eq_ignore_ascii_case("boundary") {
            if found.is_some() {
                return Err(FormError::ContentType);
            }
            let v = v.trim();
            let v = match v.strip_prefix('"') {
                Some(q) => q.strip_suffix('"').ok_or(FormError::ContentType)?,
                None => v,
            };
            let ok = (1..=70).contains(&v.len())
                && v.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"'()+_,-./:=? ".contains(&b))
                && !v.ends_with(' ');
            if !ok {
                return Err(FormError::ContentType);
            }
            found = Some(v.to_string());
        }
    }
    found.ok_or(FormError::ContentType)
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    find(hay, needle, 0).is_some()
}

fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    hay.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|i| i + from)
}

/// Parse `body` strictly: CRLF line ends, no preamble, every part with a
/// `form-data` disposition naming it with a plain quoted `name`. Fields
/// Ollama does not read are dropped; those it reads may appear once.
pub fn parse(body: &[u8], boundary: &str) -> Result<Form, FormError> {
    let delimiter = format!("--{boundary}");
    let next = format!("\r\n--{boundary}");
    let mut at = delimiter.len();
    if !body.starts_with(delimiter.as_bytes()) {
        return Err(FormError::Malformed("it does not start with the boundary"));
    }
    let mut fields: Vec<Field> = Vec::new();
    loop {
        match body.get(at..at + 2) {
            Some(b"--") => break,
            Some(b"\r\n") => at += 2,
            _ => {
                return Err(FormError::Malformed(
                    "a boundary line is not followed by CRLF",
                ));
            }
        }
        let head_end =
            find(body, b"\r\n\r\n", at).ok_or(FormError::Malformed("unterminated part headers"))?;
        let head = std::str::from_utf8(&body[at..head_end])
            .map_err(|_| FormError::Malformed("part headers are not UTF-8"))?;
        let (name, filename, content_type) = part_headers(head)?;
        let data_start = head_end + 4;
        let data_end = find(body, next.as_bytes(), data_start)
            .ok_or(FormError::Malformed("a part is not closed by the boundary"))?;
        at = data_end + next.len();
        if !FIELDS.contains(&name.as_str()) {
            continue;
        }
        if fields.iter().any(|f| f.name == name) {
            return Err(FormError::Duplicate(name));
        }
        fields.push(Field {
            name,
            filename,
            content_type,
            data: Bytes::copy_from_slice(&body[data_start..data_end]),
        });
    }
    Ok(Form { fields })
}

type PartHead = (String, Option<String>, Option<String>);

fn part_headers(head: &str) -> Result<PartHead, FormError> {
    let mut disposition = None;
    let mut content_type = None;
    if head
        .chars()
        .any(|c| c.is_control() && c != '\t' && c != '\r' && c != '\n')
        || head.split("\r\n").any(|l| l.contains(['\r', '\n']))
    {
        return Err(FormError::Malformed("control characters in part headers"));
    }
    for line in head.split("\r\n") {
        let (k, v) = line
            .split_once(':')
            .ok_or(FormError::Malformed("a part header has no colon"))?;
        if k.starts_with([' ', '\t']) || k.trim() != k {
            return Err(FormError::Malformed("folded or spaced part header"));
        }
        let slot = if k.eq_ignore_ascii_case("content-disposition") {
            &mut disposition
        } else if k.eq_ignore_ascii_case("content-type") {
            &mut content_type
        } else {
            continue;
        };
        if slot.replace(v.trim().to_string()).is_some() {
            return Err(FormError::Malformed("a part header appears twice"));
        }
    }
    let disposition =
        disposition.ok_or(FormError::Malformed("a part has no Content-Disposition"))?;
    let (kind, params) = disposition.split_once(';').unwrap_or((&disposition, ""));
    if !kind.trim().eq_ignore_ascii_case("form-data") {
        return Err(FormError::Malformed("a part is not form-data"));
    }
    let (mut name, mut filename) = (None, None);
    for (k, v) in quoted_params(params)? {
        let slot = match k.to_ascii_lowercase().as_str() {
            "name" => &mut name,
            "filename" => &mut filename,
            k if k.ends_with('*') => {
                return Err(FormError::Malformed("extended (RFC 2231) part parameters"));
            }
            _ => continue,
        };
        if slot.replace(v).is_some() {
            return Err(FormError::Malformed("a part parameter appears twice"));
        }
    }
    let name = name.ok_or(FormError::Malformed("a part has no name"))?;
    Ok((name, filename, content_type))
}

/// `; k="v"; k2=token` parameters; quoted values may hold `\"`.
fn quoted_params(params: &str) -> Result<Vec<(String, String)>, FormError> {
    let bad = || FormError::Malformed("unreadable Content-Disposition parameters");
    let mut out = Vec::new();
    let mut rest = params.trim_start();
    while !rest.is_empty() {
        let eq = rest.find('=').ok_or_else(bad)?;
        let key = rest[..eq].trim().to_string();
        rest = rest[eq + 1..].trim_start();
        let value;
        if let Some(q) = rest.strip_prefix('"') {
            let mut v = String::new();
            let mut chars = q.char_indices();
            let mut end = None;
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => v.push(chars.next().ok_or_else(bad)?.1),
                    '"' => {
                        end = Some(i);
                        break;
                    }
                    c => v.push(c),
                }
            }
            let end = end.ok_or_else(bad)?;
            value = v;
            rest = q[end + 1..].trim_start();
        } else {
            let end = rest.find(';').unwrap_or(rest.len());
            value = rest[..end].trim().to_string();
            rest = &rest[end..];
        }
        out.push((key, value));
        rest = rest.trim_start();
        match rest.strip_prefix(';') {
            Some(r) => rest = r.trim_start(),
            None if rest.is_empty() => {}
            None => return Err(bad()),
        }
    }
    Ok(out)
}

#[cfg(test)]
#[path = "multipart_tests.rs"]
mod tests;

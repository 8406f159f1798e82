//! What a mistake in a scenario reports: [`ScenarioError`], the helpers
//! that build it with the key's path, and the bounded file reader.

use super::limits::MAX_FILE_BYTES;
use super::unknown_key::{locate_key, KeyLocation};
use meshbed_core::InvalidValue;
use std::path::Path;
use thiserror::Error;

/// A scenario that cannot be run, with where and why. `file` is empty for a
/// scenario that did not come from a file (a sweep point names its own).
#[derive(Debug, Error)]
pub enum ScenarioError {
    #[error("{file}: cannot read: {err}")]
    Io { file: String, err: std::io::Error },
    #[error("{}{message}", prefix(file))]
    Parse { file: String, message: String },
    /// The one error value ([`InvalidValue`]), in a file.
    #[error("{}{invalid}", prefix(file))]
    Invalid { file: String, invalid: InvalidValue },
    /// A valid scenario that the backend asked to run it cannot run
    /// (`crate::backend`): every key it refuses, nothing started.
    #[error("{}{refusal}", prefix(file))]
    Refused { file: String, refusal: crate::backend::Refusal },
    /// A key the file's types do not have, by its whole path (`detail`:
    /// what its table expected), at its own line and column when the
    /// text is known ([`ScenarioError::located`]).
    #[error("{}", unknown_key_text(file, key, detail, location.as_ref()))]
    UnknownKey { file: String, key: String, detail: String, location: Option<KeyLocation> },
}

/// `file:line:column: key: unknown key; expected …`, then the line with
/// the key underlined (as compilers and TOML's own errors write it).
fn unknown_key_text(file: &str, key: &str, detail: &str, location: Option<&KeyLocation>) -> String {
    let at = match (file.is_empty(), location) {
        (false, Some(l)) => format!("{file}:{}:{}: ", l.line, l.column),
        (true, Some(l)) => format!("line {}, column {}: ", l.line, l.column),
        (false, None) => format!("{file}: "),
        (true, None) => String::new(),
    };
    let snippet = location.map_or_else(String::new, |l| format!("\n{l}"));
    format!("{at}{key}: unknown key{detail}{snippet}")
}

impl From<InvalidValue> for ScenarioError {
    fn from(invalid: InvalidValue) -> Self {
        ScenarioError::Invalid { file: String::new(), invalid }
    }
}

impl From<crate::backend::Refusal> for ScenarioError {
    fn from(refusal: crate::backend::Refusal) -> Self {
        ScenarioError::Refused { file: String::new(), refusal }
    }
}

fn prefix(file: &str) -> String {
    if file.is_empty() {
        String::new()
    } else {
        format!("{file}: ")
    }
}

pub(super) fn invalid(key: impl Into<String>, value: impl ToString, expected: impl Into<String>) -> ScenarioError {
    ScenarioError::Invalid { file: String::new(), invalid: InvalidValue::new(key, value, expected) }
}

/// `value` must lie in `range`; the error names `key`.
pub(super) fn within<T: meshbed_core::limits::Bounded>(
    key: impl Into<String>,
    value: T,
    range: std::ops::RangeInclusive<T>,
    what: &str,
) -> Result<(), ScenarioError> {
    meshbed_core::limits::within(value, range, what).map_err(|expected| invalid(key, value.text(), expected))
}

impl ScenarioError {
    /// Names the file the error came from.
    pub fn in_file(self, name: &str) -> Self {
        match self {
            ScenarioError::Invalid { invalid, .. } => ScenarioError::Invalid { file: name.into(), invalid },
            ScenarioError::Parse { message, .. } => ScenarioError::Parse { file: name.into(), message },
            ScenarioError::Refused { refusal, .. } => ScenarioError::Refused { file: name.into(), refusal },
            ScenarioError::UnknownKey { key, detail, location, .. } => {
                ScenarioError::UnknownKey { file: name.into(), key, detail, location }
            }
            other => other,
        }
    }

    /// The error of a reader's `message` if it is about an unknown key in
    /// the table at `table` (a dotted path, empty for the top): for readers
    /// of tables besides the scenario's own (an experiment's).
    pub fn unknown_key(table: &str, message: &str) -> Option<ScenarioError> {
        super::unknown_key::from_message(table, message)
    }

    /// An unknown key placed at its line and column in `text`, the file
    /// it came from (a key that is not there, one a sweep set, stays as
    /// it is).
    pub fn located(self, text: &str) -> Self {
        match self {
            ScenarioError::UnknownKey { file, key, detail, location: None } => {
                let location = locate_key(text, &key);
                ScenarioError::UnknownKey { file, key, detail, location }
            }
            other => other,
        }
    }

    /// The same error, its key inside `table` ([`InvalidValue::under`]).
    pub(super) fn under(self, table: &str) -> Self {
        match self {
            ScenarioError::Invalid { file, invalid } => ScenarioError::Invalid { file, invalid: invalid.under(table) },
            other => other,
        }
    }
}

/// A value of the wrong form for a typed key (a protocol, a traffic kind, a
/// rate controller: serde's `invalid value … expected …` and `unknown
/// variant … expected …`), as the one error value: `key = value: expected
/// …`, with the key's path from the top of the file. `None` for anything
/// else (a syntax error, a missing key), which the parser's own message
/// reports with its line.
pub(super) fn typed_value_error(key: &str, value: Option<&str>, message: &str) -> Option<ScenarioError> {
    let typed = message.starts_with("invalid value:") || message.starts_with("unknown variant");
    let (_, expected) = message.split_once(", expected ")?;
    (typed && !key.is_empty() && key != ".").then(|| invalid(key, value.unwrap_or("(given)"), expected))
}

/// A value as an error shows it: its TOML, cut after 60 characters.
pub(super) fn brief(v: &toml::Value) -> String {
    let text = v.to_string();
    match text.char_indices().nth(60) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

/// A value of the wrong form inside a table that a reader takes whole and
/// then reads with its types (`[radio]`): serde's `invalid value …,
/// expected …` (or `invalid type`, `unknown variant`) at `path` inside
/// `table`, as the one error value's text with the key's whole path and
/// the key's own value, `radio.standard = "802.11x": expected one of …`,
/// rather than the whole table as the value of `radio`. `None` for any
/// other message.
pub(super) fn value_under_table(
    name: &str,
    table: &toml::Table,
    path: &serde_path_to_error::Path,
    message: &str,
) -> Option<String> {
    let (_, expected) = message.split_once(", expected ")?;
    let inner = path.to_string();
    let segments = e_path_segments(&inner);
    let (first, rest) = segments.split_first()?;
    let value = lookup(table.get(first)?, rest.to_vec())?;
    let key = if inner.starts_with('[') { format!("{name}{inner}") } else { format!("{name}.{inner}") };
    Some(format!("{key} = {}: expected {}", brief(value), expected.trim_end()))
}

/// An error of a flow's reader ([`FlowSpec`](super::FlowSpec)'s, through
/// its flat form), whose text is an [`InvalidValue`] relative to the flow
/// (`rate_kbps = 5: expected …`), at `key` = `flows[i]`: the one error
/// value with the whole path, `flows[i].rate_kbps`. `None` for anything else.
pub(super) fn flow_error(key: &str, message: &str) -> Option<ScenarioError> {
    let index = key.strip_prefix("flows[")?.strip_suffix(']')?;
    index.parse::<usize>().ok()?;
    let (k, rest) = message.split_once(" = ")?;
    let (value, expected) = rest.split_once(": expected ")?;
    (!k.is_empty() && !k.contains(' ')).then(|| invalid(format!("{key}.{k}"), value, expected))
}

/// The segments of a path as serde_path_to_error writes it (`flows[0].protocol`).
pub(super) fn e_path_segments(path: &str) -> Vec<String> {
    path.split('.')
        .flat_map(|part| {
            let mut v = Vec::new();
            let mut rest = part;
            if let Some(i) = rest.find('[') {
                v.push(rest[..i].to_string());
                rest = &rest[i..];
                while let Some(end) = rest.find(']') {
                    v.push(rest[..=end].to_string());
                    rest = &rest[end + 1..];
                }
            } else {
                v.push(rest.to_string());
            }
            v
        })
        .filter(|s| !s.is_empty())
        .collect()
}

/// The value at `path` in a TOML tree, if there is one.
pub(super) fn lookup(value: &toml::Value, path: Vec<String>) -> Option<&toml::Value> {
    path.iter().try_fold(value, |v, seg| match seg.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
        Some(i) => v.as_array()?.get(i.parse::<usize>().ok()?),
        None => v.as_table()?.get(seg),
    })
}

/// Reads a scenario or experiment file: a regular file of at most
/// [`MAX_FILE_BYTES`], in UTF-8. Anything else (a directory, a FIFO, which
/// would block, a device such as /dev/zero, which never ends) is refused
/// before it is opened.
pub fn read_input_file(path: &Path) -> std::io::Result<String> {
    use std::io::{Error, ErrorKind, Read};
    let not_regular = |meta: &std::fs::Metadata| -> Option<&'static str> {
        let t = meta.file_type();
        if t.is_file() {
            return None;
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileTypeExt;
            if t.is_fifo() {
                return Some("a FIFO");
            }
            if t.is_char_device() || t.is_block_device() {
                return Some("a device");
            }
            if t.is_socket() {
                return Some("a socket");
            }
        }
        Some(if t.is_dir() { "a directory" } else { "not a regular file" })
    };
    let refuse = |what: &str| Error::new(ErrorKind::InvalidInput, format!("{what}; expected a regular TOML file"));
    // Checked before opening: opening a FIFO with no writer blocks.
    if let Some(what) = not_regular(&std::fs::metadata(path)?) {
        return Err(refuse(what));
    }
    let file = std::fs::File::open(path)?;
    let meta = file.metadata()?;
    if let Some(what) = not_regular(&meta) {
        return Err(refuse(what));
    }
    let too_big = |size: String| {
        Error::new(ErrorKind::InvalidInput, format!("{size} bytes; expected a file of at most {MAX_FILE_BYTES} bytes"))
    };
    if meta.len() > MAX_FILE_BYTES {
        return Err(too_big(meta.len().to_string()));
    }
    // Bounded even if the file grows while it is read.
    let mut text = String::new();
    file.take(MAX_FILE_BYTES + 1).read_to_string(&mut text)?;
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(too_big(format!("more than {MAX_FILE_BYTES}")));
    }
    Ok(text)
}

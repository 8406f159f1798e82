//! A key the file's types do not have ([`ScenarioError::UnknownKey`]): its
//! whole path (`radio.mac.short_retry`, `flows[1].start`), what its table
//! expected with the closest key suggested, and the key's own line and
//! column in the file, found from the path in the text by `toml_edit`
//! (the reader that refused it, a table read as a whole, knows only the
//! table's place).

use super::error::{e_path_segments, ScenarioError};
use std::fmt;

/// Where a key is in a file: its line and column (from 1), the line, and
/// the key's width, to underline it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyLocation {
    pub line: usize,
    pub column: usize,
    pub source_line: String,
    pub width: usize,
}

impl fmt::Display for KeyLocation {
    /// The line with the key underlined, as TOML's own errors show it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let number = self.line.to_string();
        let pad = " ".repeat(number.len());
        let under = format!("{}{}", " ".repeat(self.column - 1), "^".repeat(self.width.max(1)));
        write!(f, "{pad} |\n{number} | {}\n{pad} | {under}", self.source_line)
    }
}

/// The text of an unknown key at `path` in a table that takes `expected`
/// (`context`: which kind of table, e.g. ` for kind = "chain"`), with the
/// closest expected key suggested; [`from_message`] reads it back.
pub(super) fn unknown_key(path: &str, context: &str, expected: &[&str]) -> String {
    format!("{path}: unknown key{}", detail(path, context, expected))
}

fn detail(path: &str, context: &str, expected: &[&str]) -> String {
    let list = if expected.is_empty() { "no other key".to_string() } else { expected.join(", ") };
    let key = path.rsplit(['.', ']']).next().unwrap_or(path);
    // Jaro-Winkler weighs a common start: `spacing` → `spacing_m`.
    let closest = expected
        .iter()
        .map(|e| (strsim::jaro_winkler(key, e), e))
        .filter(|(score, e)| *score >= 0.8 || strsim::levenshtein(key, e) <= 1)
        .max_by(|a, b| a.0.total_cmp(&b.0));
    let suggestion = closest.map_or_else(String::new, |(_, e)| format!(" (did you mean `{e}`?)"));
    format!("{context}; expected {list}{suggestion}")
}

/// serde's `unknown field `x`, expected one of `a`, `b``: the field and
/// the names it expected.
fn serde_unknown_field(message: &str) -> Option<(String, Vec<String>)> {
    let rest = message.strip_prefix("unknown field `")?;
    let (field, rest) = rest.split_once('`')?;
    let expected = rest.split('`').skip(1).step_by(2).map(str::to_string).collect();
    Some((field.to_string(), expected))
}

/// The error of a reader's `message` if it is about an unknown key: one of
/// [`unknown_key`]'s, or serde's for a field of the table at `table` (a
/// path, empty for the top).
pub(super) fn from_message(table: &str, message: &str) -> Option<ScenarioError> {
    let unknown =
        |key: String, detail: String| ScenarioError::UnknownKey { file: String::new(), key, detail, location: None };
    if let Some((path, detail)) = message.split_once(": unknown key") {
        if !path.is_empty() && !path.contains(char::is_whitespace) {
            return Some(unknown(path.to_string(), detail.trim_end().to_string()));
        }
    }
    let (field, expected) = serde_unknown_field(message)?;
    let path = key_path(table, &field);
    let expected: Vec<&str> = expected.iter().map(String::as_str).collect();
    let detail = detail(&path, "", &expected);
    Some(unknown(path, detail))
}

/// The path of `field` in the table at `table`, as serde_path_to_error
/// reports it: the path of a struct's field already ends with it (that of
/// an internally tagged enum's does not). A key that is not a bare TOML key
/// is quoted as TOML writes it, so that even the empty key `""` is named
/// (found by the scenario_toml fuzz target: `: unknown key`).
fn key_path(table: &str, field: &str) -> String {
    let name = toml_key(field);
    match table {
        "" | "." => name,
        t if t == field => name,
        t => match t.strip_suffix(field).filter(|parent| parent.ends_with('.') || parent.ends_with(']')) {
            Some(parent) => format!("{parent}{name}"),
            None => format!("{t}.{name}"),
        },
    }
}

/// A key as TOML writes it: bare, or quoted.
fn toml_key(key: &str) -> String {
    if !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        return key.to_string();
    }
    format!("\"{}\"", key.replace('\\', "\\\\").replace('"', "\\\""))
}

/// A reader's error for an unknown key in a table (an `InvalidValue`-less
/// serde message) as [`unknown_key`]'s text, the key's path under `table`
/// (`radio`): for readers that take a table whole and then read its
/// types (`[radio]`, `[topology]`), so that the path reaches the key.
pub(super) fn under_table(table: &str, path: &serde_path_to_error::Path, message: &str) -> Option<String> {
    let (field, expected) = serde_unknown_field(message)?;
    let inner = match path.to_string().as_str() {
        "." | "" => table.to_string(),
        p if p.starts_with('[') => format!("{table}{p}"),
        p => format!("{table}.{p}"),
    };
    let key = key_path(&inner, &field);
    let expected: Vec<&str> = expected.iter().map(String::as_str).collect();
    Some(unknown_key(&key, "", &expected))
}

/// Refuses a key of a tagged table (`[radio.propagation] model =
/// "friis"`) that its kind does not take. serde refuses them for the kinds
/// that have keys of their own but ignores them for a kind without
/// (`exponent` beside `model = "friis"` would be silently dropped); the
/// schema of `T`, derived from the same type, lists each kind's keys.
pub(super) fn check_tagged<T: schemars::JsonSchema>(path: &str, tag: &str, table: &toml::Table) -> Result<(), String> {
    let Some(kind) = table.get(tag).and_then(toml::Value::as_str) else { return Ok(()) };
    let schema = schemars::schema_for!(T);
    let variants = schema.get("oneOf").and_then(serde_json::Value::as_array);
    let properties = variants.into_iter().flatten().find_map(|v| {
        let p = v.get("properties")?.as_object()?;
        (p.get(tag)?.get("const")?.as_str()? == kind).then_some(p)
    });
    // An unknown kind is serde's to report.
    let Some(properties) = properties else { return Ok(()) };
    let keys: Vec<&str> = properties.keys().map(String::as_str).filter(|k| *k != tag).collect();
    match table.keys().find(|k| k.as_str() != tag && !keys.contains(&k.as_str())) {
        Some(k) => Err(unknown_key(&format!("{path}.{k}"), &format!(" for {tag} = \"{kind}\""), &keys)),
        None => Ok(()),
    }
}

/// Where the key at `path` (`topology.spacing`, `flows[1].start`,
/// `topology.nodes[1].xm`) is in TOML `text`, if it is there.
pub fn locate_key(text: &str, path: &str) -> Option<KeyLocation> {
    let doc = toml_edit::ImDocument::parse(text).ok()?;
    let segments = e_path_segments(path);
    let (last, parents) = segments.split_last()?;
    let mut at = At::Table(doc.as_table());
    for seg in parents {
        at = at.child(seg)?;
    }
    let span = match at {
        At::Table(t) => t.key(last)?.span()?,
        At::Inline(t) => t.key(last)?.span()?,
        At::Tables(_) | At::Array(_) => return None,
    };
    let line_start = text[..span.start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[span.start..].find('\n').map_or(text.len(), |i| span.start + i);
    Some(KeyLocation {
        line: text[..span.start].matches('\n').count() + 1,
        column: text[line_start..span.start].chars().count() + 1,
        source_line: text[line_start..line_end].trim_end_matches('\r').to_string(),
        width: text[span.clone()].chars().count(),
    })
}

/// A place in a parsed document while a path is followed.
enum At<'a> {
    Table(&'a toml_edit::Table),
    Inline(&'a toml_edit::InlineTable),
    Tables(&'a toml_edit::ArrayOfTables),
    Array(&'a toml_edit::Array),
}

impl<'a> At<'a> {
    fn of_value(v: &'a toml_edit::Value) -> Option<At<'a>> {
        match v {
            toml_edit::Value::InlineTable(t) => Some(At::Inline(t)),
            toml_edit::Value::Array(a) => Some(At::Array(a)),
            _ => None,
        }
    }

    fn of_item(item: &'a toml_edit::Item) -> Option<At<'a>> {
        match item {
            toml_edit::Item::Table(t) => Some(At::Table(t)),
            toml_edit::Item::ArrayOfTables(a) => Some(At::Tables(a)),
            toml_edit::Item::Value(v) => At::of_value(v),
            toml_edit::Item::None => None,
        }
    }

    /// The place a path segment (`name` or `[i]`) leads to.
    fn child(self, seg: &str) -> Option<At<'a>> {
        match (seg.strip_prefix('[').and_then(|s| s.strip_suffix(']')), self) {
            (Some(i), At::Tables(a)) => a.get(i.parse().ok()?).map(At::Table),
            (Some(i), At::Array(a)) => At::of_value(a.get(i.parse().ok()?)?),
            (None, At::Table(t)) => At::of_item(t.get(seg)?),
            (None, At::Inline(t)) => At::of_value(t.get(seg)?),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_found_in_tables_arrays_of_tables_and_inline_tables() {
        let text = "a = 1\n[t]\nx = 2\n  spacing = 3\n[[f]]\ny = 1\n[[f]]\nstart = 2\n[f.atp]\nepoch = 1\n[n]\nnodes = [{ x_m = 0 }, { xm = 1 }]\n";
        let at = |p: &str| locate_key(text, p).map(|l| (l.line, l.column, l.width));
        assert_eq!(at("a"), Some((1, 1, 1)));
        assert_eq!(at("t.spacing"), Some((4, 3, 7)));
        assert_eq!(at("f[1].start"), Some((8, 1, 5)));
        assert_eq!(at("f[1].atp.epoch"), Some((10, 1, 5)));
        assert_eq!(at("n.nodes[1].xm"), Some((12, 25, 2)));
        assert_eq!(at("t.missing"), None);
        assert_eq!(at("f[2].start"), None);
    }

    #[test]
    fn the_closest_expected_key_is_suggested_and_a_far_one_is_not() {
        let m = unknown_key("topology.spacing", " for kind = \"chain\"", &["nodes", "spacing_m"]);
        assert_eq!(
            m,
            "topology.spacing: unknown key for kind = \"chain\"; expected nodes, spacing_m (did you mean `spacing_m`?)"
        );
        let m = unknown_key("topology.zzz", "", &["nodes", "spacing_m"]);
        assert!(!m.contains("did you mean"), "{m}");
    }
}

//! The reference written out: as Markdown (`docs/KEYS.md`), and as the
//! comments of a scenario or experiment file printed in reading order
//! (`meshbed scenario default`, `meshbed experiment show`).

use super::{join, KeyDoc, Reference};
use std::fmt::Write;

/// Comments are wrapped to this many columns.
const COMMENT_COLUMNS: usize = 78;

/// Bounds that list more values than this are left out of a comment.
const MAX_LISTED_VALUES: usize = 6;

impl Reference {
    /// The reference as Markdown: `intro`, then a section per top-level
    /// table (the top-level values first), each a table of its keys.
    pub fn markdown(&self, title: &str, intro: &str) -> String {
        let mut md = format!("# {title}\n\n{intro}\n");
        // The section of a key: its top-level table's (`None`: a top-level value).
        let section_of = |k: &KeyDoc| {
            let head = k.path.split(['.', '[']).next().unwrap_or_default().to_string();
            let nested = k.path.contains(['.', '[']) || k.is_table || k.type_name == "array of tables";
            nested.then_some(head)
        };
        let mut current: Option<Option<String>> = None;
        for k in &self.keys {
            let section = section_of(k);
            if current.as_ref() != Some(&section) {
                match &section {
                    Some(t) => {
                        let _ = write!(md, "\n## `{}`\n\n{}\n", header(t, k), escape_text(&k.description));
                    }
                    None => md.push_str("\n## Top level\n"),
                }
                md.push_str("\n| key | type | default | bounds | unit | source | description |\n");
                md.push_str("|---|---|---|---|---|---|---|\n");
                current = Some(section.clone());
            }
            // A section's own table is its heading.
            if section.as_deref() == Some(k.path.as_str()) {
                continue;
            }
            let when = match &k.when {
                Some((tag, values)) => {
                    let v: Vec<String> = values.iter().map(|v| format!("\"{v}\"")).collect();
                    format!("*{tag} = {}:* ", v.join(" \\| "))
                }
                None => String::new(),
            };
            let default = match (&k.default, k.required) {
                (Some(d), _) => format!("`{}`", d.replace('|', "\\|")),
                (None, true) => "required".into(),
                (None, false) => String::new(),
            };
            let _ = writeln!(
                md,
                "| `{}` | {} | {} | {} | {} | {} | {when}{} |",
                k.path,
                k.type_name,
                default,
                k.bounds.as_deref().map(escape_text).unwrap_or_default(),
                k.unit.unwrap_or_default(),
                k.source.as_deref().unwrap_or_default(),
                escape_text(&k.description),
            );
        }
        md
    }

    /// `tree` as a TOML file in reading order, each key under a comment
    /// saying what it is (its description's first sentence, unit and
    /// bounds), each table's first entry under its own. A table without
    /// keys is left out where leaving it out means the same (its default
    /// is empty), written `key = {}` elsewhere. `header` comes first, as
    /// comment lines.
    pub fn commented_toml(&self, header: &str, tree: &toml::Table) -> String {
        let mut out = String::new();
        for line in header.lines().flat_map(|l| wrap(l, COMMENT_COLUMNS - 2)) {
            let _ = writeln!(out, "# {line}");
        }
        out.push('\n');
        self.write_table(&mut out, "", &[], tree);
        let trimmed = out.trim_start_matches('\n').trim_end().to_string();
        trimmed + "\n"
    }

    /// The doc of the key at `segments` (a concrete path) in `table`'s
    /// kind, if the reference has it.
    fn doc(&self, segments: &[String], table: &toml::Table) -> Option<&KeyDoc> {
        let path = self.normalize(segments)?;
        let mut docs = self.docs(&path);
        let first = docs.next()?;
        let matching = |d: &&KeyDoc| match &d.when {
            Some((tag, values)) => {
                table.get(tag).and_then(toml::Value::as_str).is_some_and(|v| values.iter().any(|x| x == v))
            }
            None => true,
        };
        Some(std::iter::once(first).chain(docs).find(matching).unwrap_or(first))
    }

    /// Keys of `table` (at `segments`, written `path` in headers) in
    /// reading order: values, then tables, then arrays of tables.
    fn ordered<'t>(&self, segments: &[String], table: &'t toml::Table) -> Vec<(&'t String, &'t toml::Value)> {
        let rank = |k: &str| {
            let mut s = segments.to_vec();
            s.push(k.to_string());
            let path = self.normalize(&s);
            path.and_then(|p| self.keys.iter().position(|d| d.path == p)).unwrap_or(usize::MAX)
        };
        let mut keys: Vec<_> = table.iter().collect();
        keys.sort_by_key(|(k, v)| (section_kind(v), rank(k)));
        keys
    }

    fn write_table(&self, out: &mut String, path: &str, segments: &[String], table: &toml::Table) {
        for (key, value) in self.ordered(segments, table) {
            let mut at = segments.to_vec();
            at.push(key.clone());
            let doc = self.doc(&at, table);
            let child = join(path, &quote_key(key));
            // An empty table is left out where its absence means the same
            // (its default is empty). An empty array stays: an experiment's
            // sweep (`flows[*].protocol`) needs the array to be there.
            let empty_default = || {
                let default = doc.and_then(|d| d.default_value.as_ref());
                default.is_some_and(|d| d.as_object().is_some_and(|o| o.is_empty()))
            };
            match value {
                toml::Value::Table(t) if t.is_empty() && empty_default() => {}
                toml::Value::Table(t) if t.is_empty() => {
                    self.comment(out, doc, value);
                    let _ = writeln!(out, "{} = {{}}", quote_key(key));
                }
                toml::Value::Table(t) => {
                    out.push('\n');
                    self.comment(out, doc, value);
                    let _ = writeln!(out, "[{child}]");
                    self.write_table(out, &child, &at, t);
                }
                toml::Value::Array(items) if is_array_of_tables(items) => {
                    for (i, item) in items.iter().enumerate() {
                        out.push('\n');
                        if i == 0 {
                            self.comment(out, doc, value);
                        }
                        let _ = writeln!(out, "[[{child}]]");
                        let mut entry = at.clone();
                        entry.push(format!("[{i}]"));
                        self.write_table(out, &child, &entry, item.as_table().expect("an array of tables"));
                    }
                }
                v => {
                    self.comment(out, doc, v);
                    let _ = writeln!(out, "{} = {}", quote_key(key), value_text(v));
                }
            }
        }
    }

    /// The comment above a key: its description's first sentence (a tag's:
    /// what its value means), then its unit and bounds in brackets.
    fn comment(&self, out: &mut String, doc: Option<&KeyDoc>, value: &toml::Value) {
        let Some(doc) = doc else { return };
        let meaning = doc.variants.iter().find(|(name, _)| Some(name.as_str()) == value.as_str());
        let mut text = match meaning {
            Some((name, d)) => format!("{name}: {}", first_sentence(d)),
            None => first_sentence(&doc.description),
        };
        // A long list of values is the description's to explain.
        let bounds = doc.bounds.as_deref().filter(|b| b.matches(", ").count() < MAX_LISTED_VALUES);
        let facts: Vec<&str> = doc.unit.into_iter().chain(bounds).collect();
        if !facts.is_empty() {
            let _ = write!(text, " [{}]", facts.join("; "));
        }
        for line in wrap(&text, COMMENT_COLUMNS - 2) {
            let _ = writeln!(out, "# {line}");
        }
    }
}

/// Values first, then tables and arrays of tables: TOML puts a table's
/// own values before its sub-tables.
fn section_kind(v: &toml::Value) -> u8 {
    match v {
        toml::Value::Table(t) if !t.is_empty() => 1,
        toml::Value::Array(items) if is_array_of_tables(items) => 1,
        _ => 0,
    }
}

fn is_array_of_tables(items: &[toml::Value]) -> bool {
    !items.is_empty() && items.iter().all(toml::Value::is_table)
}

/// A key as TOML writes it: bare if it can be, else quoted with escapes
/// (never as a multi-line string, which a key cannot be).
fn quote_key(key: &str) -> String {
    toml_edit::Key::new(key).display_repr().into_owned()
}

/// A value as TOML writes it. `toml`'s own `Display` writes a lone
/// date-time as the inline table it is serialised through, which does not
/// read back as a date-time.
fn value_text(v: &toml::Value) -> String {
    match v {
        toml::Value::Datetime(d) => d.to_string(),
        v => v.to_string(),
    }
}

/// A section's heading: `[radio]`, `[[flows]]`.
fn header(name: &str, k: &KeyDoc) -> String {
    if k.type_name.starts_with("array") {
        format!("[[{name}]]")
    } else {
        format!("[{name}]")
    }
}

/// Text for a Markdown table cell.
fn escape_text(text: &str) -> String {
    text.replace('|', "\\|").replace("\n\n", "<br>").replace('\n', " ")
}

/// The first sentence of a description (up to a full stop followed by a
/// space, outside parentheses), without its full stop.
fn first_sentence(text: &str) -> String {
    let mut depth = 0i32;
    let chars: Vec<char> = text.chars().collect();
    for (i, c) in chars.iter().enumerate() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            '.' if depth <= 0 && chars.get(i + 1).is_none_or(|n| n.is_whitespace()) => {
                // An abbreviation ("e.g.", "et al.") is no end.
                let word: String = chars[..i].iter().rev().take_while(|c| !c.is_whitespace()).collect();
                if !word.contains('.') && word != "al" {
                    return chars[..i].iter().collect();
                }
            }
            _ => {}
        }
    }
    text.trim_end_matches('.').to_string()
}

fn wrap(text: &str, columns: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for word in text.split_whitespace() {
        let line = lines.last_mut().expect("one line");
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > columns {
            lines.push(word.to_string());
        } else {
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
    }
    lines
}

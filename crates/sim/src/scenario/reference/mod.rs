//! The reference of the scenario file, generated from the types that read
//! it, so that it cannot drift from them: every key with its TOML path
//! (`radio.mac.short_retry_limit`, `flows[].stop_s`), type, default,
//! bounds, unit and source (a seed section, an RFC), and its description,
//! which is the key's doc comment.
//!
//! [`schema`] derives the JSON schema of a scenario file with `schemars`
//! from [`Scenario`] and the types it holds: their doc comments are the
//! descriptions, their serde attributes the keys and defaults, and their
//! bounds the `#[schemars(range(..))]` attributes, which name the same
//! constants the validation checks against (`limits.rs`,
//! `meshbed_radio::config`). [`Reference::new`] flattens a schema into
//! [`KeyDoc`]s in reading order; `render.rs` writes them as Markdown
//! (`docs/KEYS.md`) and writes a scenario as a commented file. The
//! experiment layer adds its `[experiment]` table to the same schema.
//!
//! Reading order is the order in which the types write their keys
//! (serde's field order), seen in [`specimens`], with the top-level tables
//! in [`TOP_LEVEL_ORDER`].

mod render;
mod specimens;

pub use specimens::{specimen_texts, specimens};

use super::Scenario;
use serde_json::{Map, Value};
use std::collections::HashMap;

/// The top-level keys of a scenario in reading order: what the run is,
/// then where the nodes are, their radio, how they route, what they send,
/// and how they move.
pub const TOP_LEVEL_ORDER: [&str; 8] =
    ["seed", "duration_s", "topology", "radio", "routing", "flows", "random_flows", "mobility"];

/// Tables whose keys are in another table's order: `[random_flows.flow]`
/// has a flow's keys (the specimens write it as a plain table, sorted).
pub const SAME_ORDER: [(&str, &str); 1] = [("random_flows.flow", "flows[]")];

/// The JSON schema (draft 2020-12) of a scenario file, descriptions tidied
/// ([`tidy`]).
pub fn schema() -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let mut schema = generator.into_root_schema_for::<Scenario>().to_value();
    tidy(&mut schema);
    schema
}

/// Rustdoc's line breaks joined (a blank line stays a paragraph break) and
/// its links (``[`x`]``) written as code, in every description.
pub fn tidy(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::String(d)) = map.get_mut("description") {
                *d = tidy_text(d);
            }
            map.values_mut().for_each(tidy);
        }
        Value::Array(items) => items.iter_mut().for_each(tidy),
        _ => {}
    }
}

fn tidy_text(doc: &str) -> String {
    let paragraphs: Vec<String> =
        doc.split("\n\n").map(|p| p.split_whitespace().collect::<Vec<_>>().join(" ")).collect();
    paragraphs.join("\n\n").replace("[`", "`").replace("`]", "`")
}

/// One key of the file.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyDoc {
    /// The TOML path: `radio.mac.short_retry_limit`; `[]` for every entry
    /// of an array (`flows[].stop_s`); `<placeholder>` for a key the file
    /// chooses (`radio.sinr_threshold_db.<rate_kbps>`).
    pub path: String,
    /// The kinds of its table the key belongs to: (`kind`, `["chain",
    /// "random"]`); `None`: every kind.
    pub when: Option<(String, Vec<String>)>,
    /// `integer`, `number`, `string`, `boolean`, `table`, `array of …`.
    pub type_name: String,
    /// The file must give it.
    pub required: bool,
    /// Its value when absent, as TOML.
    pub default: Option<String>,
    /// Its value when absent, as the schema gives it.
    pub default_value: Option<Value>,
    /// What the schema bounds it to (`1 to 10000`, `> 0, ≤ 86400`,
    /// `one of "a", "b"`); bounds that depend on other keys are in the
    /// description.
    pub bounds: Option<String>,
    /// Its unit, from its name's suffix (`_s`, `_m`, `_dbm`, ...).
    pub unit: Option<&'static str>,
    /// The sections of the source documents its description cites.
    pub source: Option<String>,
    pub description: String,
    /// A table (its keys are listed after it).
    pub is_table: bool,
    /// A table whose keys the file chooses: their placeholder.
    pub map_key: Option<String>,
    /// The tag of a table whose keys depend on it (`kind`, `model`): each
    /// value and what it means.
    pub variants: Vec<(String, String)>,
}

/// Every key of a file, in reading order.
#[derive(Clone, Debug)]
pub struct Reference {
    pub keys: Vec<KeyDoc>,
}

impl Reference {
    /// The scenario file's reference.
    pub fn scenario() -> Reference {
        Reference::new(&schema(), &specimen_texts(), &TOP_LEVEL_ORDER, &SAME_ORDER)
    }

    /// Flattens `schema` into its keys. `specimens` (TOML texts, as the
    /// types write them) give the reading order inside each table, `top`
    /// the order of the top-level keys; a table in `same_order` (table,
    /// model) has its model's order.
    pub fn new(schema: &Value, specimens: &[String], top: &[&str], same_order: &[(&str, &str)]) -> Reference {
        let mut seen: HashMap<String, Vec<Vec<String>>> = HashMap::new();
        for text in specimens {
            let doc: toml_edit::DocumentMut = text.parse().expect("a specimen is TOML");
            record_order(doc.as_table(), "", &mut seen);
        }
        let mut rank: HashMap<String, usize> = HashMap::new();
        for (table, sequences) in &seen {
            rank.extend(merge_orders(sequences).into_iter().enumerate().map(|(i, k)| (join(table, &k), i)));
        }
        let defs = schema.get("$defs").and_then(Value::as_object).cloned().unwrap_or_default();
        let mut walker = Walker { defs: &defs, rank: &rank, top, same_order, keys: Vec::new() };
        walker.table("", schema, None);
        Reference { keys: walker.keys }
    }

    /// The keys whose path is `path` (one per kind of table that has it).
    pub fn docs(&self, path: &str) -> impl Iterator<Item = &KeyDoc> {
        let path = path.to_string();
        self.keys.iter().filter(move |k| k.path == path)
    }

    /// The path of a key as this reference writes it, from the segments of
    /// a concrete one (`["flows", "[3]", "atp", "epoch_s"]` →
    /// `flows[].atp.epoch_s`, a rate under `radio.sinr_threshold_db` → its
    /// placeholder); `None` for a key it does not have.
    pub fn normalize(&self, segments: &[String]) -> Option<String> {
        let mut path = String::new();
        for seg in segments {
            if seg.starts_with('[') {
                path.push_str("[]");
                continue;
            }
            let child = join(&path, seg);
            if self.docs(&child).next().is_some() {
                path = child;
            } else {
                let placeholder = self.docs(&path).find_map(|d| d.map_key.clone())?;
                path = join(&path, &placeholder);
            }
        }
        self.docs(&path).next().map(|_| path)
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// Records each table's keys in the order written, once per occurrence
/// of the table (array entries' tables under `path[]`).
fn record_order(table: &toml_edit::Table, path: &str, seen: &mut HashMap<String, Vec<Vec<String>>>) {
    seen.entry(path.to_string()).or_default().push(table.iter().map(|(k, _)| k.to_string()).collect());
    for (key, item) in table.iter() {
        let child = join(path, key);
        match item {
            toml_edit::Item::Table(t) => record_order(t, &child, seen),
            toml_edit::Item::ArrayOfTables(a) => {
                for t in a.iter() {
                    record_order(t, &format!("{child}[]"), seen);
                }
            }
            toml_edit::Item::Value(toml_edit::Value::InlineTable(t)) => {
                record_order(&t.clone().into_table(), &child, seen)
            }
            toml_edit::Item::Value(toml_edit::Value::Array(a)) => {
                for v in a.iter() {
                    if let toml_edit::Value::InlineTable(t) = v {
                        record_order(&t.clone().into_table(), &format!("{child}[]"), seen);
                    }
                }
            }
            _ => {}
        }
    }
}

/// One order of a table's keys that keeps the order of every occurrence
/// (each has some of the keys, in the order of the type that writes them
/// all): a topological order of "comes right before", ties broken by
/// first appearance.
fn merge_orders(sequences: &[Vec<String>]) -> Vec<String> {
    let mut keys: Vec<&String> = Vec::new();
    for k in sequences.iter().flatten() {
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let index = |k: &String| keys.iter().position(|x| *x == k).expect("recorded");
    let mut before = vec![Vec::new(); keys.len()];
    let mut waiting = vec![0usize; keys.len()];
    for seq in sequences {
        for pair in seq.windows(2) {
            let (a, b) = (index(&pair[0]), index(&pair[1]));
            if !before[a].contains(&b) {
                before[a].push(b);
                waiting[b] += 1;
            }
        }
    }
    let mut order = Vec::new();
    let mut done = vec![false; keys.len()];
    while order.len() < keys.len() {
        // Without a key that waits for none (orders that disagree), the
        // first one not yet placed.
        let next = (0..keys.len())
            .find(|&i| !done[i] && waiting[i] == 0)
            .or_else(|| (0..keys.len()).find(|&i| !done[i]))
            .expect("a key left");
        done[next] = true;
        for &b in &before[next] {
            waiting[b] = waiting[b].saturating_sub(1);
        }
        order.push(keys[next].clone());
    }
    order
}

/// Walks a schema, collecting its keys.
struct Walker<'a> {
    defs: &'a Map<String, Value>,
    rank: &'a HashMap<String, usize>,
    top: &'a [&'a str],
    same_order: &'a [(&'a str, &'a str)],
    keys: Vec<KeyDoc>,
}

impl<'a> Walker<'a> {
    /// `s` with its `$ref` followed and a `null` alternative (an optional
    /// key) dropped.
    fn resolve(&self, mut s: &'a Value) -> &'a Value {
        loop {
            if let Some(name) = s.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix("#/$defs/")) {
                s = &self.defs[name];
                continue;
            }
            let alternatives = s.get("anyOf").and_then(Value::as_array).map(|a| {
                a.iter().filter(|v| v.get("type").and_then(Value::as_str) != Some("null")).collect::<Vec<_>>()
            });
            match alternatives.as_deref() {
                Some([only]) => s = only,
                _ => return s,
            }
        }
    }

    /// The variants of a tagged table (`oneOf` of tables that share a
    /// `const` key): the tag and each variant's value and schema.
    fn variants(&self, s: &'a Value) -> Option<(String, Vec<(String, &'a Value)>)> {
        let alternatives = s.get("oneOf")?.as_array()?;
        let first = alternatives.first()?.get("properties")?.as_object()?;
        let tag = first.iter().find(|(_, p)| p.get("const").is_some())?.0.clone();
        let variants = alternatives
            .iter()
            .map(|v| Some((v.get("properties")?.get(&tag)?.get("const")?.as_str()?.to_string(), v)))
            .collect::<Option<Vec<_>>>()?;
        Some((tag, variants))
    }

    /// Property names in reading order.
    fn ordered(&self, path: &str, properties: &'a Map<String, Value>) -> Vec<(&'a String, &'a Value)> {
        let mut v: Vec<_> = properties.iter().collect();
        let table = self
            .same_order
            .iter()
            .find_map(|(t, model)| path.strip_prefix(t).map(|rest| format!("{model}{rest}")))
            .unwrap_or_else(|| path.to_string());
        let rank = |k: &str| match table.as_str() {
            "" => self.top.iter().position(|t| *t == k).unwrap_or(usize::MAX),
            _ => self.rank.get(&join(&table, k)).copied().unwrap_or(usize::MAX),
        };
        // Stable: keys never written keep the schema's (alphabetical) order.
        v.sort_by_key(|(k, _)| rank(k));
        v
    }

    /// The keys of the table at `path` (schema `s`, its default `default`).
    fn table(&mut self, path: &str, s: &'a Value, default: Option<&Value>) {
        let s = self.resolve(s);
        if let Some((tag, variants)) = self.variants(s) {
            return self.tagged(path, &tag, &variants, default);
        }
        if let Some(properties) = s.get("properties").and_then(Value::as_object) {
            let required: Vec<&str> =
                s.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
            for (name, p) in self.ordered(path, properties) {
                let inherited = default.and_then(|d| d.get(name));
                self.key(&join(path, name), p, None, required.contains(&name.as_str()), inherited);
            }
        }
        if let Some(values) = s.get("additionalProperties").filter(|v| v.is_object()) {
            let placeholder = s.get("x-key").and_then(Value::as_str).unwrap_or("<key>");
            self.key(&join(path, placeholder), values, None, false, None);
        }
    }

    /// A table whose keys depend on its tag (`kind`, `model`): the tag,
    /// then every variant's keys in reading order, a key that several
    /// variants share with the same meaning listed once.
    fn tagged(&mut self, path: &str, tag: &str, variants: &[(String, &'a Value)], default: Option<&Value>) {
        let tag_default = default.and_then(|d| d.get(tag));
        let meanings: Vec<(String, String)> = variants
            .iter()
            .map(|(name, v)| {
                (name.clone(), v.get("description").and_then(Value::as_str).unwrap_or_default().to_string())
            })
            .collect();
        let kinds: Vec<String> = meanings.iter().map(|(name, d)| format!("`\"{name}\"`: {d}")).collect();
        self.keys.push(KeyDoc {
            path: join(path, tag),
            when: None,
            type_name: "string".into(),
            required: tag_default.is_none(),
            default: tag_default.and_then(toml_text),
            default_value: tag_default.cloned(),
            bounds: Some(one_of(variants.iter().map(|(n, _)| Value::String(n.clone())))),
            unit: None,
            source: None,
            description: kinds.join("<br>"),
            is_table: false,
            map_key: None,
            variants: meanings,
        });
        // Each variant's keys as blocks (a key and the keys inside it); a
        // key that several variants share with the same meaning is one
        // block naming every variant it belongs to.
        let mut blocks: Vec<Vec<KeyDoc>> = Vec::new();
        for (name, v) in variants {
            let required: Vec<&str> =
                v.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
            // The table's default speaks for this variant's keys only if
            // it is this variant.
            let own_default = default.filter(|_| tag_default.and_then(Value::as_str) == Some(name.as_str()));
            let properties = v["properties"].as_object().expect("a variant has properties");
            for (key, p) in self.ordered(path, properties).into_iter().filter(|(k, _)| k.as_str() != tag) {
                let start = self.keys.len();
                let when = Some((tag.to_string(), vec![name.clone()]));
                let inherited = own_default.and_then(|d| d.get(key));
                self.key(&join(path, key), p, when, required.contains(&key.as_str()), inherited);
                let block: Vec<KeyDoc> = self.keys.drain(start..).collect();
                let unconditional = |b: &[KeyDoc]| {
                    b.iter()
                        .enumerate()
                        .map(|(i, k)| if i == 0 { KeyDoc { when: None, ..k.clone() } } else { k.clone() })
                        .collect::<Vec<_>>()
                };
                match blocks.iter_mut().find(|b| unconditional(b) == unconditional(&block)) {
                    Some(b) => {
                        if let (Some((_, into)), Some((_, from))) = (&mut b[0].when, &block[0].when) {
                            into.extend(from.iter().cloned());
                        }
                    }
                    None => blocks.push(block),
                }
            }
        }
        // Stable: keys never written keep the variants' order.
        blocks.sort_by_key(|b| self.rank.get(&b[0].path).copied().unwrap_or(usize::MAX));
        self.keys.extend(blocks.into_iter().flatten());
    }

    /// The key at `path` with property schema `p`, and the keys inside it.
    fn key(
        &mut self,
        path: &str,
        p: &'a Value,
        when: Option<(String, Vec<String>)>,
        required: bool,
        inherited: Option<&Value>,
    ) {
        let s = self.resolve(p);
        let description = p
            .get("description")
            .or_else(|| s.get("description"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let default_value = p.get("default").or_else(|| s.get("default")).or(inherited).filter(|v| !v.is_null());
        let items = s.get("items").map(|i| self.resolve(i));
        let item_is_table = items.is_some_and(|i| is_table(i) || self.variants(i).is_some());
        let is_map = s.get("additionalProperties").is_some_and(Value::is_object);
        let table = is_table(s) || self.variants(s).is_some() || is_map;
        // A key the file chooses has its table's unit.
        let mut names = path.rsplit(['.', ']']).filter(|n| !n.is_empty() && !n.starts_with('<'));
        let name = names.next().unwrap_or(path);
        self.keys.push(KeyDoc {
            path: path.to_string(),
            when,
            type_name: self.type_name(s),
            required: required && default_value.is_none(),
            default: default_value.and_then(toml_text),
            default_value: default_value.cloned(),
            bounds: match (bounds(s), items.and_then(bounds).map(|b| format!("each {b}"))) {
                (Some(own), Some(each)) => Some(format!("{own}; {each}")),
                (own, each) => own.or(each),
            },
            unit: unit(name),
            source: source(&description),
            description,
            is_table: table,
            map_key: is_map.then(|| s.get("x-key").and_then(Value::as_str).unwrap_or("<key>").to_string()),
            variants: Vec::new(),
        });
        if table {
            self.table(path, s, default_value);
        } else if let (true, Some(items)) = (item_is_table, items) {
            self.table(&format!("{path}[]"), items, None);
        }
    }

    fn type_name(&self, s: &'a Value) -> String {
        let s = self.resolve(s);
        if is_table(s) || self.variants(s).is_some() {
            return "table".into();
        }
        if let Some(alternatives) = s.get("oneOf").and_then(Value::as_array) {
            // An enum of constants.
            let types: Vec<&str> = alternatives.iter().filter_map(|a| a.get("type")?.as_str()).collect();
            return types.first().copied().unwrap_or("any").to_string();
        }
        let t = match s.get("type") {
            Some(Value::String(t)) => t.as_str(),
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).find(|t| *t != "null").unwrap_or("any"),
            _ => "any",
        };
        match t {
            "object" => "table".into(),
            "array" => {
                let fixed = match (s.get("minItems"), s.get("maxItems")) {
                    (Some(a), Some(b)) if a == b => a.as_u64(),
                    _ => None,
                };
                let items = s.get("items").or_else(|| s.get("prefixItems").and_then(|p| p.get(0)));
                let item = items.map_or_else(|| "any".to_string(), |i| self.type_name(i));
                match fixed {
                    Some(n) => format!("array of {n} {}", plural(&item)),
                    None => format!("array of {}", plural(&item)),
                }
            }
            t => t.into(),
        }
    }
}

fn is_table(s: &Value) -> bool {
    s.get("properties").is_some()
}

fn plural(t: &str) -> String {
    match t.split_once(' ') {
        Some((head, rest)) => format!("{head}s {rest}"),
        None if t == "any" => "values".into(),
        None => format!("{t}s"),
    }
}

/// A number as a reader writes it: `86400`, `0.001`.
fn number(v: &Value) -> String {
    match v.as_f64() {
        Some(f) if v.is_f64() && f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", f as i64),
        _ => v.to_string(),
    }
}

fn one_of(values: impl Iterator<Item = Value>) -> String {
    let names: Vec<String> = values.map(|v| if v.is_string() { v.to_string() } else { number(&v) }).collect();
    format!("one of {}", names.join(", "))
}

/// What the schema bounds a value to.
fn bounds(s: &Value) -> Option<String> {
    if let Some(values) = s.get("enum").and_then(Value::as_array) {
        return Some(one_of(values.iter().cloned()));
    }
    if let Some(alternatives) = s.get("oneOf").and_then(Value::as_array) {
        let consts: Option<Vec<Value>> = alternatives.iter().map(|a| a.get("const").cloned()).collect();
        if let Some(consts) = consts {
            return Some(one_of(consts.into_iter()));
        }
    }
    let get = |k: &str| s.get(k).filter(|v| v.is_number()).map(number);
    let mut parts = Vec::new();
    match (get("minimum"), get("maximum")) {
        (Some(lo), Some(hi)) => parts.push(format!("{lo} to {hi}")),
        (lo, hi) => {
            parts.extend(lo.map(|lo| format!("≥ {lo}")));
            parts.extend(get("exclusiveMinimum").map(|lo| format!("> {lo}")));
            parts.extend(hi.map(|hi| format!("≤ {hi}")));
        }
    }
    if get("minimum").is_some() && get("maximum").is_some() {
        parts.extend(get("exclusiveMinimum").map(|lo| format!("> {lo}")));
    }
    parts.extend(get("exclusiveMaximum").map(|hi| format!("< {hi}")));
    match (get("minItems"), get("maxItems")) {
        (Some(a), Some(b)) if a == b => {}
        (Some(a), Some(b)) => parts.push(format!("{a} to {b} entries")),
        (Some(a), None) => parts.push(format!("{a} or more entries")),
        (None, Some(b)) => parts.push(format!("at most {b} entries")),
        (None, None) => {}
    }
    if let Some(p) = s.get("pattern").and_then(Value::as_str) {
        parts.push(format!("matches `{p}`"));
    }
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// A default as TOML (`10.0`, `"curve"`, `[1, 2]`); `None` for a table,
/// whose keys give their own.
fn toml_text(v: &Value) -> Option<String> {
    Some(match v {
        Value::Null | Value::Object(_) => return None,
        Value::String(s) => toml::Value::String(s.clone()).to_string(),
        Value::Number(n) if n.is_f64() => toml::Value::Float(n.as_f64()?).to_string(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Array(items) => {
            let texts: Option<Vec<String>> = items.iter().map(toml_text).collect();
            format!("[{}]", texts?.join(", "))
        }
    })
}

/// The unit of a key, from its name's suffix (STYLE: units in names).
pub fn unit(name: &str) -> Option<&'static str> {
    const SUFFIXES: [(&str, &str); 12] = [
        ("_dbm", "dBm"),
        ("_db", "dB"),
        ("_kbps", "kbit/s"),
        ("_bps", "bit/s"),
        ("_mps", "m/s"),
        ("_bytes", "bytes"),
        ("_packets", "packets"),
        ("_segments", "segments"),
        ("_frames", "frames"),
        ("_m", "m"),
        ("_s", "s"),
        ("_hz", "Hz"),
    ];
    let name = name.trim_start_matches('<').trim_end_matches('>');
    if name == "bytes" {
        return Some("bytes");
    }
    SUFFIXES.iter().find(|(suffix, _)| name.ends_with(suffix)).map(|(_, u)| *u)
}

/// The sections of the source documents a description cites: `seed 004
/// §IV`, `RFC 3626 §13`.
pub fn source(description: &str) -> Option<String> {
    let mut found: Vec<String> = Vec::new();
    for marker in ["seed ", "Seed ", "RFC "] {
        for (at, _) in description.match_indices(marker) {
            let rest = &description[at + marker.len()..];
            let number: String = rest.chars().take_while(char::is_ascii_digit).collect();
            if number.is_empty() {
                continue;
            }
            let after = &rest[number.len()..];
            let section = after.strip_prefix(" §").map(|s| {
                let s: String = s.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '.').collect();
                s.trim_end_matches('.').to_string()
            });
            let cite = match section {
                Some(s) if !s.is_empty() => format!("{}{number} §{s}", marker.to_lowercase()),
                _ => format!("{}{number}", marker.to_lowercase()),
            };
            let cite = cite.replace("rfc ", "RFC ");
            if !found.contains(&cite) {
                found.push(cite);
            }
        }
    }
    (!found.is_empty()).then(|| found.join(", "))
}

#[cfg(test)]
mod tests;

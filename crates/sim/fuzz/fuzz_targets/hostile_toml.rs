//! Hostile TOML documents built from a file's own reference: the keys of
//! [`Reference`] (every key of a scenario file, with an experiment's
//! `[experiment]` table when the experiment layer passes its reference),
//! set to values of their type at and beyond their bounds, of other types,
//! NaN and infinities, huge and empty strings, or removed, and unknown keys
//! added. Shared by the `scenario_toml` target (crates/sim/fuzz) and the
//! `experiment_toml` target (crates/experiment/fuzz), and their replay
//! tests.
//!
//! A document starts from a valid base (a specimen, an example, a built-in
//! experiment), so that a few changes reach the checks deep inside, and
//! the changes are drawn with [`arbitrary::Unstructured`] from the fuzzer's
//! bytes.

#![allow(dead_code)]

use arbitrary::{Result, Unstructured};
use meshbed_sim::scenario::reference::{KeyDoc, Reference};
use toml::{Table, Value};

/// Most changes to one document.
const MAX_CHANGES: usize = 24;

/// A string much longer than any name or path a file has.
fn long_string(len: usize) -> String {
    "meshbed-".repeat(len / 8 + 1)[..len].to_string()
}

/// The candidate values a key's bounds text names (`one of "a", "b"`,
/// `1 to 10000`, `> 0, ≤ 86400`): the quoted strings, and each number with
/// its neighbours just inside and outside.
fn bound_values(bounds: &str) -> (Vec<String>, Vec<f64>) {
    let strings = bounds.split('"').skip(1).step_by(2).map(str::to_string).collect();
    let mut numbers = Vec::new();
    for word in bounds.split(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == 'e')) {
        if let Ok(v) = word.parse::<f64>() {
            numbers.extend([v, v + 1.0, v - 1.0, v * (1.0 + 1e-12), v * (1.0 - 1e-12), -v]);
        }
    }
    (strings, numbers)
}

const HOSTILE_INTEGERS: [i64; 22] = [
    0,
    1,
    -1,
    2,
    3,
    255,
    256,
    1000,
    1001,
    2000,
    2001,
    10_000,
    10_001,
    65_535,
    65_536,
    i32::MAX as i64,
    u32::MAX as i64,
    u32::MAX as i64 + 1,
    10_000_000_001,
    i64::MAX,
    i64::MIN,
    -4_294_967_296,
];

const HOSTILE_FLOATS: [f64; 18] = [
    0.0,
    -0.0,
    1e-300,
    5e-324,
    0.001,
    0.5,
    1.0,
    -1.0,
    60.0,
    86_400.0,
    86_400.000_001,
    2.0e7,
    1e300,
    -1e300,
    f64::MAX,
    f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
];

const HOSTILE_STRINGS: [&str; 12] =
    ["", "NaN", "nan", "inf", "-inf", "1e300", "0", "-1", "none", "tcp", "/dev/zero", "../../../../etc/passwd"];

fn integer(u: &mut Unstructured, bounds: &[f64]) -> Result<Value> {
    Ok(Value::Integer(match u.int_in_range(0..=3u8)? {
        0 => *u.choose(&HOSTILE_INTEGERS)?,
        1 if !bounds.is_empty() => u.choose(bounds)?.clamp(i64::MIN as f64, i64::MAX as f64) as i64,
        2 => u.int_in_range(0..=20)?,
        _ => u.arbitrary()?,
    }))
}

fn float(u: &mut Unstructured, bounds: &[f64]) -> Result<Value> {
    Ok(Value::Float(match u.int_in_range(0..=3u8)? {
        0 => *u.choose(&HOSTILE_FLOATS)?,
        1 if !bounds.is_empty() => *u.choose(bounds)?,
        2 => f64::from(u.int_in_range(0..=400u16)?) / 4.0,
        _ => u.arbitrary()?,
    }))
}

fn string(u: &mut Unstructured, choices: &[String]) -> Result<Value> {
    Ok(Value::String(match u.int_in_range(0..=4u8)? {
        0 | 1 if !choices.is_empty() => u.choose(choices)?.clone(),
        2 => u.choose(&HOSTILE_STRINGS)?.to_string(),
        3 => long_string(*u.choose(&[16, 300, 70_000])?),
        _ => u.arbitrary()?,
    }))
}

/// A value of any type (the wrong one, most of the time).
fn any_value(u: &mut Unstructured, depth: u8) -> Result<Value> {
    Ok(match u.int_in_range(0..=6u8)? {
        0 => integer(u, &[])?,
        1 => float(u, &[])?,
        2 => string(u, &[])?,
        3 => Value::Boolean(u.arbitrary()?),
        4 if depth < 2 => {
            Value::Array((0..u.int_in_range(0..=3)?).map(|_| any_value(u, depth + 1)).collect::<Result<_>>()?)
        }
        5 if depth < 2 => {
            let mut t = Table::new();
            for _ in 0..u.int_in_range(0..=2)? {
                t.insert(u.arbitrary()?, any_value(u, depth + 1)?);
            }
            Value::Table(t)
        }
        _ => Value::Datetime("1979-05-27T07:32:00Z".parse().expect("a TOML datetime")),
    })
}

/// A value for `key`: of its type most of the time, sometimes any.
fn value_for(u: &mut Unstructured, key: &KeyDoc) -> Result<Value> {
    if u.ratio(1, 8)? {
        return any_value(u, 0);
    }
    let (strings, numbers) = bound_values(key.bounds.as_deref().unwrap_or(""));
    let mut choices = strings;
    choices.extend(key.variants.iter().map(|(name, _)| name.clone()));
    let element = |u: &mut Unstructured| -> Result<Value> {
        if key.type_name.contains("integer") {
            integer(u, &numbers)
        } else {
            float(u, &numbers)
        }
    };
    Ok(match key.type_name.as_str() {
        "integer" => integer(u, &numbers)?,
        "number" => {
            if u.ratio(1, 6)? {
                integer(u, &numbers)?
            } else {
                float(u, &numbers)?
            }
        }
        "string" => string(u, &choices)?,
        "boolean" => Value::Boolean(u.arbitrary()?),
        "table" => Value::Table(Table::new()),
        t if t.starts_with("array of arrays") => {
            let rows = u.int_in_range(0..=4)?;
            Value::Array(
                (0..rows)
                    .map(|_| Ok(Value::Array((0..u.int_in_range(0..=5)?).map(|_| element(u)).collect::<Result<_>>()?)))
                    .collect::<Result<_>>()?,
            )
        }
        "array of tables" => {
            Value::Array((0..u.int_in_range(0..=3)?).map(|_| Ok(Value::Table(Table::new()))).collect::<Result<_>>()?)
        }
        t if t.starts_with("array") => {
            Value::Array((0..u.int_in_range(0..=4)?).map(|_| element(u)).collect::<Result<_>>()?)
        }
        _ => any_value(u, 0)?,
    })
}

/// A path's segments: `flows[].atp.epoch_s` → `flows`, `[]`, `atp`, `epoch_s`.
fn segments(path: &str) -> Vec<&str> {
    path.split('.')
        .flat_map(|part| match part.strip_suffix("[]") {
            Some(name) => vec![name, "[]"],
            None => vec![part],
        })
        .collect()
}

/// A key chosen for a placeholder (`<rate_kbps>`).
fn placeholder(u: &mut Unstructured) -> Result<String> {
    Ok(u.choose(&["24000", "6000", "1", "0", "-5", "abc", "", "54000000000000000000"])?.to_string())
}

/// The table `segments` lead to, made on the way when `create` (an array
/// entry chosen among those there or appended); `None` where the way is
/// blocked and nothing may be made.
fn walk<'t>(
    u: &mut Unstructured,
    mut table: &'t mut Table,
    segments: &[&str],
    create: bool,
) -> Result<Option<&'t mut Table>> {
    let mut k = 0;
    while k < segments.len() {
        let name = if segments[k].starts_with('<') { placeholder(u)? } else { segments[k].to_string() };
        let into_array = segments.get(k + 1) == Some(&"[]");
        if !table.contains_key(&name) {
            if !create {
                return Ok(None);
            }
            let fresh = if into_array { Value::Array(Vec::new()) } else { Value::Table(Table::new()) };
            table.insert(name.clone(), fresh);
        }
        let slot = table.get_mut(&name).expect("present");
        let next = if into_array {
            k += 1;
            if !slot.is_array() {
                if !create {
                    return Ok(None);
                }
                *slot = Value::Array(Vec::new());
            }
            let entries = slot.as_array_mut().expect("an array");
            let index = u.int_in_range(0..=entries.len())?;
            if index == entries.len() {
                if !create {
                    return Ok(None);
                }
                // A copy of an entry there is, or an empty one.
                let copy = entries.first().cloned().unwrap_or_else(|| Value::Table(Table::new()));
                entries.push(copy);
            }
            &mut entries[index]
        } else {
            slot
        };
        if !next.is_table() {
            if !create {
                return Ok(None);
            }
            *next = Value::Table(Table::new());
        }
        table = next.as_table_mut().expect("a table");
        k += 1;
    }
    Ok(Some(table))
}

/// Sets `key` to a value of `value_for` (and, sometimes, its table's kind
/// to one the key belongs to).
fn set(u: &mut Unstructured, doc: &mut Table, key: &KeyDoc) -> Result<()> {
    let segs = segments(&key.path);
    let (last, parents) = segs.split_last().expect("a path has a segment");
    let value = value_for(u, key)?;
    let tag = match &key.when {
        Some((tag, kinds)) if u.ratio(3, 4)? => Some((tag.clone(), u.choose(kinds)?.clone())),
        _ => None,
    };
    let Some(table) = walk(u, doc, parents, true)? else { return Ok(()) };
    if let Some((tag, kind)) = tag {
        table.insert(tag, Value::String(kind));
    }
    let name = if last.starts_with('<') { placeholder(u)? } else { last.to_string() };
    if *last == "[]" {
        return Ok(());
    }
    table.insert(name, value);
    Ok(())
}

/// Removes `key` where the document has it.
fn remove(u: &mut Unstructured, doc: &mut Table, key: &KeyDoc) -> Result<()> {
    let segs = segments(&key.path);
    let (last, parents) = segs.split_last().expect("a path has a segment");
    if let Some(table) = walk(u, doc, parents, false)? {
        table.remove(*last);
    }
    Ok(())
}

/// Adds a key no type has to a table of the document: a real key misspelt,
/// or any name.
fn add_unknown(u: &mut Unstructured, doc: &mut Table, reference: &Reference) -> Result<()> {
    let key = u.choose(&reference.keys)?;
    let segs = segments(&key.path);
    let (last, parents) = segs.split_last().expect("a path has a segment");
    let name = match u.int_in_range(0..=3u8)? {
        0 => format!("{last}s"),
        1 => last.chars().skip(1).collect(),
        2 => last.to_uppercase(),
        _ => u.arbitrary()?,
    };
    let value = any_value(u, 0)?;
    if let Some(table) = walk(u, doc, parents, true)? {
        table.insert(name, value);
    }
    Ok(())
}

/// `base` changed as the fuzzer's bytes say, serialised; `None` if the
/// bytes run out before a document is made or it cannot be written.
pub fn document(u: &mut Unstructured, reference: &Reference, base: &str) -> Option<String> {
    let mut doc: Table = toml::from_str(base).ok()?;
    let changes = u.int_in_range(1..=MAX_CHANGES).ok()?;
    for _ in 0..changes {
        let step = (|| -> Result<()> {
            let key = u.choose(&reference.keys)?;
            match u.int_in_range(0..=9u8)? {
                0 => remove(u, &mut doc, key),
                1 => add_unknown(u, &mut doc, reference),
                _ => set(u, &mut doc, key),
            }
        })();
        if step.is_err() {
            break;
        }
    }
    toml::to_string(&doc).ok()
}

/// The text of one input of a TOML target: byte 0 picks the mode; `b % 4
/// == 0`: the rest as it is (invalid UTF-8 replaced), otherwise the rest
/// drives [`document`] from `bases[b / 4]` (wrapping). With whether it was
/// generated; `None` when the bytes run out before a document is made.
pub fn input_text(data: &[u8], reference: &Reference, bases: &[String]) -> Option<(String, bool)> {
    let (&mode, rest) = data.split_first()?;
    if mode % 4 == 0 {
        return Some((String::from_utf8_lossy(rest).into_owned(), false));
    }
    let base = &bases[usize::from(mode / 4) % bases.len()];
    document(&mut Unstructured::new(rest), reference, base).map(|text| (text, true))
}

/// The segments of a key path as errors write it (`flows[2].atp.kappa` →
/// `flows`, `[2]`, `atp`, `kappa`), for [`Reference::normalize`]; an error
/// about an entry of an array (`experiment.sweep[0]`) names the array.
pub fn error_segments(path: &str) -> Vec<String> {
    let mut out = Vec::new();
    for part in path.split('.') {
        match part.find('[') {
            Some(i) => {
                out.push(part[..i].to_string());
                out.extend(part[i..].split_inclusive(']').map(str::to_string));
            }
            None => out.push(part.to_string()),
        }
    }
    out.retain(|s| !s.is_empty());
    while out.last().is_some_and(|s| s.starts_with('[')) {
        out.pop();
    }
    out
}

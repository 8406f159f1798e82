use super::*;
use std::collections::BTreeSet;

/// The concrete path of every key of a TOML table (tables' own keys
/// included), as segments (`["flows", "[0]", "atp", "epoch_s"]`).
fn key_paths(table: &toml::Table, at: &[String], out: &mut Vec<Vec<String>>) {
    for (k, v) in table {
        let mut path = at.to_vec();
        path.push(k.clone());
        out.push(path.clone());
        match v {
            toml::Value::Table(t) => key_paths(t, &path, out),
            toml::Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    if let toml::Value::Table(t) = item {
                        let mut entry = path.clone();
                        entry.push(format!("[{i}]"));
                        key_paths(t, &entry, out);
                    }
                }
            }
            _ => {}
        }
    }
}

#[test]
fn every_key_of_the_reference_has_a_description_a_type_and_a_unit_where_its_name_has_one() {
    let r = Reference::scenario();
    assert!(r.keys.len() > 100, "{} keys", r.keys.len());
    for k in &r.keys {
        assert!(!k.description.trim().is_empty(), "{} has no description", k.path);
        assert!(!k.type_name.is_empty() && k.type_name != "any", "{}: {}", k.path, k.type_name);
        // The file's reader, not a Rust programmer, reads these.
        assert!(!k.description.contains("[`"), "{}: a rustdoc link: {}", k.path, k.description);
    }
    let doc = |p: &str| r.docs(p).next().unwrap_or_else(|| panic!("{p} is missing"));
    assert_eq!(doc("duration_s").unit, Some("s"));
    assert_eq!(doc("radio.mac.short_retry_limit").bounds.as_deref(), Some("0 to 254"));
    assert_eq!(doc("radio.mac.short_retry_limit").default.as_deref(), Some("6"));
    assert_eq!(doc("radio.tx_power_dbm").unit, Some("dBm"));
    assert_eq!(doc("radio.sinr_threshold_db.<rate_kbps>").unit, Some("dB"));
    assert_eq!(doc("flows[].stop_s").unit, Some("s"));
    assert_eq!(doc("routing.metric").source.as_deref(), Some("seed 004 §III.B"));
    assert_eq!(doc("routing.control_priority").when.as_ref().map(|w| w.1.len()), Some(3));
    assert!(doc("duration_s").required && !doc("seed").required);
}

/// Every key a fully populated scenario writes (every optional table, every
/// kind of table and flow) is in the reference with a description, and
/// every key of the reference is one that some such scenario writes: the
/// reference and the parser agree both ways.
#[test]
fn the_reference_has_exactly_the_keys_the_scenario_types_read_and_write() {
    let r = Reference::scenario();
    let mut written = BTreeSet::new();
    for text in specimen_texts() {
        let table: toml::Table = toml::from_str(&text).unwrap();
        let mut paths = Vec::new();
        key_paths(&table, &[], &mut paths);
        for p in paths {
            let path = r.normalize(&p).unwrap_or_else(|| panic!("{} is not in the reference", p.join(".")));
            written.insert(path);
        }
    }
    let documented: BTreeSet<String> = r.keys.iter().map(|k| k.path.clone()).collect();
    let unwritten: Vec<&String> = documented.difference(&written).collect();
    assert!(unwritten.is_empty(), "documented but written by no specimen: {unwritten:?}");
}

#[test]
fn the_specimens_read_back_as_themselves_and_the_preset_one_reads() {
    for s in specimens() {
        let text = toml::to_string(&s).unwrap();
        assert_eq!(Scenario::parse(&text).unwrap(), s, "{text}");
    }
    let texts = specimen_texts();
    assert!(texts[0].contains("preset = \"ns2\""), "{}", texts[0]);
    Scenario::parse(&texts[0]).unwrap();
}

/// The commented form of every specimen (arrays of tables, nested arrays,
/// inline arrays, maps, tagged tables) reads back as the same scenario.
#[test]
fn a_commented_scenario_reads_back_as_the_same_scenario() {
    let r = Reference::scenario();
    for s in specimens() {
        let text = r.commented_toml("a specimen", &toml::Table::try_from(&s).unwrap());
        assert_eq!(Scenario::parse(&text).unwrap(), s, "{text}");
    }
}

/// Whatever table the writer is given (an experiment keeps its base
/// scenario's text as a table, keys it does not know included) it writes as
/// TOML that reads back to the same table: keys with quotes, newlines and
/// control characters quoted on one line, a lone date-time as a date-time
/// (found by fuzzing `experiment_toml`).
#[test]
fn odd_keys_and_date_times_are_written_as_toml_that_reads_back() {
    let text = "\"a\\nb\\\"c\" = 1979-05-27T07:32:00Z\n[t]\n\"\\u0001 x\" = [1979-05-27]\n\"\" = 'é'\n";
    let table: toml::Table = toml::from_str(text).unwrap();
    assert_eq!(table.len(), 2);
    let written = Reference::scenario().commented_toml("header", &table);
    let again: toml::Table = toml::from_str(&written).unwrap_or_else(|e| panic!("{e}\n{written}"));
    assert_eq!(again, table, "{written}");
}

/// `meshbed scenario default`: the default scenario in reading order
/// (top-level keys, topology, radio, routing, flows), a comment over every
/// key, no empty table, and it reads back as the default.
#[test]
fn the_commented_default_is_in_reading_order_without_empty_tables_and_reads_back() {
    let s = Scenario::builtin_default();
    let text = Reference::scenario().commented_toml("header", &toml::Table::try_from(&s).unwrap());
    assert_eq!(Scenario::from_toml(&text).unwrap(), s, "{text}");
    assert!(!text.contains("[radio.sinr_threshold_db]"), "an empty table: {text}");
    let at = |needle: &str| text.find(needle).unwrap_or_else(|| panic!("{needle} missing: {text}"));
    let order = [
        at("\nseed = "),
        at("\nduration_s = "),
        at("\n[topology]"),
        at("\n[radio]"),
        at("\n[routing]"),
        at("\n[[flows]]"),
    ];
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}: {text}");
    // Every key and table header has a comment right above it.
    let lines: Vec<&str> = text.lines().collect();
    for (i, line) in lines.iter().enumerate().filter(|(_, l)| !l.is_empty() && !l.starts_with('#')) {
        assert!(i > 0 && lines[i - 1].starts_with('#'), "no comment above {line:?}: {text}");
    }
    assert!(text.contains("# Simulated time to run [s; > 0, ≤ 86400]\nduration_s = 10.0"), "{text}");
}

#[test]
fn the_markdown_reference_lists_every_key_under_its_section() {
    let r = Reference::scenario();
    let md = r.markdown("Keys", "intro");
    for k in r.keys.iter().filter(|k| k.path.contains(['.', '['])) {
        assert!(md.contains(&format!("| `{}` |", k.path)), "{} missing", k.path);
    }
    for section in
        ["## Top level", "## `[topology]`", "## `[radio]`", "## `[routing]`", "## `[[flows]]`", "## `[mobility]`"]
    {
        assert!(md.contains(section), "{section} missing");
    }
    assert!(md.find("## `[topology]`") < md.find("## `[radio]`"));
}

/// The schema's bounds are the validation's: a value at a bound the schema
/// gives is accepted, one just beyond it refused naming the key.
#[test]
fn a_value_at_a_schema_bound_passes_and_one_beyond_it_fails_with_its_key() {
    let r = Reference::scenario();
    let base = || Scenario::builtin_default();
    type Set = fn(&mut Scenario, f64);
    let cases: [(&str, Set); 5] = [
        ("duration_s", |s, v| s.duration_s = v),
        ("radio.mac.queue_packets", |s, v| s.radio.mac.queue_packets = v as u32),
        ("radio.noise_figure_db", |s, v| s.radio.noise_figure_db = v),
        ("radio.shadowing_sigma_db", |s, v| s.radio.shadowing_sigma_db = v),
        ("radio.mac.long_retry_limit", |s, v| s.radio.mac.long_retry_limit = v as u32),
    ];
    for (key, set) in cases {
        let doc = r.docs(key).next().unwrap();
        let (lo, hi) = bounds_of(doc);
        for (inside, outside) in [(lo, lo.map(|v| v - 1.0)), (hi, hi.map(|v| v + 1.0))] {
            let (Some(inside), Some(outside)) = (inside, outside) else { continue };
            let mut s = base();
            set(&mut s, inside);
            assert!(s.validate().is_ok(), "{key} = {inside}");
            if outside < 0.0 && doc.type_name == "integer" {
                continue; // an unsigned key cannot hold it
            }
            let mut s = base();
            set(&mut s, outside);
            let e = s.validate().unwrap_err().to_string();
            assert!(e.starts_with(&format!("{key} = ")), "{key} = {outside}: {e}");
        }
    }
}

/// The (lowest, highest) accepted values a key's bounds text gives, the
/// exclusive ones as the accepted value nearest them.
fn bounds_of(doc: &KeyDoc) -> (Option<f64>, Option<f64>) {
    let b = doc.bounds.as_deref().unwrap_or_default();
    if let Some((lo, hi)) = b.split_once(" to ") {
        return (lo.parse().ok(), hi.parse().ok());
    }
    let num = |s: &str| s.trim().parse::<f64>().ok();
    let mut lo = None;
    let mut hi = None;
    for part in b.split(", ") {
        if let Some(v) = part.strip_prefix("> ") {
            lo = num(v).map(|v| v + 1e-3);
        } else if let Some(v) = part.strip_prefix("≤ ") {
            hi = num(v);
        }
    }
    (lo, hi)
}

#[test]
fn units_come_from_the_names_and_sources_from_the_descriptions() {
    assert_eq!(unit("cs_threshold_dbm"), Some("dBm"));
    assert_eq!(unit("loss_db"), Some("dB"));
    assert_eq!(unit("max_speed_mps"), Some("m/s"));
    assert_eq!(unit("read_rate_bps"), Some("bit/s"));
    assert_eq!(unit("rate_kbps"), Some("kbit/s"));
    assert_eq!(unit("spacing_m"), Some("m"));
    assert_eq!(unit("kappa"), None);
    assert_eq!(source("as seed 003 §5.1, Table 1: and RFC 3626 §13."), Some("seed 003 §5.1, RFC 3626 §13".into()));
    assert_eq!(source("no citation"), None);
}

//! Sweep assignments: the special keys (`hops`, `protocol`, `flow_count`)
//! and dotted paths into the scenario tree.

use toml::Value;

fn as_u32(v: &Value) -> Result<u32, String> {
    v.as_integer().and_then(|i| u32::try_from(i).ok()).ok_or_else(|| "a non-negative integer".to_string())
}

/// Applies one sweep assignment to the scenario tree.
pub(super) fn apply(tree: &mut toml::Table, key: &str, v: &Value) -> Result<(), String> {
    match key {
        "hops" => {
            let hops = as_u32(v)?;
            let max_hops = meshbed_sim::scenario::MAX_NODES - 1;
            if !(1..=max_hops).contains(&hops) {
                return Err(format!("a chain length from 1 to {max_hops} hops"));
            }
            let topo = tree.get_mut("topology").and_then(Value::as_table_mut).ok_or("a [topology] table")?;
            if topo.get("kind").and_then(Value::as_str) != Some("chain") {
                return Err("a chain topology for the `hops` axis".into());
            }
            // A chain of at least one node (any integer may stand here
            // before the scenario's own checks: `nodes = -9223372036854775808`
            // overflowed, found by the experiment_toml fuzz target).
            let nodes = topo.get("nodes").and_then(Value::as_integer).filter(|&n| n >= 1);
            let old_last = nodes.ok_or("topology.nodes of at least 1 for the `hops` axis")? - 1;
            topo.insert("nodes".into(), Value::Integer(hops as i64 + 1));
            if let Some(flows) = tree.get_mut("flows").and_then(Value::as_array_mut) {
                for f in flows.iter_mut().filter_map(Value::as_table_mut) {
                    for end in ["src", "dst"] {
                        if f.get(end).and_then(Value::as_integer) == Some(old_last) {
                            f.insert(end.into(), Value::Integer(hops as i64));
                        }
                    }
                }
            }
            // A walker (`[mobility] model = "walk"`) that is the last node
            // stays the last node, walking to the new chain end.
            if let Some(m) = tree.get_mut("mobility").and_then(Value::as_table_mut) {
                if m.get("model").and_then(Value::as_str) == Some("walk")
                    && m.get("node").and_then(Value::as_integer) == Some(old_last)
                {
                    m.insert("node".into(), Value::Integer(hops as i64));
                }
            }
            // A static path along the whole chain follows it.
            if let Some(paths) = tree
                .get_mut("routing")
                .and_then(Value::as_table_mut)
                .and_then(|r| r.get_mut("paths"))
                .and_then(Value::as_array_mut)
            {
                let is_whole_chain = |p: &Value| {
                    p.as_array().is_some_and(|a| {
                        a.len() as i64 == old_last + 1
                            && a.iter().enumerate().all(|(i, v)| v.as_integer() == Some(i as i64))
                    })
                };
                for p in paths.iter_mut().filter(|p| is_whole_chain(p)) {
                    *p = Value::Array((0..=hops as i64).map(Value::Integer).collect());
                }
            }
            Ok(())
        }
        "protocol" => {
            if !v.is_str() {
                return Err("a protocol name".into());
            }
            if tree.get("random_flows").and_then(Value::as_table).is_some() {
                set_path(tree, "random_flows.flow.protocol", v)?;
            }
            set_path(tree, "flows[*].protocol", v)?;
            // A base scenario may carry settings for each family
            // (`[flows.atp]`, `[flows.tcp]`, `[flows.mtl]`, the kernel's
            // `congestion_control`): a point keeps those of the protocol it
            // runs (an unknown name is refused when the point is read).
            let own = meshbed_sim::scenario::settings_table(v.as_str().unwrap_or_default());
            let others: Vec<&str> =
                meshbed_sim::scenario::SETTINGS_TABLES.into_iter().filter(|t| own.is_some_and(|o| o != *t)).collect();
            let drop_others = |f: &mut toml::Table| {
                for k in &others {
                    f.remove(*k);
                }
            };
            for f in tree.get_mut("flows").and_then(Value::as_array_mut).into_iter().flatten() {
                if let Some(f) = f.as_table_mut() {
                    drop_others(f);
                }
            }
            if let Some(f) = tree.get_mut("random_flows").and_then(|r| r.get_mut("flow")).and_then(Value::as_table_mut)
            {
                drop_others(f);
            }
            Ok(())
        }
        "flow_count" => {
            let n = as_u32(v)?;
            let max = meshbed_sim::scenario::MAX_FLOWS;
            // Checked before the copies are made.
            if !(1..=max).contains(&(n as usize)) {
                return Err(format!("a number of flows from 1 to {max}"));
            }
            let flows = tree.get_mut("flows").and_then(Value::as_array_mut).ok_or("at least one flow to copy")?;
            let first = flows.first().cloned().ok_or("at least one flow to copy")?;
            *flows = vec![first; n as usize];
            Ok(())
        }
        path => set_path(tree, path, v),
    }
}

/// The value at a dotted path such as `radio.data_rate_kbps` or
/// `flows[0].protocol`; `None` where there is none.
pub fn get_path<'a>(tree: &'a toml::Table, path: &str) -> Option<&'a Value> {
    let (head, rest) = match path.split_once('.') {
        Some((h, r)) => (h, Some(r)),
        None => (path, None),
    };
    let v = match head.strip_suffix(']').and_then(|h| h.split_once('[')) {
        Some((name, idx)) => tree.get(name)?.as_array()?.get(idx.parse::<usize>().ok()?)?,
        None => tree.get(head)?,
    };
    match rest {
        None => Some(v),
        Some(r) => get_path(v.as_table()?, r),
    }
}

/// Sets a dotted path such as `radio.mac.short_retry_limit`,
/// `flows[*].atp.kappa` or `flows[0].start_s`, creating missing tables.
pub fn set_path(tree: &mut toml::Table, path: &str, v: &Value) -> Result<(), String> {
    let (head, rest) = match path.split_once('.') {
        Some((h, r)) => (h, Some(r)),
        None => (path, None),
    };
    if let Some((name, idx)) = head.strip_suffix(']').and_then(|h| h.split_once('[')) {
        let arr = tree.get_mut(name).and_then(Value::as_array_mut).ok_or_else(|| format!("an array `{name}`"))?;
        let targets: Vec<usize> = if idx == "*" {
            (0..arr.len()).collect()
        } else {
            let i: usize = idx.parse().map_err(|_| format!("an index or * in `{head}`"))?;
            if i >= arr.len() {
                return Err(format!("an index below {} in `{head}`", arr.len()));
            }
            vec![i]
        };
        for i in targets {
            match (rest, &mut arr[i]) {
                (Some(r), Value::Table(t)) => set_path(t, r, v)?,
                (None, slot) => *slot = v.clone(),
                _ => return Err(format!("tables in `{name}`")),
            }
        }
        return Ok(());
    }
    match rest {
        None => {
            tree.insert(head.into(), v.clone());
            Ok(())
        }
        Some(r) => {
            let entry = tree.entry(head).or_insert_with(|| Value::Table(toml::Table::new()));
            let t = entry.as_table_mut().ok_or_else(|| format!("`{head}` to be a table"))?;
            set_path(t, r, v)
        }
    }
}

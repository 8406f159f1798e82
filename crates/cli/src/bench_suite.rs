//! `meshbed bench --suite`: the simulator's speed on the workloads issue 28
//! measures against ns-3 — the four matched runs (a 6-hop chain with TCP and
//! with saturated UDP, the 100-node AODV network with CBR and with TCP),
//! static grids of 100, 400, 1600 and 6400 nodes at constant density, and the ATP
//! paper's 100-node, 25-flow, 100 s network (seed 002 §5) over AODV, DSR
//! and OLSR with NewReno and default ATP. `--only` picks some of them.
//!
//! Each workload runs in this process, one at a time: wall time, events,
//! events per second, and the peak resident memory of the run (the
//! kernel's high-water mark, reset before each run through
//! `/proc/self/clear_refs`). With `--baseline BINARY` each workload's
//! scenario also runs as `BINARY sim FILE` and as this binary's own
//! `sim FILE`, child processes in turn (A B A B ...), so that an older
//! build is measured side by side in one sitting, start-up included on
//! both sides; the speed-up is the median of the per-pair ratios. Speed and
//! memory targets live here and in the closing notes, never in
//! tests.

use crate::out;
use anyhow::{bail, Context, Result};
use meshbed_sim::Scenario;
use std::path::Path;

/// A workload's scenario: a file of the suite, or a point of a built-in
/// experiment.
enum Source {
    File(&'static str),
    /// The ATP paper's mobile network at 25 flows and 20 m/s, seed 1, with
    /// `protocol`, over the built-in's routing or another.
    AtpPaper {
        builtin: &'static str,
        protocol: &'static str,
        olsr: bool,
    },
}

struct Workload {
    name: &'static str,
    what: &'static str,
    source: Source,
}

const fn file(name: &'static str, what: &'static str, text: &'static str) -> Workload {
    Workload { name, what, source: Source::File(text) }
}

const fn atp_paper(
    name: &'static str,
    what: &'static str,
    builtin: &'static str,
    protocol: &'static str,
    olsr: bool,
) -> Workload {
    Workload { name, what, source: Source::AtpPaper { builtin, protocol, olsr } }
}

const WORKLOADS: &[Workload] = &[
    file("chain-tcp", "6-hop 802.11a chain, TCP NewReno, 2 MiB", include_str!("bench_suite/chain-tcp.toml")),
    file("chain-udp", "6-hop 802.11a chain, saturated UDP, 10 s", include_str!("bench_suite/chain-udp.toml")),
    file(
        "aodv-cbr-100",
        "100 nodes, RWP 10 m/s, AODV, 10 CBR flows, 51 s",
        include_str!("bench_suite/aodv-cbr-100.toml"),
    ),
    file(
        "aodv-tcp-100",
        "100 nodes, RWP 20 m/s, AODV, 25 TCP NewReno flows, 51 s",
        include_str!("bench_suite/aodv-tcp-100.toml"),
    ),
    file("grid-100", "static 10 x 10 grid, 4 CBR flows, 5 s", include_str!("bench_suite/grid-100.toml")),
    file("grid-400", "static 20 x 20 grid, 16 CBR flows, 5 s", include_str!("bench_suite/grid-400.toml")),
    file("grid-1600", "static 40 x 40 grid, 64 CBR flows, 5 s", include_str!("bench_suite/grid-1600.toml")),
    file("grid-6400", "static 80 x 80 grid, 256 CBR flows, 5 s", include_str!("bench_suite/grid-6400.toml")),
    atp_paper("atp-paper-aodv-newreno", "ATP paper, AODV, NewReno", "atp-paper-mobile-aodv", "tcp-newreno", false),
    atp_paper("atp-paper-aodv-atp", "ATP paper, AODV, atp-default", "atp-paper-mobile-aodv", "atp-default", false),
    atp_paper("atp-paper-dsr-newreno", "ATP paper, DSR, NewReno", "atp-paper-mobile", "tcp-newreno", false),
    atp_paper("atp-paper-dsr-atp", "ATP paper, DSR, atp-default", "atp-paper-mobile", "atp-default", false),
    atp_paper("atp-paper-olsr-newreno", "ATP paper, OLSR, NewReno", "atp-paper-mobile", "tcp-newreno", true),
    atp_paper("atp-paper-olsr-atp", "ATP paper, OLSR, atp-default", "atp-paper-mobile", "atp-default", true),
];

/// The names `--only` takes.
pub fn workload_names() -> Vec<&'static str> {
    WORKLOADS.iter().map(|w| w.name).collect()
}

/// The workloads to run: those `only` names, or without it all of them —
/// the OLSR runs of the ATP paper's network too, which take seconds now,
/// as the others do (issue 28).
fn chosen(only: &[String]) -> Vec<&'static Workload> {
    WORKLOADS.iter().filter(|w| only.is_empty() || only.iter().any(|n| n == w.name)).collect()
}

impl Workload {
    fn scenario(&self) -> Result<Scenario> {
        match self.source {
            Source::File(text) => Scenario::from_toml(text).map_err(|e| anyhow::anyhow!("{}: {e}", self.name)),
            Source::AtpPaper { builtin, protocol, olsr } => {
                let experiment = meshbed_experiment::builtin::get(builtin).context("the built-in experiment")?;
                let want = [
                    ("mobility.max_speed_mps", toml::Value::Float(20.0)),
                    ("random_flows.count", toml::Value::Integer(25)),
                    ("protocol", toml::Value::String(protocol.into())),
                ];
                let point = experiment
                    .points(builtin)?
                    .into_iter()
                    .find(|p| want.iter().all(|(k, v)| p.values.iter().any(|(pk, pv)| pk == k && pv == v)))
                    .with_context(|| format!("{builtin} has no point with 25 flows at 20 m/s and {protocol}"))?;
                let mut s = point.scenario;
                s.seed = 1;
                if olsr {
                    s.routing = meshbed_sim::scenario::Routing::olsr(false);
                }
                Ok(s)
            }
        }
    }
}

/// One workload's numbers (the median run by wall time).
struct Row {
    workload: &'static str,
    what: &'static str,
    nodes: u32,
    simulated_s: f64,
    wall_s: f64,
    /// Building the run (placement, link budget, engines, flows) before
    /// its first event: issue 28 asks it to grow linearly with the nodes.
    setup_s: f64,
    events: u64,
    events_per_s: f64,
    /// The run after its set-up, per event: issue 28 compares it across
    /// grid sizes.
    run_ns_per_event: f64,
    /// The run's peak resident memory, MiB; `None` where the kernel's
    /// high-water mark could not be reset or read.
    peak_rss_mib: Option<f64>,
}

/// Resets the process's peak resident set (Linux `clear_refs` 5).
pub(crate) fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// The process's peak resident set since the last reset, MiB.
pub(crate) fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kib: f64 =
        status.lines().find_map(|l| l.strip_prefix("VmHWM:"))?.trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kib / 1024.0)
}

/// A workload measured side by side with a baseline binary: median wall
/// seconds of each, and the median of the per-pair ratios (baseline ÷ this);
/// whether both simulated the same run (the summary line `meshbed sim`
/// prints first: seed, simulated time, event count and trace hash), and
/// whether both printed the same results (every line after it: flows and
/// MAC counters), so that a speed-up that changed the model's numbers
/// shows, and one that only left out events that did nothing (issue 28:
/// stale timers) shows as that.
struct Pair {
    workload: &'static str,
    this_s: f64,
    baseline_s: f64,
    speed_up: f64,
    same_run: bool,
    same_results: bool,
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// Wall seconds of `binary sim file` as a child process, the first line it
/// printed (the run's summary with its trace hash) and the rest (the
/// results); an error holds the
/// first line the binary printed on failure (an older build may not know a
/// key of the scenario).
fn time_child(binary: &Path, file: &Path) -> Result<(f64, String, String)> {
    let t0 = std::time::Instant::now();
    let output = std::process::Command::new(binary)
        .arg("sim")
        .arg(file)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .output()
        .with_context(|| format!("--baseline: running {}", binary.display()))?;
    let wall_s = t0.elapsed().as_secs_f64();
    if !output.status.success() {
        let err = String::from_utf8_lossy(&output.stderr);
        bail!("{} sim: {}", binary.display(), err.lines().next().unwrap_or("failed without a message"));
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let (summary, results) = stdout.split_once('\n').unwrap_or((&stdout, ""));
    Ok((wall_s, summary.to_string(), results.to_string()))
}

/// Runs `w`'s scenario with this binary and `baseline`, in turn.
fn side_by_side(baseline: &Path, w: &Workload, scenario: &Scenario, repetitions: u32) -> Result<Pair> {
    let text = match w.source {
        Source::File(text) => text.to_string(),
        Source::AtpPaper { .. } => toml::to_string(scenario).context("the scenario as TOML")?,
    };
    let file = std::env::temp_dir().join(format!("meshbed-bench-{}-{}.toml", std::process::id(), w.name));
    std::fs::write(&file, text).with_context(|| format!("writing {}", file.display()))?;
    let this = std::env::current_exe().context("this binary's path")?;
    let mut pairs = Vec::new();
    let mut same_run = true;
    let mut same_results = true;
    let result = (|| {
        for _ in 0..repetitions {
            let (a, this_run, this_results) = time_child(&this, &file)?;
            let (b, baseline_run, baseline_results) = time_child(baseline, &file)?;
            same_run &= this_run == baseline_run;
            same_results &= this_results == baseline_results;
            pairs.push((a, b));
        }
        Ok::<_, anyhow::Error>(())
    })();
    let _ = std::fs::remove_file(&file);
    result?;
    Ok(Pair {
        workload: w.name,
        this_s: median(pairs.iter().map(|p| p.0).collect()),
        baseline_s: median(pairs.iter().map(|p| p.1).collect()),
        speed_up: median(pairs.iter().map(|p| p.1 / p.0).collect()),
        same_run,
        same_results,
    })
}

pub fn run(only: &[String], repetitions: u32, baseline: Option<&Path>, json_out: bool) -> Result<()> {
    if let Some(b) = baseline {
        anyhow::ensure!(b.is_file(), "--baseline {}: expected a meshbed binary (no such file)", b.display());
    }
    for name in only {
        if !WORKLOADS.iter().any(|w| w.name == name) {
            bail!("--only {name}: expected one of {}", workload_names().join(", "));
        }
    }
    let chosen = chosen(only);
    if !json_out {
        out(&format!(
            "{:<24} {:>6} {:>7} {:>9} {:>9} {:>12} {:>12} {:>8} {:>10}  what\n",
            "workload", "nodes", "sim s", "wall s", "setup s", "events", "events/s", "ns/event", "peak MiB"
        ))?;
    }
    let mut rows = Vec::new();
    let mut pairs: Vec<std::result::Result<Pair, (&'static str, String)>> = Vec::new();
    for w in chosen {
        let scenario = w.scenario()?;
        let mut runs = Vec::new();
        for _ in 0..repetitions {
            let reset = reset_peak_rss();
            let t0 = std::time::Instant::now();
            let sim = meshbed_sim::Sim::new(&scenario).map_err(|e| anyhow::anyhow!("{}: {e}", w.name))?;
            let setup_s = t0.elapsed().as_secs_f64();
            let report = sim.run();
            let wall_s = t0.elapsed().as_secs_f64();
            let peak = if reset { peak_rss_mib() } else { None };
            runs.push((wall_s, setup_s, report.events, peak));
        }
        runs.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (wall_s, setup_s, events, peak) = runs[runs.len() / 2];
        let row = Row {
            workload: w.name,
            what: w.what,
            nodes: scenario.node_count(),
            simulated_s: scenario.duration_s,
            wall_s,
            setup_s,
            events,
            events_per_s: events as f64 / wall_s,
            run_ns_per_event: (wall_s - setup_s) * 1e9 / events.max(1) as f64,
            peak_rss_mib: peak,
        };
        if !json_out {
            out(&format!(
                "{:<24} {:>6} {:>7.0} {:>9.3} {:>9.3} {:>12} {:>10.2} M {:>8.1} {:>10}  {}\n",
                row.workload,
                row.nodes,
                row.simulated_s,
                row.wall_s,
                row.setup_s,
                row.events,
                row.events_per_s / 1e6,
                row.run_ns_per_event,
                row.peak_rss_mib.map_or("-".to_string(), |m| format!("{m:.0}")),
                row.what
            ))?;
        }
        rows.push(row);
        if let Some(b) = baseline {
            pairs.push(side_by_side(b, w, &scenario, repetitions).map_err(|e| (w.name, format!("{e:#}"))));
        }
    }
    if baseline.is_some() && !json_out {
        out(&format!(
            "\nside by side (child processes in turn, median of {repetitions}):\n{:<24} {:>9} {:>11} {:>9}  {}\n",
            "workload", "this s", "baseline s", "speed-up", "same run (events, trace hash; results)"
        ))?;
        for p in &pairs {
            match p {
                Ok(p) => out(&format!(
                    "{:<24} {:>9.3} {:>11.3} {:>8.2}x  {}\n",
                    p.workload,
                    p.this_s,
                    p.baseline_s,
                    p.speed_up,
                    match (p.same_run, p.same_results) {
                        (true, true) => "yes",
                        (false, true) => "same results; other events or trace hash",
                        (_, false) => "NO: the model's numbers changed",
                    }
                ))?,
                Err((name, e)) => out(&format!("{name:<24} not compared: {e}\n"))?,
            }
        }
    }
    if json_out {
        let rows: Vec<serde_json::Value> = rows
            .iter()
            .map(|r| {
                let pair = pairs.iter().find_map(|p| match p {
                    Ok(p) if p.workload == r.workload => Some(serde_json::json!({
                        "this_s": p.this_s, "baseline_s": p.baseline_s, "speed_up": p.speed_up,
                        "same_run": p.same_run, "same_results": p.same_results,
                    })),
                    Err((name, e)) if *name == r.workload => Some(serde_json::json!({ "error": e })),
                    _ => None,
                });
                serde_json::json!({
                    "workload": r.workload, "what": r.what, "nodes": r.nodes, "simulated_s": r.simulated_s,
                    "wall_s": r.wall_s, "setup_s": r.setup_s, "events": r.events, "events_per_s": r.events_per_s,
                    "run_ns_per_event": r.run_ns_per_event,
                    "peak_rss_mib": r.peak_rss_mib, "baseline": pair,
                })
            })
            .collect();
        out(&format!("{}\n", serde_json::to_string_pretty(&rows)?))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_only_every_workload_runs_and_only_picks_its_own() {
        let all: Vec<&str> = chosen(&[]).iter().map(|w| w.name).collect();
        assert_eq!(all, workload_names());
        assert!(all.contains(&"atp-paper-olsr-newreno") && all.contains(&"atp-paper-olsr-atp"));
        let picked: Vec<&str> = chosen(&["grid-400".into(), "chain-tcp".into()]).iter().map(|w| w.name).collect();
        assert_eq!(picked, ["chain-tcp", "grid-400"], "in the suite's order");
    }
}

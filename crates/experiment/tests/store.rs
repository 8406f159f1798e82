//! The result store and the Parquet tables (issue 16): a rerun executes no
//! run and writes the same CSV; an extended sweep executes only the new
//! runs; a new model revision or a damaged file runs again; a sweep stopped
//! halfway resumes; every row carries its build; Parquet reads back as the
//! CSV.

use meshbed_experiment::run::{self, RunError, Runner, SimRunner};
use meshbed_experiment::store::{self, Lookup, Store};
use meshbed_experiment::{Experiment, RunOptions};
use meshbed_sim::{Scenario, SimReport};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The simulator, counting its runs; after `fail_after` runs it fails
/// (a sweep killed halfway).
#[derive(Debug, Default)]
struct Counting {
    runs: AtomicUsize,
    fail_after: Option<usize>,
    /// Each run takes at least this long (so that runs overlap).
    slow: Option<std::time::Duration>,
}

impl Runner for Counting {
    fn supports(&self, scenario: &Scenario) -> Result<(), meshbed_sim::backend::Refusal> {
        SimRunner.supports(scenario)
    }
    fn run(&self, scenario: &Scenario) -> Result<SimReport, RunError> {
        let done = self.runs.fetch_add(1, Ordering::SeqCst);
        if let Some(d) = self.slow {
            std::thread::sleep(d);
        }
        if self.fail_after.is_some_and(|n| done >= n) {
            return Err(RunError::Backend("stopped".into()));
        }
        SimRunner.run(scenario)
    }
    fn store_name(&self) -> Option<&str> {
        SimRunner.store_name()
    }
}

/// A two-hop ATP transfer and a CBR flow, swept over the chain's spacing.
fn experiment(spacings: &[f64], repetitions: u32) -> Experiment {
    let values: Vec<String> = spacings.iter().map(|s| format!("{s:?}")).collect();
    let text = format!(
        "duration_s = 1.0\n[topology]\nkind = \"chain\"\nnodes = 3\nspacing_m = 200.0\n\
         [[flows]]\nsrc = 0\ndst = 2\nprotocol = \"atp-default\"\nbytes = 100000\n\
         [[flows]]\nsrc = 2\ndst = 0\ntraffic = \"cbr\"\nrate_kbps = 64.0\npacket_bytes = 256\n\
         [experiment]\nname = \"t\"\nrepetitions = {repetitions}\n\
         [[experiment.sweep]]\nkey = \"topology.spacing_m\"\nvalues = [{}]\n",
        values.join(", ")
    );
    Experiment::from_toml(&text, "e.toml").unwrap()
}

/// Runs `e` through `store` with a fresh counting runner; the results and
/// how many runs the runner executed.
fn run_with(e: &Experiment, store: &Store, runner: Counting) -> (Result<run::Results, String>, usize) {
    let runner = Arc::new(runner);
    let options =
        RunOptions { runner: runner.clone(), jobs: 2, store: Some(Arc::new(store.clone())), ..Default::default() };
    let results = run::run(e, &options).map_err(|e| e.to_string());
    (results, runner.runs.load(Ordering::SeqCst))
}

fn tables(results: &run::Results, dir: &Path) -> Vec<(String, Vec<u8>)> {
    run::write_csv(results, &run::summarize(results), dir).unwrap();
    ["flows.csv", "network.csv", "summary.csv"].map(|f| (f.to_string(), std::fs::read(dir.join(f)).unwrap())).into()
}

#[test]
fn a_rerun_executes_no_run_and_writes_the_same_csv() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("store")).unwrap();
    let e = experiment(&[150.0, 200.0], 2);
    let (first, executed) = run_with(&e, &store, Counting::default());
    let first = first.unwrap();
    assert_eq!(executed, 4);
    let tally = first.store.clone().unwrap();
    assert_eq!((tally.executed, tally.reused), (4, 0));
    let (again, executed) = run_with(&e, &store, Counting::default());
    let again = again.unwrap();
    assert_eq!(executed, 0, "a rerun runs nothing");
    let tally = again.store.clone().unwrap();
    assert_eq!((tally.executed, tally.reused, tally.stale.len(), tally.corrupt.len()), (0, 4, 0, 0));
    assert_eq!(tally.summary_line().split(" (").next(), Some("0 runs executed, 4 reused from the store"));
    assert_eq!(tables(&first, &dir.path().join("a")), tables(&again, &dir.path().join("b")));
}

#[test]
fn an_extended_sweep_executes_only_the_new_runs() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    run_with(&experiment(&[150.0, 200.0], 2), &store, Counting::default()).0.unwrap();
    // One more seed: the third repetition of each point.
    let (more_seeds, executed) = run_with(&experiment(&[150.0, 200.0], 3), &store, Counting::default());
    let tally = more_seeds.unwrap().store.unwrap();
    assert_eq!((executed, tally.executed, tally.reused), (2, 2, 4));
    // One more axis value, between the two: its three repetitions.
    let e = experiment(&[150.0, 175.0, 200.0], 3);
    let (more_points, executed) = run_with(&e, &store, Counting::default());
    let more_points = more_points.unwrap();
    let tally = more_points.store.clone().unwrap();
    assert_eq!((executed, tally.executed, tally.reused), (3, 3, 6));
    let fresh = run::run(&e, &RunOptions { jobs: 2, ..Default::default() }).unwrap();
    assert!(fresh.store.is_none());
    assert_eq!(tables(&more_points, &dir.path().join("a")), tables(&fresh, &dir.path().join("b")));
}

#[test]
fn a_new_model_revision_runs_everything_again() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let e = experiment(&[150.0, 200.0], 2);
    run_with(&e, &store, Counting::default()).0.unwrap();
    let bumped = store.clone().with_model_revision("bumped");
    let (results, executed) = run_with(&e, &bumped, Counting::default());
    let tally = results.unwrap().store.unwrap();
    assert_eq!((executed, tally.executed, tally.reused, tally.stale.len()), (4, 4, 0, 4));
    assert!(tally.stale[0].contains(&format!("model revision {}", store::MODEL_REVISION)), "{}", tally.stale[0]);
    assert!(tally.summary_line().contains("4 stored runs stale"), "{}", tally.summary_line());
    // The bumped runs replaced the old ones: now those are stale for the
    // old revision, and current for the new.
    assert_eq!(run_with(&e, &bumped, Counting::default()).1, 0);
    let (results, executed) = run_with(&e, &store, Counting::default());
    assert_eq!((executed, results.unwrap().store.unwrap().stale.len()), (4, 4));
}

/// The store key of repetition `rep` of the first point of `results`.
fn rep_key(store: &Store, results: &run::Results, rep: u64) -> store::RunKey {
    let mut scenario = results.points[0].scenario.clone();
    scenario.seed += rep;
    store.key("sim", &scenario)
}

#[test]
fn a_damaged_stored_run_is_reported_and_run_again() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let e = experiment(&[150.0], 2);
    let first = run_with(&e, &store, Counting::default()).0.unwrap();
    let key = rep_key(&store, &first, 1);
    let path = store.path(&key);
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    assert!(matches!(store.load(&key), Lookup::Corrupt(why) if why.contains(&path.display().to_string())));
    let (results, executed) = run_with(&e, &store, Counting::default());
    let tally = results.unwrap().store.unwrap();
    assert_eq!((executed, tally.executed, tally.reused, tally.corrupt.len()), (1, 1, 1, 1));
    assert!(tally.summary_line().contains("1 stored runs corrupt"), "{}", tally.summary_line());
    assert!(matches!(store.load(&key), Lookup::Hit(..)), "rewritten whole");
}

/// What is not a stored run where one should be (a directory, a FIFO, a
/// link) is run again, never waited on or fatal (issue 26); a directory is
/// moved aside, kept, and the run stored in its place; a store that cannot
/// keep a run says so and the experiment still ends with every result.
#[test]
fn an_entry_that_is_not_a_file_is_run_again_never_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let e = experiment(&[150.0], 3);
    let first = run_with(&e, &store, Counting::default()).0.unwrap();
    let (dir_key, fifo_key, link_key) =
        (rep_key(&store, &first, 0), rep_key(&store, &first, 1), rep_key(&store, &first, 2));
    std::fs::remove_file(store.path(&dir_key)).unwrap();
    std::fs::create_dir(store.path(&dir_key)).unwrap();
    std::fs::write(store.path(&dir_key).join("user data"), b"kept").unwrap();
    std::fs::remove_file(store.path(&fifo_key)).unwrap();
    nix::unistd::mkfifo(&store.path(&fifo_key), nix::sys::stat::Mode::S_IRWXU).unwrap();
    std::fs::remove_file(store.path(&link_key)).unwrap();
    std::os::unix::fs::symlink("/dev/zero", store.path(&link_key)).unwrap();
    let t0 = std::time::Instant::now();
    for k in [&dir_key, &fifo_key, &link_key] {
        assert!(matches!(store.load(k), Lookup::Corrupt(_)), "{}", store.path(k).display());
    }
    assert!(t0.elapsed() < std::time::Duration::from_secs(1), "nothing waited on or read forever");
    let (results, executed) = run_with(&e, &store, Counting::default());
    let tally = results.unwrap().store.unwrap();
    assert_eq!((executed, tally.corrupt.len(), tally.unsaved.len()), (3, 3, 0), "{}", tally.summary_line());
    for k in [&dir_key, &fifo_key, &link_key] {
        assert!(matches!(store.load(k), Lookup::Hit(..)), "stored again: {}", store.path(k).display());
    }
    let parent = store.path(&dir_key).parent().unwrap().to_path_buf();
    let aside: Vec<_> = std::fs::read_dir(&parent)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains(".displaced."))
        .collect();
    assert!(aside.iter().any(|p| p.join("user data").exists()), "the directory is kept aside: {aside:?}");

    // A store that cannot keep runs (its directory read-only, as another
    // user): said, and every result is still there. (Root ignores modes.)
    if !nix::unistd::geteuid().is_root() {
        let ro = tempfile::tempdir().unwrap();
        let ro_store = Store::open(&ro.path().join("store")).unwrap();
        std::fs::create_dir(ro_store.dir()).unwrap();
        std::fs::set_permissions(ro_store.dir(), std::os::unix::fs::PermissionsExt::from_mode(0o500)).unwrap();
        let (results, executed) = run_with(&e, &ro_store, Counting::default());
        let results = results.unwrap();
        assert_eq!((executed, results.runs.len()), (3, 3));
        let tally = results.store.unwrap();
        assert_eq!(tally.unsaved.len(), 3, "{}", tally.summary_line());
        assert!(tally.summary_line().contains("3 finished runs not kept in the store"), "{}", tally.summary_line());
        std::fs::set_permissions(ro_store.dir(), std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    }
}

/// A stored file's CBOR as a value, and back.
fn read_value(path: &Path) -> ciborium::Value {
    let file = std::fs::File::open(path).unwrap();
    ciborium::from_reader(snap::read::FrameDecoder::new(file)).unwrap()
}

fn write_value(path: &Path, value: &ciborium::Value) {
    let mut w = snap::write::FrameEncoder::new(std::fs::File::create(path).unwrap());
    ciborium::into_writer(value, &mut w).unwrap();
    w.into_inner().unwrap();
}

/// The entry `name` of a CBOR map.
fn entry<'a>(map: &'a mut ciborium::Value, name: &str) -> &'a mut ciborium::Value {
    let ciborium::Value::Map(entries) = map else { panic!("not a map") };
    &mut entries.iter_mut().find(|(k, _)| k.as_text() == Some(name)).unwrap_or_else(|| panic!("no {name}")).1
}

/// A run stored by a build of the previous file format (1: each flow one
/// flat record) is stale, never read as this format's: such a record may
/// decode as a flow without its parts (a transfer read as no transfer),
/// so the format, not a decoding error, must tell.
#[test]
fn a_run_of_the_flat_flow_format_is_stale_not_misread() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let e = experiment(&[150.0], 1);
    let first = run_with(&e, &store, Counting::default()).0.unwrap();
    let key = store.key("sim", &first.points[0].scenario);
    let path = store.path(&key);
    // Format 1: the transfer's and the routing's fields on the flow itself.
    let mut old = read_value(&path);
    *entry(&mut old, "format") = ciborium::Value::Integer(1.into());
    let ciborium::Value::Array(flows) = entry(entry(&mut old, "report"), "flows") else { panic!("flows") };
    for flow in flows.iter_mut() {
        let ciborium::Value::Map(fields) = flow else { panic!("a flow") };
        let is_part = |(k, _): &(ciborium::Value, ciborium::Value)| matches!(k.as_text(), Some("transfer" | "udp"));
        let (parts, flat): (Vec<_>, Vec<_>) = std::mem::take(fields).into_iter().partition(is_part);
        *fields = flat;
        for (_, part) in parts {
            let ciborium::Value::Map(inner) = part else { panic!("a part") };
            fields.extend(inner);
        }
    }
    write_value(&path, &old);
    let stale = |lookup| matches!(lookup, Lookup::Stale(why) if why.contains("file format 1"));
    assert!(stale(store.load(&key)), "{:?}", store.load(&key));
    // One whose report does not decode at all is stale by its header too.
    *entry(&mut old, "report") = ciborium::Value::Text("another layout".into());
    write_value(&path, &old);
    assert!(stale(store.load(&key)), "{:?}", store.load(&key));
    let (results, executed) = run_with(&e, &store, Counting::default());
    assert_eq!((executed, results.unwrap().store.unwrap().stale.len()), (1, 1));
    assert!(matches!(store.load(&key), Lookup::Hit(..)), "rewritten in this format");
}

#[test]
fn a_sweep_stopped_halfway_resumes_where_it_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let e = experiment(&[150.0, 200.0], 3);
    let runner = Arc::new(Counting { fail_after: Some(4), ..Default::default() });
    let options =
        RunOptions { runner: runner.clone(), jobs: 1, store: Some(Arc::new(store.clone())), ..Default::default() };
    assert_eq!(run::run(&e, &options).unwrap_err().to_string(), "stopped");
    let (results, executed) = run_with(&e, &store, Counting::default());
    let tally = results.unwrap().store.unwrap();
    assert_eq!((executed, tally.executed, tally.reused), (2, 2, 4));
    // No temporary file is left behind.
    let leftovers = walk(dir.path()).into_iter().filter(|p| p.extension().is_none_or(|x| x != "sz")).count();
    assert_eq!(leftovers, 0);
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// Everything a report holds comes back from the store, the echo RTTs the
/// JSON leaves out and the traces' names included: an echo flow over AODV
/// with rate control and a traced ATP transfer.
#[test]
fn a_stored_report_reads_back_whole() {
    let text = "duration_s = 3.0\n[radio.mac]\nrate_control = \"arf\"\n\
        [topology]\nkind = \"chain\"\nnodes = 4\nspacing_m = 200.0\n[routing]\nkind = \"aodv\"\n\
        [[flows]]\nsrc = 0\ndst = 3\ntraffic = \"echo\"\npacket_bytes = 92\nstart_s = 1.0\n\
        [[flows]]\nsrc = 3\ndst = 0\nprotocol = \"atp-default\"\nbytes = 50000\ntrace = true\n";
    let scenario = Scenario::from_toml(text).unwrap();
    let report = meshbed_sim::run(&scenario).unwrap();
    assert!(report.flows[0].echo.as_ref().is_some_and(|e| e.rtt_samples_s.len() > 10));
    assert!(!report.flows[1].trace.is_empty() && !report.rate_histogram.is_empty());
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let key = store.key("sim", &scenario);
    assert!(matches!(store.load(&key), Lookup::Missing));
    store.save(&key, &report).unwrap();
    let Lookup::Hit(back, provenance) = store.load(&key) else { panic!("stored") };
    assert_eq!(format!("{back:?}"), format!("{report:?}"));
    assert_eq!(provenance, meshbed_experiment::Provenance::this_build());
    // Another seed is another run.
    let mut other = scenario.clone();
    other.seed += 1;
    assert_ne!(store.key("sim", &other).address, key.address);
    assert!(matches!(store.load(&store.key("sim", &other)), Lookup::Missing));
}

/// A cell of a Parquet row as the CSV writes it; a double as the CSV's
/// text when that text reads back to it exactly (a swept `150.0` is the
/// double 150).
fn csv_text(field: &parquet::record::Field, csv: &str) -> String {
    use parquet::record::Field;
    match field {
        Field::Null => String::new(),
        Field::Bool(b) => b.to_string(),
        Field::Long(v) => v.to_string(),
        Field::ULong(v) => v.to_string(),
        Field::Double(v) if csv.parse::<f64>().is_ok_and(|c| c.to_bits() == v.to_bits()) => csv.to_string(),
        Field::Double(v) => v.to_string(),
        Field::Str(s) => s.clone(),
        other => panic!("unexpected Parquet value {other:?}"),
    }
}

#[test]
fn parquet_reads_back_as_the_csv() {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let e = experiment(&[150.0, 200.0], 2);
    let results = run::run(&e, &RunOptions { jobs: 2, ..Default::default() }).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let written = run::write_csv(&results, &run::summarize(&results), dir.path()).unwrap();
    for table in ["flows", "network", "summary"] {
        assert!(written.contains(&dir.path().join(format!("{table}.parquet"))), "{table}");
        let mut csv = csv::Reader::from_path(dir.path().join(format!("{table}.csv"))).unwrap();
        let header: Vec<String> = csv.headers().unwrap().iter().map(String::from).collect();
        let csv_rows: Vec<Vec<String>> = csv.records().map(|r| r.unwrap().iter().map(String::from).collect()).collect();
        let file = std::fs::File::open(dir.path().join(format!("{table}.parquet"))).unwrap();
        let reader = SerializedFileReader::new(file).unwrap();
        assert_eq!(reader.metadata().file_metadata().num_rows() as usize, csv_rows.len(), "{table}");
        let mut rows = Vec::new();
        let mut names = Vec::new();
        for (row, csv_row) in reader.get_row_iter(None).unwrap().zip(&csv_rows) {
            let row = row.unwrap();
            names = row.get_column_iter().map(|(n, _)| n.clone()).collect();
            rows.push(row.get_column_iter().zip(csv_row).map(|((_, f), c)| csv_text(f, c)).collect::<Vec<_>>());
        }
        assert_eq!(names, header, "{table}");
        assert_eq!(rows, csv_rows, "{table}");
        // 2 points × 2 repetitions × 2 flows; one row per run; per point.
        let expected_rows = match table {
            "flows" => 8,
            "network" => 4,
            _ => 2,
        };
        assert_eq!(rows.len(), expected_rows, "{table}");
        // Every row carries the build.
        let last = &header[header.len() - 2..];
        assert_eq!(last, ["meshbed_version", "git_revision"], "{table}");
        assert!(rows.iter().all(|r| r[r.len() - 2] == store::MESHBED_VERSION && r[r.len() - 1] == store::GIT_REVISION));
    }
    // Numbers are typed: the seed an unsigned integer, goodput a double,
    // the swept spacing a double, the protocol text.
    let file = std::fs::File::open(dir.path().join("flows.parquet")).unwrap();
    let reader = SerializedFileReader::new(file).unwrap();
    let schema = reader.metadata().file_metadata().schema_descr();
    let physical = |name: &str| {
        let c = schema.columns().iter().find(|c| c.name() == name).unwrap();
        format!("{:?}", c.physical_type())
    };
    assert_eq!(
        ["seed", "goodput_bps", "topology.spacing_m", "protocol", "completed"].map(physical),
        ["INT64", "DOUBLE", "DOUBLE", "BYTE_ARRAY", "BOOLEAN"]
    );
}

#[test]
fn a_store_where_a_file_is_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("store");
    std::fs::write(&file, "not a store").unwrap();
    let err = Store::open(&file).unwrap_err().to_string();
    assert!(err.contains(&file.display().to_string()) && err.contains("expected a directory"), "{err}");
    // A directory that does not exist yet is made by the first run kept.
    let store = Store::open(&dir.path().join("new")).unwrap();
    assert!(!store.dir().exists());
    run_with(&experiment(&[150.0], 1), &store, Counting::default()).0.unwrap();
    assert_eq!(walk(store.dir()).len(), 1);
}

/// Issue 26: two sweeps on one store at once (two `experiment run`s, or two
/// workers of a Python sweep) used to compute every run each. Now a run is
/// claimed while it is computed: of two processes asking for the same run
/// at once, one computes it and the other waits and reuses what was kept.
#[test]
fn two_sweeps_at_once_on_one_store_compute_each_run_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let e = experiment(&[200.0], 1);
    let points = e.points("e.toml").unwrap();
    let point = Arc::new(points[0].clone());
    let runner = Arc::new(Counting { slow: Some(std::time::Duration::from_millis(300)), ..Counting::default() });
    let workers: Vec<_> = (0..2)
        .map(|_| {
            // Each worker opens the store itself, as another process would.
            let (point, runner, dir) = (point.clone(), runner.clone(), dir.path().to_path_buf());
            std::thread::spawn(move || {
                let store = Store::open(&dir).unwrap();
                let (outcome, tally) =
                    run::run_job("e.toml", &point, run::Job::new(&point, 0), &*runner, Some(&store)).expect("the run");
                (outcome.report.trace_hash_text(), tally.executed, tally.reused)
            })
        })
        .collect();
    let done: Vec<_> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    assert_eq!(runner.runs.load(Ordering::SeqCst), 1, "computed once: {done:?}");
    assert_eq!(done.iter().map(|d| (d.1, d.2)).fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1)), (1, 1), "{done:?}");
    assert_eq!(done[0].0, done[1].0, "both have the same run");
    assert!(matches!(store.load(&store.key("sim", &run::Job::new(&point, 0).scenario)), Lookup::Hit(..)));
}

//! The page in a real browser: headless Chromium (Debian's `chromium`)
//! loads it from a `file://` URL, with `#t=SECONDS` moving the slider as a
//! user would (through its input event), and `--dump-dom` gives back what
//! the page drew (`data-*` on the map's canvas). Every test checks that
//! the page logged nothing to the console and caught no script error.
//!
//! Ignored unless asked for (`--include-ignored`; scripts/test does as
//! root, after installing chromium). Run without a browser, they fail
//! saying so rather than pass.

use meshbed_sim::record::Recording;
use meshbed_sim::{Packet, Scenario, Sim};
use scraper::{Html, Selector};
use std::path::{Path, PathBuf};
use std::process::Command;

const BROWSERS: [&str; 4] = ["chromium", "chromium-headless-shell", "chromium-browser", "google-chrome"];

/// `$MESHBED_CHROMIUM`, or the first of [`BROWSERS`] on the `PATH`.
fn chromium() -> PathBuf {
    if let Some(path) = std::env::var_os("MESHBED_CHROMIUM") {
        return PathBuf::from(path);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .flat_map(|dir| BROWSERS.iter().map(move |b| dir.join(b)))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!(
                "needs chromium: none of {BROWSERS:?} on PATH (Debian: apt-get install chromium; or set MESHBED_CHROMIUM)"
            )
        })
}

fn scenario(example: &str, duration_s: f64) -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples").join(example);
    let mut s = Scenario::from_file(&path).unwrap();
    s.duration_s = duration_s;
    s
}

/// Runs `s` recorded and writes its page as `name` in the test's
/// scratch directory.
fn write_page(s: &Scenario, name: &str) -> (PathBuf, Recording) {
    let (report, recording) = Sim::new(s).unwrap().run_recorded(&mut |_| {});
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::write(&path, meshbed_view::page(name, s, &report, &recording)).unwrap();
    (path, recording)
}

/// What the page drew after loading with `#fragment`.
struct Drawn {
    t_s: f64,
    positions: Vec<[f64; 2]>,
    pixels: Vec<[f64; 2]>,
    links: Vec<[u32; 2]>,
    paths: Vec<Option<Vec<u32>>>,
    playing: bool,
}

/// Loads `page#fragment` in headless Chromium (`extra` flags added) and
/// reads what it drew, after checking it logged nothing and raised no error.
fn load(page: &Path, fragment: &str, extra: &[&str]) -> Drawn {
    let profile = page.with_extension(format!("profile-{}", fragment.replace(['=', '&', '.'], "-")));
    let url = format!("file://{}#{fragment}", page.canonicalize().unwrap().display());
    let out = Command::new(chromium())
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1400,1000"])
        .args(["--enable-logging=stderr", "--v=0", "--no-first-run"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg("--dump-dom")
        .arg(&url)
        .output()
        .expect("chromium runs");
    let _ = std::fs::remove_dir_all(&profile);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "chromium failed on {url}: {stderr}");
    // Chromium logs every console message of the page (log, warning,
    // error, uncaught exception) as a CONSOLE line; the page writes none.
    let console: Vec<&str> = stderr.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "console messages on {url}: {console:#?}");
    let dom = Html::parse_document(&String::from_utf8_lossy(&out.stdout));
    let html = dom.select(&Selector::parse("html").unwrap()).next().expect("an <html> element");
    assert_eq!(html.attr("data-errors"), Some("[]"), "script errors on {url}");
    assert_eq!(html.attr("data-ready"), Some("1"), "the page did not finish drawing {url}");
    let map = dom.select(&Selector::parse("canvas#map").unwrap()).next().expect("the map");
    Drawn {
        t_s: map.attr("data-t").unwrap().parse().unwrap(),
        positions: attr_json(map, "data-positions"),
        pixels: attr_json(map, "data-pixels"),
        links: attr_json(map, "data-links"),
        paths: attr_json(map, "data-paths"),
        playing: html.attr("data-playing") == Some("1"),
    }
}

/// The JSON in attribute `name` of `element`.
fn attr_json<T: serde::de::DeserializeOwned>(element: scraper::ElementRef<'_>, name: &str) -> T {
    serde_json::from_str(element.attr(name).unwrap_or_else(|| panic!("no {name} on the map"))).unwrap()
}

/// The recording's links in range at `t_s` (replaying its changes).
fn links_at(rec: &Recording, t_s: f64) -> Vec<[u32; 2]> {
    let k = (t_s / rec.space.step_s + 1e-9).floor() as usize;
    let mut links = std::collections::BTreeSet::new();
    for c in rec.space.links.iter().take_while(|c| c.sample <= k) {
        links.extend(&c.up);
        c.down.iter().for_each(|l| assert!(links.remove(l)));
    }
    links.into_iter().collect()
}

/// Where the simulator's own trajectories have every node at `t_s`.
fn positions_in_run(s: &Scenario, t_s: f64) -> Vec<[f64; 2]> {
    let (medium, _) = meshbed_sim::build_network::<Packet>(s, false).unwrap();
    let at = meshbed_core::Instant::ZERO + meshbed_core::Duration::from_secs_f64(t_s);
    let radios = s.node_radios();
    (0..medium.node_count())
        .map(|i| match medium.links().position_at(i as u32, at) {
            Some(p) => [p.x_m, p.y_m],
            None => [radios[i].x_m, radios[i].y_m],
        })
        .collect()
}

fn assert_near(got: [f64; 2], want: [f64; 2], what: &str) {
    // The page keeps centimetres.
    assert!((got[0] - want[0]).abs() <= 0.011 && (got[1] - want[1]).abs() <= 0.011, "{what}: {got:?} vs {want:?}");
}

#[test]
#[ignore = "needs chromium (Debian package chromium): run scripts/test as root (CI does)"]
fn the_walking_client_is_drawn_where_the_run_has_it_with_its_route() {
    chromium();
    let s = scenario("walk-away.toml", 300.0);
    let (page, rec) = write_page(&s, "walk-away.html");
    // Off the sample grid (step 0.3 s): the page draws between samples.
    let times = [100.05, 250.0];
    let drawn: Vec<Drawn> = times.iter().map(|t| load(&page, &format!("t={t}"), &[])).collect();
    for (d, &t) in drawn.iter().zip(&times) {
        assert_eq!(d.t_s, t, "the slider moved to the fragment's time");
        let run = positions_in_run(&s, t);
        assert_eq!(d.positions.len(), 5);
        for (node, (&got, &want)) in d.positions.iter().zip(&run).enumerate() {
            assert_near(got, want, &format!("node {node} at {t} s"));
        }
        assert_eq!(d.links, links_at(&rec, t), "links at {t} s");
        let path = rec.flows[0].paths.iter().rev().find(|p| p.t_s <= t).expect("a path by then");
        assert_eq!(d.paths, vec![Some(path.nodes.clone())], "route at {t} s");
    }
    // The walker moved on the page, in metres and in pixels; the chain did not.
    assert!(drawn[1].positions[4][0] - drawn[0].positions[4][0] > 100.0);
    assert_ne!(drawn[0].pixels[4], drawn[1].pixels[4]);
    assert_eq!(drawn[0].pixels[..4], drawn[1].pixels[..4]);
    // By 250 s the direct link to the server is gone and the route has relays.
    assert!(drawn[0].links.contains(&[0, 4]) && !drawn[1].links.contains(&[0, 4]));
    assert!(drawn[1].paths[0].as_ref().unwrap().len() > 2);
}

#[test]
#[ignore = "needs chromium (Debian package chromium): run scripts/test as root (CI does)"]
fn random_waypoint_nodes_move_on_the_page_as_in_the_run_and_play_moves_the_time() {
    chromium();
    let s = scenario("aodv-random-waypoint.toml", 60.0);
    let (page, _) = write_page(&s, "aodv-random-waypoint.html");
    let early = load(&page, "t=5", &[]);
    let late = load(&page, "t=50", &[]);
    for (d, t) in [(&early, 5.0), (&late, 50.0)] {
        for (node, (&got, want)) in d.positions.iter().zip(positions_in_run(&s, t)).enumerate() {
            assert_near(got, want, &format!("node {node} at {t} s"));
        }
    }
    let moved = early.positions.iter().zip(&late.positions).filter(|(a, b)| a != b).count();
    assert!(moved >= 20, "{moved} of 30 nodes moved");
    assert!(!early.playing && !late.playing);
    // `&play` starts playing from the fragment's time, error-free, in the
    // browser's virtual time. How far it gets depends on how many frames
    // the browser drew, so only that it did not go back is checked.
    let played = load(&page, "t=10&play", &["--virtual-time-budget=5000"]);
    assert!(played.playing);
    assert!((10.0..=60.0).contains(&played.t_s), "{}", played.t_s);
}

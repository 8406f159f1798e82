#![forbid(unsafe_code)]
//! A simulated run as one HTML page that plays it back (issue 25): the
//! nodes where they were, the links in range, each flow's route as its
//! data took it, route breaks and repairs as marked events, and each
//! flow's goodput over time beside the map, with a time slider and
//! play/pause. `meshbed view SCENARIO` and `meshbed sim --html FILE` write
//! it.
//!
//! The page is self-contained: the run's data is embedded as JSON in a
//! `<script type="application/json">` element and the player (`page.html`,
//! its CSS and JavaScript) is inline, so the file opens from disk with no
//! network access and nothing fetched from elsewhere. What it shows comes
//! from the simulator's recorder (`meshbed_sim::record`: paths, delivery,
//! positions and links, bounded in size) and from the report (each flow's
//! protocol, goodput and route log); the page computes nothing of the
//! model's own.
//!
//! The page exposes what it draws on the map's canvas (`data-t`,
//! `data-positions` in metres, `data-pixels`, `data-links`, `data-paths`),
//! honours `#t=SECONDS` (moves the slider there) and `#…&play`, keeps any
//! script error on `<html data-errors>` and sets `<html data-ready="1">`
//! once drawn: what the headless-browser test reads.

use meshbed_sim::record::{self, Recording};
use meshbed_sim::report::RouteLogEntry;
use meshbed_sim::{Scenario, SimReport};
use serde::Serialize;

/// The player: markup, CSS and JavaScript, with [`DATA_SLOT`] where the
/// run's JSON goes.
const TEMPLATE: &str = include_str!("page.html");
/// Where [`TEMPLATE`] takes the run's data (once).
const DATA_SLOT: &str = "__MESHBED_RUN_DATA__";
/// At most this many route events per flow go into a page (the first
/// ones; the page says how many there were).
pub const MAX_ROUTE_EVENTS: usize = 10_000;

/// What the page is given (serialised into it as JSON).
#[derive(Serialize)]
struct PageData<'a> {
    title: &'a str,
    meshbed_version: &'static str,
    seed: u64,
    trace_hash: String,
    events: u64,
    /// How the routes drawn were found, in words.
    routing: String,
    limits: Limits,
    /// What the report says of each flow, in the recording's order.
    flows: Vec<FlowMeta<'a>>,
    recording: &'a Recording,
}

/// The recorder's bounds, for the page to state.
#[derive(Serialize)]
struct Limits {
    min_position_step_s: f64,
    max_position_samples: usize,
    max_node_samples: usize,
    max_link_checks: u64,
    max_link_entries: usize,
    max_path_changes: usize,
    max_route_events: usize,
}

#[derive(Serialize)]
struct FlowMeta<'a> {
    protocol: &'static str,
    start_s: f64,
    /// When it stopped: a transfer's completion, a stop time, or the run's
    /// end (its start plus the report's duration).
    end_s: f64,
    completed: bool,
    goodput_bps: f64,
    bytes_delivered: u64,
    /// Route failed / re-established notices at the ends and path changes
    /// seen at the destination (empty without routing engines), the first
    /// [`MAX_ROUTE_EVENTS`] of `route_log_total`.
    route_log: &'a [RouteLogEntry],
    route_log_total: usize,
}

/// The page of a run of `scenario` (its `report` and the `recording` of the
/// same run), titled `title` (the scenario file's name).
pub fn page(title: &str, scenario: &Scenario, report: &SimReport, recording: &Recording) -> String {
    let kind = scenario.routing.kind_name();
    let routing = match scenario.routing.is_dynamic() {
        true => format!(
            "{kind}: the next hop each node's engine chose for the flow's latest data packet, cut short where a node \
             held or dropped it or lost the link"
        ),
        false => format!("{kind}: the route table, computed once from the positions at time zero"),
    };
    let flows = report
        .flows
        .iter()
        .map(|f| {
            let log = f.routing.as_ref().map_or(&[][..], |r| &r.route_log);
            FlowMeta {
                protocol: f.protocol.name(),
                start_s: f.start_s,
                end_s: f.start_s + f.duration_s,
                completed: f.completed(),
                goodput_bps: f.goodput_bps,
                bytes_delivered: f.bytes_delivered,
                route_log: &log[..log.len().min(MAX_ROUTE_EVENTS)],
                route_log_total: log.len(),
            }
        })
        .collect();
    let data = PageData {
        title,
        meshbed_version: env!("CARGO_PKG_VERSION"),
        seed: report.seed,
        trace_hash: report.trace_hash_text(),
        events: report.events,
        routing,
        limits: Limits {
            min_position_step_s: record::MIN_POSITION_STEP_S,
            max_position_samples: record::MAX_POSITION_SAMPLES,
            max_node_samples: record::MAX_NODE_SAMPLES,
            max_link_checks: record::MAX_LINK_CHECKS,
            max_link_entries: record::MAX_LINK_ENTRIES,
            max_path_changes: record::MAX_PATH_CHANGES,
            max_route_events: MAX_ROUTE_EVENTS,
        },
        flows,
        recording,
    };
    let json = serde_json::to_string(&data).expect("the page's data is plain numbers, strings and lists");
    TEMPLATE.replacen(DATA_SLOT, &script_safe(&json), 1)
}

/// JSON that cannot end the `<script>` element it sits in: `<`, `>` and
/// `&` only occur inside JSON strings, where `\u003c` (...) means the same
/// character, so a title such as `</script>` stays text.
fn script_safe(json: &str) -> String {
    json.replace('<', "\\u003c").replace('>', "\\u003e").replace('&', "\\u0026")
}

#[cfg(test)]
mod tests {
    use super::*;
    use meshbed_sim::Sim;
    use scraper::{Html, Selector};

    fn walk() -> Scenario {
        let mut s = Scenario::from_toml(include_str!("../../../examples/walk-away.toml")).unwrap();
        s.duration_s = 60.0;
        s
    }

    fn select<'a>(doc: &'a Html, css: &str) -> Vec<scraper::ElementRef<'a>> {
        doc.select(&Selector::parse(css).unwrap()).collect()
    }

    #[test]
    fn the_page_is_html5_with_the_run_embedded_and_nothing_from_elsewhere() {
        let s = walk();
        let (report, recording) = Sim::new(&s).unwrap().run_recorded(&mut |_| {});
        let html = page("walk-away.toml", &s, &report, &recording);
        assert!(TEMPLATE.contains(DATA_SLOT) && !html.contains(DATA_SLOT));
        let doc = Html::parse_document(&html);
        assert!(doc.errors.is_empty(), "HTML parse errors: {:?}", doc.errors);
        // (The parser does report them: an element left open is one.)
        assert!(!Html::parse_document(&html.replacen("</main>", "", 1)).errors.is_empty());
        assert!(html.starts_with("<!DOCTYPE html>"));
        // The data parses back to the run's own numbers.
        let scripts = select(&doc, "script#run-data[type='application/json']");
        assert_eq!(scripts.len(), 1);
        let text: String = scripts[0].text().collect();
        let data: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(data["recording"], serde_json::to_value(&recording).unwrap());
        assert_eq!(data["seed"], 1);
        assert_eq!(data["trace_hash"], report.trace_hash_text());
        assert_eq!(data["flows"][0]["protocol"], "tcp-newreno");
        let log = &report.flows[0].routing.as_ref().unwrap().route_log;
        assert_eq!(data["flows"][0]["route_log"], serde_json::to_value(log).unwrap());
        assert!(data["routing"].as_str().unwrap().starts_with("aodv: "));
        // The player is all there, and nothing is loaded from anywhere.
        for id in ["map", "slider", "play", "speed", "flows-panel", "timeline", "notes"] {
            assert_eq!(select(&doc, &format!("#{id}")).len(), 1, "#{id}");
        }
        for word in ["http://", "https://", "//cdn", "src=", "href=", "@import", "url(", "fetch(", "XMLHttpRequest"] {
            assert!(!html.contains(word), "the page mentions {word:?}");
        }
    }

    /// The page draws every kind of route event a run can log: a kind
    /// without a style stopped the page's script (the symmetry entries did).
    #[test]
    fn every_route_event_kind_has_a_style_on_the_page() {
        let start = TEMPLATE.find("const EVENT_STYLE = {").expect("the style table");
        let table = &TEMPLATE[start..start + TEMPLATE[start..].find("};").unwrap()];
        for e in meshbed_sim::RouteLogEvent::ALL {
            assert!(table.contains(&format!("\"{}\": {{ color:", e.name())), "{e:?} has no style in {table}");
        }
        // (The check does see a missing one.)
        assert!(!table.contains("\"no-such-event\": { color:"));
    }

    #[test]
    fn a_title_cannot_end_the_data_script() {
        let s = Scenario::chain(2, 200.0, 5.0);
        let (report, recording) = Sim::new(&s).unwrap().run_recorded(&mut |_| {});
        let title = "a</script><script>alert(1)</script> & <!-- b";
        let html = page(title, &s, &report, &recording);
        let doc = Html::parse_document(&html);
        assert!(doc.errors.is_empty(), "{:?}", doc.errors);
        // The template's three scripts, no more.
        assert_eq!(select(&doc, "script").len(), 3);
        let text: String = select(&doc, "script#run-data")[0].text().collect();
        let data: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(data["title"], title);
        assert!(data["routing"].as_str().unwrap().starts_with("shortest-path: "));
    }
}

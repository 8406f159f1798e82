//! The stack topology (seed 001 §5.4, Fig. 5.8): rows of one-hop links,
//! the middle row's flow numbered last, and its keys checked by name.

use meshbed_sim::scenario::{stack_rows, Scenario, Topology};

fn file(topology: &str, flows: &str) -> String {
    format!("duration_s = 2\n[topology]\nkind = \"stack\"\n{topology}{flows}")
}

const THREE_FLOWS: &str = "[[flows]]\nsrc = 0\ndst = 1\n[[flows]]\nsrc = 2\ndst = 3\n[[flows]]\nsrc = 4\ndst = 5\n";

fn positions(s: &Scenario) -> Vec<(f64, f64)> {
    s.node_radios().iter().map(|n| (n.x_m, n.y_m)).collect()
}

fn err_of(text: &str) -> String {
    Scenario::from_toml(text).unwrap_err().in_file("s.toml").to_string()
}

#[test]
fn three_rows_put_the_middle_flow_last() {
    let s = Scenario::from_toml(&file("flows = 3\nrow_spacing_m = 30\nlink_m = 15\n", THREE_FLOWS)).unwrap();
    assert_eq!(s.topology, Topology::Stack { flows: 3, row_spacing_m: 30.0, link_m: 15.0 });
    assert_eq!(s.node_count(), 6);
    // Flow 1 on the row at y = 0, flow 2 on the far row (60 m), flow 3 in
    // the middle (30 m); senders at x = 0, receivers at the link's length.
    assert_eq!(positions(&s), [(0.0, 0.0), (15.0, 0.0), (0.0, 60.0), (15.0, 60.0), (0.0, 30.0), (15.0, 30.0)]);
}

#[test]
fn five_rows_keep_the_outer_rows_in_order_then_the_middle() {
    assert_eq!(stack_rows(5).collect::<Vec<_>>(), [0, 1, 3, 4, 2]);
    assert_eq!(stack_rows(3).collect::<Vec<_>>(), [0, 2, 1]);
    let s = Scenario::from_toml(&file("flows = 5\nrow_spacing_m = 10\nlink_m = 7.5\n", THREE_FLOWS)).unwrap();
    let ys: Vec<f64> = positions(&s).iter().map(|p| p.1).collect();
    assert_eq!(ys, [0.0, 0.0, 10.0, 10.0, 30.0, 30.0, 40.0, 40.0, 20.0, 20.0]);
    let xs: Vec<f64> = positions(&s).iter().map(|p| p.0).collect();
    assert_eq!(xs, [0.0, 7.5, 0.0, 7.5, 0.0, 7.5, 0.0, 7.5, 0.0, 7.5]);
}

#[test]
fn mistakes_name_the_stack_key() {
    let cases = [
        ("flows = 4\nrow_spacing_m = 30\nlink_m = 15\n", "topology.flows = 4: expected an odd number of flows from 3"),
        ("flows = 1\nrow_spacing_m = 30\nlink_m = 15\n", "topology.flows = 1: expected an odd number of flows from 3"),
        (
            "flows = 5001\nrow_spacing_m = 30\nlink_m = 15\n",
            "topology.flows = 5001: expected an odd number of flows from 3 to 5000",
        ),
        ("flows = 3\nrow_spacing_m = 0\nlink_m = 15\n", "topology.row_spacing_m = 0"),
        ("flows = 3\nrow_spacing_m = 30\nlink_m = -5\n", "topology.link_m = -5"),
        ("flows = 3\nrow_spacing_m = 30\nlink_m = 20000\n", "topology.link_m = 20000"),
        ("flows = 3\nrow_spacing_m = 30\n", "topology.link_m = (missing): expected a distance in metres"),
        (
            "flows = 3\nrow_spacing_m = \"wide\"\nlink_m = 15\n",
            "topology.row_spacing_m = \"wide\": expected a distance in metres",
        ),
        ("flows = 3.5\nrow_spacing_m = 30\nlink_m = 15\n", "topology.flows = 3.5: expected a whole, odd number"),
        (
            "flows = 3\nrow_spacing_m = 30\nlink_m = 15\nspacing_m = 30\n",
            "topology.spacing_m: unknown key for kind = \"stack\"; expected flows, row_spacing_m, link_m",
        ),
    ];
    for (topology, expected) in cases {
        let e = err_of(&file(topology, THREE_FLOWS));
        // `s.toml: ` or, for a misspelt key, `s.toml:LINE:COLUMN: `.
        assert!(e.starts_with("s.toml:") && e.contains(expected), "{topology:?}: {e}");
    }
    // A just-valid stack: the smallest positive distances and the most flows.
    assert!(Scenario::from_toml(&file("flows = 999\nrow_spacing_m = 0.001\nlink_m = 0.001\n", THREE_FLOWS)).is_ok());
    // A flow to a node the stack does not have.
    let e = err_of(&file("flows = 3\nrow_spacing_m = 30\nlink_m = 15\n", "[[flows]]\nsrc = 0\ndst = 6\n"));
    assert!(e.contains("flows[0].dst = 6"), "{e}");
}

#[test]
fn a_stack_round_trips_through_toml() {
    let s = Scenario::from_toml(&file("flows = 3\nrow_spacing_m = 45\nlink_m = 12.5\n", THREE_FLOWS)).unwrap();
    let text = toml::to_string(&s).unwrap();
    assert!(text.contains("kind = \"stack\""), "{text}");
    assert_eq!(Scenario::from_toml(&text).unwrap(), s);
}

//! The question against today's TCP (issue 27): the thesis' testbed
//! chains with ATP beside TCP NewReno (the 2003 baseline), TCP with SACK
//! (RFC 2018/6675), CUBIC over SACK (Linux's default) and BBR v1 (Linux's
//! `tcp_bbr`, paced, with SACK and RACK-TLP), with MAC retries
//! off (the thesis' setting, seed 001 §4.2) and on (802.11's default of 6),
//! every protocol compared with `tcp-cubic` over the same seeds.

use super::{ints, protocols, testbed_a_radio, testbed_b_radio, testbed_chain};
use super::{TESTBED_A_SPACING_M, TESTBED_B_SPACING_M};
use crate::spec::{Experiment, ExperimentConfig};
use meshbed_proto::Protocol;

pub const A_SINGLE: &str = "modern-tcp-a-single";
pub const A_FIVE: &str = "modern-tcp-a-five";
pub const B_SINGLE: &str = "modern-tcp-b-single";
pub const B_FIVE: &str = "modern-tcp-b-five";

/// What is compared: the thesis' two ATPs, the 2003 baseline, the two
/// steps to today's TCP (SACK recovery, then CUBIC's window on top), and
/// BBR, which reads neither loss nor a window but a model of the path.
pub const PROTOCOLS: [Protocol; 6] = [
    Protocol::AtpDefault,
    Protocol::AtpAdaptive,
    Protocol::TcpNewReno,
    Protocol::TcpSack,
    Protocol::TcpCubic,
    Protocol::TcpBbr,
];

/// The reference every other protocol is compared with, run by run.
pub const REFERENCE: &str = "tcp-cubic";

/// Retry limits swept: none (the thesis) and 802.11's default.
pub const RETRY_LIMITS: [i64; 2] = [0, 6];

/// Twenty seeds: a run costs well under a second, and the verdicts need
/// intervals over at least twenty paired seeds.
pub const REPETITIONS: u32 = 20;

pub fn experiment(name: &str) -> Option<Experiment> {
    let (radio, spacing_m, flows, testbed) = match name {
        A_SINGLE => (testbed_a_radio(), TESTBED_A_SPACING_M, 1, "A"),
        A_FIVE => (testbed_a_radio(), TESTBED_A_SPACING_M, 5, "A"),
        B_SINGLE => (testbed_b_radio(), TESTBED_B_SPACING_M, 1, "B"),
        B_FIVE => (testbed_b_radio(), TESTBED_B_SPACING_M, 5, "B"),
        _ => return None,
    };
    let what =
        if flows == 1 { "one 2 MB transfer".to_string() } else { format!("{flows} simultaneous 2 MB transfers") };
    Some(Experiment::new(
        &testbed_chain(radio, spacing_m, flows),
        ExperimentConfig {
            name: name.into(),
            description: format!(
                "Against today's TCP: {what} over 1-6 hops of testbed {testbed}, MAC retries 0 and 6; ATP, TCP NewReno, SACK and BBR, each compared with CUBIC over SACK on the same seeds."
            ),
            repetitions: REPETITIONS,
            sweep: vec![ints("hops", 1..=6), ints("radio.mac.short_retry_limit", RETRY_LIMITS), protocols(&PROTOCOLS)],
            x_axis: Some("hops".into()),
            series_axis: Some("protocol".into()),
            window_s: None,
            batch_means: None,
            compare_against: Some(REFERENCE.into()),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_is_a_valid_file_of_seventy_two_points_compared_with_cubic() {
        for name in [A_SINGLE, A_FIVE, B_SINGLE, B_FIVE] {
            let e = experiment(name).unwrap();
            let text = e.to_toml();
            let back = Experiment::from_toml(&text, name).unwrap_or_else(|err| panic!("{name}: {err}"));
            assert_eq!(back.point_count(name).unwrap(), 6 * 2 * 6, "{name}");
            assert_eq!(back.config.compare_against.as_deref(), Some("tcp-cubic"));
            assert_eq!(back.config.repetitions, 20);
            let flows = back.points(name).unwrap()[0].scenario.flow_count();
            assert_eq!(flows, if name.ends_with("five") { 5 } else { 1 }, "{name}");
        }
        assert!(experiment("modern-tcp-c-single").is_none());
    }
}

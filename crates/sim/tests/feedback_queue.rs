//! The interface queue's treatment of transport feedback (seed 000 §V.A.2:
//! feedback clusters "because we do not use a priority queue for feedback
//! packets") and the driver's batched completion interrupts (seed 001 §3.1,
//! appendix A.6).

use meshbed_proto::Protocol;
use meshbed_radio::BatchedCompletion;
use meshbed_sim::scenario::{FlowSpec, Scenario};

/// A transfer from node 0 to node 3 of a 3-hop chain, and a TCP transfer
/// the other way whose window keeps data queued at the receiver's node,
/// where the feedback starts. (Saturated UDP would not do: it keeps its
/// queue exactly full, and a drop-tail queue drops feedback at a full
/// queue whatever its priority.)
fn feedback_against_reverse_data(protocol: Protocol, feedback_priority: bool) -> Scenario {
    let mut s = Scenario::chain(3, 200.0, 30.0);
    s.radio.mac.feedback_priority = feedback_priority;
    let reverse = FlowSpec::transfer(3, 0, Protocol::TcpNewReno, 4_000_000);
    s.flows = vec![FlowSpec::transfer(0, 3, protocol, 1_000_000), reverse];
    s.validate().expect("valid scenario");
    s
}

#[test]
fn with_a_priority_queue_feedback_overtakes_queued_data() {
    for protocol in [Protocol::AtpAggressive, Protocol::TcpNewReno] {
        let timing = |priority: bool| {
            let r = meshbed_sim::run(&feedback_against_reverse_data(protocol, priority)).unwrap();
            let f = &r.flows[0];
            assert!(f.verified(), "{protocol}: {:?}", f.error());
            f.transfer
                .as_ref()
                .and_then(|t| t.feedback.clone())
                .unwrap_or_else(|| panic!("{protocol}: no feedback reached the sender"))
        };
        let (fifo, first) = (timing(false), timing(true));
        // Without priority a feedback packet waits behind the reverse
        // flow's data queued at the receiver's node and at the relays;
        // with it, behind at most the frame on the air.
        assert!(
            first.mean_delay_s < fifo.mean_delay_s,
            "{protocol}: feedback delay {:.2} ms with priority, {:.2} ms without",
            first.mean_delay_s * 1e3,
            fifo.mean_delay_s * 1e3
        );
        // ATP's feedback, paced by its epoch, no longer arrives in clusters
        // (TCP's ACKs leave in bursts already: sent_gap_cv > 1).
        if protocol.is_atp() {
            assert!(first.clustered_share < fifo.clustered_share, "{first:?} vs {fifo:?}");
        }
    }
}

#[test]
fn feedback_priority_is_off_by_default_and_changes_nothing_without_feedback() {
    assert!(!Scenario::chain(3, 200.0, 1.0).radio.mac.feedback_priority);
    // UDP carries no feedback: the switch changes not one event.
    let udp = |priority: bool| {
        let mut s = Scenario::chain(3, 200.0, 2.0);
        s.radio.mac.feedback_priority = priority;
        s.flows = vec![
            FlowSpec { src: 0, dst: 3, ..FlowSpec::default() },
            FlowSpec { src: 3, dst: 0, ..FlowSpec::default() },
        ];
        meshbed_sim::run(&s).unwrap().trace_hash
    };
    assert_eq!(udp(false), udp(true));
}

fn atp_chain(batch: Option<u32>) -> Option<u64> {
    let mut s = Scenario::chain(3, 200.0, 20.0);
    s.flows = vec![FlowSpec::transfer(0, 3, Protocol::AtpAdaptive, 500_000)];
    s.radio.mac.batched_completion = batch.map(|max_frames| BatchedCompletion { max_frames });
    s.validate().expect("valid scenario");
    let r = meshbed_sim::run(&s).unwrap();
    assert!(r.flows[0].completed(), "{:?}", r.flows[0].error());
    r.trace_hash
}

/// The batching axis of the `testbed-a-batching` built-in switches batching
/// "off" with one frame per interrupt: every frame then raises its own
/// interrupt, exactly as without the table.
#[test]
fn batching_of_one_frame_is_no_batching() {
    let off = atp_chain(None);
    assert_eq!(atp_chain(Some(1)), off);
    assert_ne!(atp_chain(Some(4)), off, "batches of four leave frames untimed, so D and the run change");
}

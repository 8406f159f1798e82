//! Rate control in the MAC (issue 13), through the medium's public event
//! interface: a link whose SNR only carries the low rates converges to a
//! working rate under ARF, AARF and Minstrel, and fixed-rate nodes behave
//! exactly as without rate control.

use meshbed_core::{EventQueue, Instant};
use meshbed_radio::{
    Addr, ErrorModel, Fading, Indication, LinkBudget, LinkRates, Medium, NodeId, NodeRadio, Payload, RadioConfig,
    RadioEvent, RateControl, Scheduler, Standard,
};

#[derive(Clone, Debug, PartialEq)]
struct Datagram(u32);

impl Payload for Datagram {
    fn msdu_bytes(&self) -> u32 {
        self.0
    }
}

struct Q(EventQueue<RadioEvent>);

impl Scheduler for Q {
    fn schedule(&mut self, at: Instant, event: RadioEvent) {
        self.0.schedule(at, event);
    }
}

const BYTES: u32 = 1000;

/// Every indication as `(time ns, kind, node, detail)`: 0 delivery (detail:
/// the transmitter), 1 report (retries), 2 drop, 3 dequeued.
type Trace = Vec<(u64, u8, NodeId, u64)>;

/// Keeps `senders` (source, destination) saturated for `seconds`; returns
/// its [`Trace`] and the medium.
fn saturated_run(
    cfg: &RadioConfig,
    radios: &[NodeRadio],
    senders: &[(NodeId, NodeId)],
    seconds: u64,
) -> (Trace, Medium<Datagram>) {
    let mut m: Medium<Datagram> = Medium::new(cfg, radios, 3).expect("valid config");
    let mut q = Q(EventQueue::new());
    let mut trace = Vec::new();
    let mut now = Instant::ZERO;
    let mut refill: Vec<NodeId> = Vec::new();
    for &(src, dst) in senders {
        for _ in 0..=m.queue_capacity() {
            m.enqueue(now, src, Addr::Unicast(dst), Datagram(BYTES), &mut q);
        }
    }
    let end = Instant::from_nanos(seconds * 1_000_000_000);
    loop {
        while let Some(ind) = m.poll_indication() {
            let t = now.as_nanos();
            trace.push(match ind {
                Indication::Deliver { node, from, .. } => (t, 0, node, u64::from(from)),
                Indication::TxReport(r) => (t, 1, r.node, u64::from(r.retries)),
                Indication::Drop { node, .. } => (t, 2, node, 0),
                Indication::Dequeued { node } => {
                    refill.push(node);
                    (t, 3, node, 0)
                }
            });
        }
        for node in refill.drain(..) {
            let &(_, dst) = senders.iter().find(|s| s.0 == node).expect("only senders dequeue");
            m.enqueue(now, node, Addr::Unicast(dst), Datagram(BYTES), &mut q);
        }
        match q.0.peek_time() {
            Some(at) if at <= end => {
                let (at, ev) = q.0.pop().expect("peeked");
                now = at;
                m.handle(at, ev, &mut q);
            }
            _ => break,
        }
    }
    (trace, m)
}

/// 802.11b with threshold reception and no fading: a frame at a rate is
/// received iff the SNR reaches the rate's threshold.
fn b_config(rate_control: RateControl) -> RadioConfig {
    let mut cfg = RadioConfig {
        standard: Standard::B,
        data_rate_kbps: 11_000,
        error_model: ErrorModel::Threshold,
        fading: Fading::None,
        tx_range_m: None,
        cs_range_m: None,
        rx_sensitivity_dbm: Some(-99.0),
        cs_threshold_dbm: Some(-100.0),
        ..RadioConfig::default()
    };
    cfg.mac.rate_control = rate_control;
    cfg
}

/// The first distance (whole metres) at which 2 Mbit/s is decodable and
/// 5.5 Mbit/s is not: 11 and 5.5 Mbit/s fail there, 1 and 2 work.
fn two_mbit_distance_m(cfg: &RadioConfig) -> f64 {
    let decodes = |d: f64, rate: u32| {
        let a = NodeRadio { data_rate_kbps: Some(rate), ..NodeRadio::at(0.0, 0.0) };
        LinkBudget::new(cfg, &[a, NodeRadio::at(d, 0.0)], 1).expect("valid").can_decode(0, 1)
    };
    (1..100_000)
        .map(f64::from)
        .find(|&d| decodes(d, 2_000) && !decodes(d, 5_500))
        .expect("a distance where only the low rates work")
}

fn link(hist: &[LinkRates], tx: NodeId, rx: NodeId) -> &LinkRates {
    hist.iter().find(|l| l.tx == tx && l.rx == rx).expect("the link has a histogram")
}

#[test]
fn a_link_that_only_carries_low_rates_converges_to_them_under_every_algorithm() {
    let d = two_mbit_distance_m(&b_config(RateControl::Fixed));
    let radios = [NodeRadio::at(0.0, 0.0), NodeRadio::at(d, 0.0)];
    let delivered = |trace: &[(u64, u8, NodeId, u64)]| trace.iter().filter(|e| e.1 == 0 && e.2 == 1).count();

    // Fixed at 11 Mbit/s: nothing gets through.
    let (trace, m) = saturated_run(&b_config(RateControl::Fixed), &radios, &[(0, 1)], 2);
    assert_eq!(delivered(&trace), 0);
    assert!(m.counters(0).drop_retry_limit > 0);
    assert!(m.rate_histogram().is_empty(), "no histogram without rate control");

    // With and without RTS/CTS (the RTS goes at the basic rate below the
    // chosen DATA rate, so it gets through either way).
    let runs = [RateControl::Arf, RateControl::Aarf, RateControl::Minstrel]
        .into_iter()
        .flat_map(|kind| [(kind, None), (kind, Some(0))]);
    for (kind, rts) in runs {
        let mut cfg = b_config(kind);
        cfg.mac.rts_threshold_bytes = rts;
        let (trace, m) = saturated_run(&cfg, &radios, &[(0, 1)], 2);
        let kind = (kind, rts);
        let hist = m.rate_histogram();
        let l = link(&hist, 0, 1);
        assert_eq!(l.rate_control, kind.0);
        let ok = |rate: u32| l.rates.iter().find(|c| c.rate_kbps == rate).map_or(0, |c| c.successes);
        let total: u64 = l.rates.iter().map(|c| c.successes).sum();
        // What the histogram says was acknowledged is what the MAC counted.
        assert_eq!(total, m.counters(0).acked, "{kind:?}");
        assert_eq!(ok(5_500) + ok(11_000), 0, "{kind:?}: {l:?}");
        assert!(ok(2_000) * 10 > total * 9, "{kind:?}: most frames at 2 Mbit/s: {l:?}");
        // The flow delivers: at 2 Mbit/s a 1000-byte frame takes under 5 ms
        // with its ACK and backoff, so 2 s carry hundreds.
        assert!(delivered(&trace) > 200, "{kind:?}: {} delivered", delivered(&trace));
        // The failed rates were tried, and every attempt is accounted for.
        let attempts: u64 = l.rates.iter().map(|c| c.attempts).sum();
        assert!(l.rates.iter().any(|c| c.rate_kbps == 11_000 && c.attempts > 0), "{kind:?}");
        // (The histogram counts attempts whose outcome is known: the one on
        // the air when the run stops is not.)
        let sent = m.counters(0).data_tx_attempts;
        assert!(attempts == sent || attempts + 1 == sent, "{kind:?}: {attempts} of {sent}");
    }
}

#[test]
fn fixed_rate_nodes_behave_the_same_whether_or_not_another_node_runs_rate_control() {
    // Two fixed-rate senders contending with RTS/CTS for one receiver, and a
    // fourth node that sends nothing. In the second run that node runs
    // Minstrel, so the medium keeps rate state and histograms for every
    // node; nothing the fixed-rate nodes do may change.
    let mut cfg = RadioConfig::default();
    cfg.mac.rts_threshold_bytes = Some(500);
    let at = |x| NodeRadio::at(x, 0.0);
    let plain = [at(0.0), at(100.0), at(200.0), at(300.0)];
    let mut with_minstrel = plain.clone();
    with_minstrel[3].rate_control = Some(RateControl::Minstrel);
    for senders in [&[(0, 1)][..], &[(0, 1), (2, 1)][..]] {
        let (a, ma) = saturated_run(&cfg, &plain, senders, 1);
        let (b, mb) = saturated_run(&cfg, &with_minstrel, senders, 1);
        assert!(a.iter().filter(|e| e.1 == 0).count() > 100);
        assert_eq!(a, b);
        for n in 0..4 {
            assert_eq!(ma.counters(n), mb.counters(n));
        }
        assert!(ma.rate_histogram().is_empty());
        let hist = mb.rate_histogram();
        assert_eq!(hist.len(), senders.len());
        for &(tx, rx) in senders {
            let l = link(&hist, tx, rx);
            assert_eq!((l.rate_control, l.rates.len(), l.rates[0].rate_kbps), (RateControl::Fixed, 1, 24_000));
            assert_eq!(l.rates[0].successes, mb.counters(tx).acked);
        }
    }
}

#[test]
fn the_rate_chosen_sets_the_airtime_and_the_ack_rate() {
    // ARF starts at the highest rate; its first frame over a clean short
    // link goes at 11 Mbit/s, with the ACK at 2 Mbit/s, so the first
    // delivery lands at DIFS + backoff + 1036 B at 11 Mbit/s, i.e. well
    // before a 2 Mbit/s frame (4336 µs of airtime alone) could end.
    let radios = [NodeRadio::at(0.0, 0.0), NodeRadio::at(5.0, 0.0)];
    let (trace, m) = saturated_run(&b_config(RateControl::Arf), &radios, &[(0, 1)], 1);
    let first = trace.iter().find(|e| e.1 == 0).expect("a delivery").0;
    let t = Standard::B.timing();
    let at_11 = t.difs().as_nanos()
        + t.slot.as_nanos() * u64::from(t.cw_min)
        + Standard::B.frame_duration(BYTES + 36, 11_000).as_nanos();
    assert!(first <= at_11 + 1_000, "first delivery at {first} ns");
    let hist = m.rate_histogram();
    let l = link(&hist, 0, 1);
    assert_eq!(l.rates.len(), 1, "a clean link never leaves the top rate: {l:?}");
    assert_eq!(l.rates[0].rate_kbps, 11_000);
}

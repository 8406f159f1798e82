//! The one loop that drives the radio model, in the simulator and in the
//! emulator alike.
//!
//! A [`Network`] is the 802.11 [`Medium`], its event queue and every node's
//! delay averages ([`Relay`], seed 001 §3.1). [`Driver::run`] pops events in
//! `(time, sequence)` order, hands radio events to the medium and the
//! world's own events (traffic sources, transport timers) to a [`Host`],
//! feeds every tx report to the node's relays, and hands the other
//! indications (deliveries, dequeues, drops) to the host. Between turns it
//! asks the host's [`Clock`] to wait for the next deadline:
//!
//! * [`VirtualClock`] jumps straight to it — the simulator, as fast as
//!   possible, a pure function of the scenario and its seed;
//! * the emulator's wall clock (`meshbed_emu::realtime::TapBackend`) sleeps
//!   until it or until a node's stack sends a frame, which the host hands to
//!   the medium in [`Host::on_turn`].
//!
//! The model never sees the clock: every event runs at its own scheduled
//! time, so a late wake-up in the emulator delays what the stacks see but
//! never changes the model's behaviour (STYLE.md, "Time, randomness,
//! determinism"; ns-3's `DefaultSimulatorImpl` vs `RealtimeSimulatorImpl`).

use meshbed_core::{EventQueue, Instant, TimerId, TraceHash};
use meshbed_proto::relay::{Relay, RelayConfig};
use meshbed_radio::{Addr, AirEvent, Indication, Medium, NodeId, Payload, RadioEvent, RadioTimer, Scheduler};
use std::io;

/// How often [`Host::progress`] is called: a few times per wall second at
/// the simulator's speed of millions of events per second. A power of two:
/// a mask instead of a division on every event.
pub const PROGRESS_EVERY_EVENTS: u64 = 1 << 18;

/// How many events of a frame's batch ahead the driver asks for a
/// receiver's state, and for the signals on the air there. Far enough for
/// memory to answer while the events between run (one event takes about
/// as long as a fetch from memory); in the 6,400-node grid 3 to 8 ahead ran
/// alike, 1 ahead slower, and the signals (whose address follows from the
/// node's number) 2 or 4 ahead alike (docs/SPEED.md).
const PREFETCH_NODE_AHEAD: usize = 4;
const PREFETCH_SIGNALS_AHEAD: usize = 2;

/// A clock the driver waits on.
pub trait Clock {
    /// A clock that only jumps to the deadlines it is given (no wall time
    /// passes while it waits).
    const VIRTUAL: bool = false;
    /// The current time (ns since the run began).
    fn now(&mut self) -> Instant;
    /// Waits until `deadline` (`None`: until input), or until input from
    /// outside the model arrives, whichever comes first. May return early.
    fn wait(&mut self, deadline: Option<Instant>) -> io::Result<()>;
}

/// A clock that jumps to the next deadline: the loop as fast as possible.
#[derive(Clone, Copy, Debug, Default)]
pub struct VirtualClock {
    now: Instant,
}

impl VirtualClock {
    /// Moves the clock to `to` if that is later (input scheduled by a test).
    pub fn advance_to(&mut self, to: Instant) {
        self.now = self.now.max(to);
    }
}

impl Clock for VirtualClock {
    const VIRTUAL: bool = true;
    fn now(&mut self) -> Instant {
        self.now
    }
    fn wait(&mut self, deadline: Option<Instant>) -> io::Result<()> {
        match deadline {
            Some(d) => {
                self.advance_to(d);
                Ok(())
            }
            None => Err(io::Error::other("virtual clock: no event, no input and no end: nothing will ever happen")),
        }
    }
}

/// The relay parameters of one class of traffic (the simulator keeps one
/// class per distinct ATP preset and packet size; the emulator one), before
/// the radio-dependent prior delay is filled in per node.
#[derive(Clone, Debug, PartialEq)]
pub struct RelayClass {
    pub config: RelayConfig,
    /// The full data packet (MSDU) whose service time is the node's delay
    /// before its first tx report.
    pub packet_bytes: u32,
}

/// An event in the driver's queue: the radio model's, or the host's.
#[derive(Copy, Clone, Debug)]
enum Event<A> {
    Radio(RadioEvent),
    Host(A),
}

struct QueueScheduler<'a, A>(&'a mut EventQueue<Event<A>>);

impl<A> Scheduler for QueueScheduler<'_, A> {
    #[inline]
    fn schedule(&mut self, at: Instant, event: RadioEvent) {
        self.0.schedule(at, Event::Radio(event));
    }
    #[inline]
    fn schedule_batch(&mut self, events: impl Iterator<Item = (Instant, RadioEvent)>) {
        self.0.schedule_batch(events.map(|(at, event)| (at, Event::Radio(event))));
    }
    /// The radio's timers are the queue's first: `RadioTimer::index`.
    #[inline]
    fn set_timer(&mut self, at: Instant, event: RadioEvent) {
        match event.timer() {
            Some(timer) => self.0.set_timer(TimerId(timer.index(event.node())), at, Event::Radio(event)),
            None => self.schedule(at, event),
        }
    }
    #[inline]
    fn cancel_timer(&mut self, node: NodeId, timer: RadioTimer) {
        self.0.cancel_timer(TimerId(timer.index(node)));
    }
}

/// The radio model, its event queue and the nodes' relays: what a host may
/// act on while it handles an event.
pub struct Network<P: Payload, A> {
    medium: Medium<P>,
    queue: EventQueue<Event<A>>,
    /// `relays[node][class]`: each fed the node's every tx report.
    relays: Vec<Vec<Relay>>,
}

impl<P: Payload, A> Network<P, A> {
    /// `classes`: the relay classes every node keeps (at least one for the
    /// delay to be known). Each node's relays assume, before the node's
    /// first tx report, the service time of one of the class's packets on an
    /// idle channel, so that a fresh path does not start ATP at its rate cap.
    pub fn new(medium: Medium<P>, classes: &[RelayClass]) -> Self {
        let relays = (0..medium.node_count() as NodeId)
            .map(|node| {
                classes
                    .iter()
                    .map(|c| {
                        let prior_delay = medium.one_frame_service_time(node, c.packet_bytes);
                        Relay::new(RelayConfig { prior_delay, ..c.config.clone() })
                    })
                    .collect()
            })
            .collect();
        Network { medium, queue: EventQueue::new(), relays }
    }

    pub fn medium(&self) -> &Medium<P> {
        &self.medium
    }

    /// Has the medium report every frame sent and heard to
    /// [`Host::on_air`] (a capture); off by default.
    pub fn set_observing(&mut self, on: bool) {
        self.medium.set_observing(on);
    }

    /// Schedules a host event (never before the queue's current time).
    pub fn schedule(&mut self, at: Instant, event: A) {
        self.queue.schedule(at, Event::Host(event));
    }

    /// Sets the host's timer `id` (numbered by the host) to deliver
    /// `event` at `at`, in place of the event it held. Use it for an event
    /// that a later setting makes stale: the stale one never runs (and is
    /// neither counted nor traced).
    pub fn set_timer(&mut self, id: TimerId, at: Instant, event: A) {
        // After the radio's timers (`QueueScheduler::set_timer`).
        let radio_timers = RadioTimer::PER_NODE * self.medium.node_count() as u32;
        self.queue.set_timer(TimerId(radio_timers + id.0), at, Event::Host(event));
    }

    /// The time of the event being handled (or the last one).
    pub fn now(&self) -> Instant {
        self.queue.now()
    }

    /// Hands `payload` to `node`'s MAC for `dest`; `false` if its queue was full.
    pub fn enqueue(&mut self, now: Instant, node: NodeId, dest: Addr, payload: P) -> bool {
        self.medium.enqueue(now, node, dest, payload, &mut QueueScheduler(&mut self.queue))
    }

    /// `node`'s relays, one per class.
    pub fn relays(&self, node: NodeId) -> &[Relay] {
        &self.relays[node as usize]
    }
    pub fn relays_mut(&mut self, node: NodeId) -> &mut [Relay] {
        &mut self.relays[node as usize]
    }
}

/// What runs around the medium, with its clock: the simulator's traffic and
/// transports on a [`VirtualClock`], or the emulator's TAP devices on the
/// wall clock.
pub trait Host<P: Payload>: Clock {
    /// The host's own events (kept in the same queue as the radio's, so that
    /// one `(time, sequence)` order covers both).
    type Event: Copy;
    /// A number that identifies `event` in the run's trace hash.
    fn trace_code(event: &Self::Event) -> u64;
    /// One of the host's events is due.
    fn on_event(&mut self, net: &mut Network<P, Self::Event>, now: Instant, event: Self::Event) -> io::Result<()>;
    /// The medium delivered, dequeued or dropped a frame (tx reports go to
    /// the relays and are not passed on).
    fn on_indication(&mut self, net: &mut Network<P, Self::Event>, now: Instant, ind: Indication<P>) -> io::Result<()>;
    /// A frame was sent or heard (only while the network is observing:
    /// [`Network::set_observing`]).
    fn on_air(&mut self, _event: AirEvent<P>) -> io::Result<()> {
        Ok(())
    }
    /// Whether [`Host::on_turn`] brings input from outside the model. A host
    /// without any, on a virtual clock, has nothing to do between events:
    /// the driver then runs every event up to the end in one go, which is
    /// the same run with less work per event.
    const TAKES_INPUT: bool = true;
    /// Once per turn, after the events due: input from outside the model
    /// (the emulator's frames), handed to the medium at `now`. Returns a
    /// time the loop should wake up at even without an event.
    fn on_turn(&mut self, _net: &mut Network<P, Self::Event>, _now: Instant) -> io::Result<Option<Instant>> {
        Ok(None)
    }
    /// Whether to stop before the next turn (Ctrl-C in the emulator).
    fn stop(&mut self) -> bool {
        false
    }
    /// An event scheduled at `at` runs when the clock says `now` (lateness).
    fn observe_event(&mut self, _at: Instant, _now: Instant) {}
    /// Every [`PROGRESS_EVERY_EVENTS`] events (a progress bar; it cannot
    /// change the run).
    fn progress(&mut self, _now: Instant) {}
}

/// The network plus what the loop counts.
pub struct Driver<P: Payload, A> {
    pub net: Network<P, A>,
    events: u64,
    trace: TraceHash,
}

impl<P: Payload, A: Copy> Driver<P, A> {
    pub fn new(net: Network<P, A>) -> Self {
        Driver { net, events: 0, trace: TraceHash::default() }
    }

    /// Events executed so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// FNV-1a hash of the event trace so far (time, kind, node of every event).
    pub fn trace_hash(&self) -> u64 {
        self.trace.finish()
    }

    /// Runs turns until `host.stop()`, or until the clock reaches `until`
    /// with every event due by then run (events at exactly `until` run).
    pub fn run<H: Host<P, Event = A>>(&mut self, host: &mut H, until: Option<Instant>) -> io::Result<()> {
        let prefetch = self.net.medium.prefetch_pays();
        loop {
            if host.stop() {
                return Ok(());
            }
            let now = host.now();
            let horizon = match (H::VIRTUAL && !H::TAKES_INPUT, until) {
                (true, Some(u)) => u,
                (_, u) => u.map_or(now, |u| now.min(u)),
            };
            // Every event due, each at its own scheduled time.
            while let Some((at, event)) = self.net.queue.pop_due(horizon) {
                if prefetch {
                    // A frame's next arrivals, most often the next events:
                    // their receivers' state fetched while these run.
                    if let Some(Event::Radio(next)) = self.net.queue.next_of_batch(PREFETCH_SIGNALS_AHEAD) {
                        self.net.medium.prefetch_signals(next.node());
                    }
                    if let Some(Event::Radio(next)) = self.net.queue.next_of_batch(PREFETCH_NODE_AHEAD) {
                        self.net.medium.prefetch(next.node());
                    }
                }
                self.events += 1;
                if self.events & (PROGRESS_EVERY_EVENTS - 1) == 0 {
                    host.progress(at);
                }
                host.observe_event(at, now);
                self.trace.write_u64(at.as_nanos());
                match event {
                    Event::Radio(ev) => {
                        self.trace.write_u64(ev.code() << 32 | ev.node() as u64);
                        self.net.medium.handle(at, ev, &mut QueueScheduler(&mut self.net.queue));
                    }
                    Event::Host(ev) => {
                        self.trace.write_u64(H::trace_code(&ev));
                        host.on_event(&mut self.net, at, ev)?;
                    }
                }
                self.drain(host, at)?;
            }
            if until.is_some_and(|u| now >= u) {
                return Ok(());
            }
            // Input from outside, at the current time: never before the
            // last event run, so the model's time does not go backwards.
            let at = now.max(self.net.queue.now());
            let wake = host.on_turn(&mut self.net, at)?;
            self.drain(host, at)?;
            let deadline = [self.net.queue.peek_time(), until, wake].into_iter().flatten().min();
            host.wait(deadline)?;
        }
    }

    /// Hands what the medium has for the host on, after every event. Most
    /// events leave nothing: one test here, the work out of line (issue
    /// 28: a call with the whole body's prologue and epilogue after each
    /// event was 4.7% of the ATP paper's AODV run in a release build).
    #[inline]
    fn drain<H: Host<P, Event = A>>(&mut self, host: &mut H, at: Instant) -> io::Result<()> {
        if self.net.medium.has_output() {
            self.drain_output(host, at)
        } else {
            Ok(())
        }
    }

    #[inline(never)]
    fn drain_output<H: Host<P, Event = A>>(&mut self, host: &mut H, at: Instant) -> io::Result<()> {
        if self.net.medium.observing() {
            while let Some(ev) = self.net.medium.poll_air_event() {
                host.on_air(ev)?;
            }
        }
        while let Some(ind) = self.net.medium.poll_indication() {
            match ind {
                // seed 001 §3.1: the node's delay average is fed by every
                // frame the MAC finishes, whatever flow it belongs to.
                Indication::TxReport(r) => {
                    for relay in &mut self.net.relays[r.node as usize] {
                        relay.on_tx_report(at, r.enqueued_at, r.tx_done_at);
                    }
                }
                other => host.on_indication(&mut self.net, at, other)?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use meshbed_radio::{NodeRadio, RadioConfig};

    #[derive(Clone, Debug)]
    struct Frame(u32);
    impl Payload for Frame {
        fn msdu_bytes(&self) -> u32 {
            self.0
        }
    }

    /// A host that sends a frame from node 0 to node 1 at each of its
    /// events and records what happens, on a virtual clock.
    #[derive(Default)]
    struct Recorder {
        clock: VirtualClock,
        log: Vec<(Instant, String)>,
        turns: u32,
    }
    impl Clock for Recorder {
        fn now(&mut self) -> Instant {
            self.clock.now()
        }
        fn wait(&mut self, deadline: Option<Instant>) -> io::Result<()> {
            self.clock.wait(deadline)
        }
    }
    impl Host<Frame> for Recorder {
        type Event = u32;
        fn trace_code(event: &u32) -> u64 {
            u64::from(*event)
        }
        fn on_event(&mut self, net: &mut Network<Frame, u32>, now: Instant, event: u32) -> io::Result<()> {
            self.log.push((now, format!("event {event}")));
            net.enqueue(now, 0, Addr::Unicast(1), Frame(1000));
            Ok(())
        }
        fn on_indication(
            &mut self,
            _net: &mut Network<Frame, u32>,
            now: Instant,
            ind: Indication<Frame>,
        ) -> io::Result<()> {
            if let Indication::Deliver { node, .. } = ind {
                self.log.push((now, format!("deliver at {node}")));
            }
            Ok(())
        }
        fn on_turn(&mut self, _net: &mut Network<Frame, u32>, _now: Instant) -> io::Result<Option<Instant>> {
            self.turns += 1;
            Ok(None)
        }
    }

    fn network() -> Network<Frame, u32> {
        let radios = [NodeRadio::at(0.0, 0.0), NodeRadio::at(200.0, 0.0)];
        let medium = Medium::new(&RadioConfig::default(), &radios, 1).unwrap();
        Network::new(medium, &[RelayClass { config: RelayConfig::default(), packet_bytes: 1000 }])
    }

    /// Host and radio events run in one time order; events at exactly the
    /// end run, later ones do not; every tx report reaches the sender's
    /// relay; the same run twice gives the same trace.
    #[test]
    fn one_order_for_host_and_radio_events_and_an_inclusive_end() {
        let run = || {
            let mut d = Driver::new(network());
            let ms = |m: u64| Instant::from_nanos(m * 1_000_000);
            for (k, at) in [(1, ms(1)), (2, ms(10)), (3, ms(20)), (4, ms(21))] {
                d.net.schedule(at, k);
            }
            let prior = d.net.relays(0)[0].current_delay();
            let mut host = Recorder::default();
            d.run(&mut host, Some(ms(20))).unwrap();
            assert_eq!(host.clock.now(), ms(20), "the virtual clock stops at the end");
            let events: Vec<&str> =
                host.log.iter().filter(|(_, e)| e.starts_with("event")).map(|(_, e)| e.as_str()).collect();
            assert_eq!(events, ["event 1", "event 2", "event 3"], "the event at the end runs, the later one not");
            let delivered: Vec<Instant> =
                host.log.iter().filter(|(_, e)| e == "deliver at 1").map(|(t, _)| *t).collect();
            assert_eq!(delivered.len(), 2, "the frames sent at 1 and 10 ms arrive; the one at 20 ms is on the air");
            assert!(delivered[0] > ms(1) && delivered[0] < ms(2), "{delivered:?}");
            assert!(host.log.windows(2).all(|w| w[0].0 <= w[1].0), "time never goes backwards: {:?}", host.log);
            let relay = &d.net.relays(0)[0];
            assert_eq!(relay.samples(), 2, "both finished frames fed node 0's average");
            assert_ne!(relay.current_delay(), prior, "the measured delay replaced the prior");
            assert!(host.turns > 0);
            (d.events(), d.trace_hash())
        };
        assert_eq!(run(), run());
    }

    #[test]
    fn a_virtual_clock_with_nothing_to_wait_for_is_an_error_not_a_hang() {
        let mut d: Driver<Frame, u32> = Driver::new(network());
        let err = d.run(&mut Recorder::default(), None).unwrap_err();
        assert!(err.to_string().contains("nothing will ever happen"), "{err}");
    }
}

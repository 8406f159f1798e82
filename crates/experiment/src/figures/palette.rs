//! One look per protocol: a colour and a marker that every figure gives
//! the protocol (the CLI's, and the Python example's, which reads this very
//! table through `meshbed.protocol_styles()`), so that a protocol is found
//! by its look across figures and the two figure makers cannot drift.
//!
//! The colours are matplotlib's "tab10" in the order of [`Protocol::ALL`]
//! (ten engines, ten colours), then two more for UDP and the kernel's TCP;
//! each protocol also has a marker of its own, so that the figures read in
//! grey print too.

use crate::plot::{Dash, MarkerShape, Rgb, SeriesStyle};
use meshbed_proto::Protocol;
use meshbed_sim::report::FlowProtocol;

/// The look of `protocol` (a solid line; [`with_dash`] for series that
/// share a protocol).
pub fn protocol_style(protocol: FlowProtocol) -> SeriesStyle {
    use MarkerShape as M;
    let (color, marker) = match protocol {
        FlowProtocol::Engine(p) => match p {
            Protocol::AtpDefault => (Rgb(0x1f, 0x77, 0xb4), M::Circle),
            Protocol::AtpAggressive => (Rgb(0xff, 0x7f, 0x0e), M::Square),
            Protocol::AtpAdaptive => (Rgb(0x2c, 0xa0, 0x2c), M::TriangleUp),
            Protocol::TcpTahoe => (Rgb(0xd6, 0x27, 0x28), M::Diamond),
            Protocol::TcpReno => (Rgb(0x94, 0x67, 0xbd), M::TriangleDown),
            Protocol::TcpNewReno => (Rgb(0x8c, 0x56, 0x4b), M::TriangleLeft),
            Protocol::TcpNewRenoElfn => (Rgb(0xe3, 0x77, 0xc2), M::TriangleRight),
            Protocol::TcpRenoPaced => (Rgb(0x7f, 0x7f, 0x7f), M::Pentagon),
            Protocol::TcpNewRenoPaced => (Rgb(0xbc, 0xbd, 0x22), M::Hexagon),
            Protocol::Mtl => (Rgb(0x17, 0xbe, 0xcf), M::Star),
            Protocol::TcpCubic => (Rgb(0x00, 0x3f, 0x5c), M::Octagon),
            Protocol::TcpSack => (Rgb(0xb3, 0x00, 0x5e), M::ThinDiamond),
            Protocol::TcpBbr => (Rgb(0x00, 0x87, 0x6e), M::Hexagon2),
        },
        FlowProtocol::Udp => (Rgb(0x39, 0x3b, 0x79), M::Cross),
        FlowProtocol::KernelTcp => (Rgb(0x84, 0x3c, 0x39), M::Plus),
    };
    SeriesStyle { color, marker, dash: Dash::Solid }
}

/// Every protocol results can name, in a fixed order: the engines of
/// [`Protocol::ALL`], then UDP and the kernel's TCP.
pub fn every_protocol() -> Vec<FlowProtocol> {
    Protocol::ALL.iter().map(|&p| FlowProtocol::Engine(p)).chain([FlowProtocol::Udp, FlowProtocol::KernelTcp]).collect()
}

/// The protocol results name `name` (`atp-default`, `udp`, `kernel-tcp`).
pub fn protocol_named(name: &str) -> Option<FlowProtocol> {
    every_protocol().into_iter().find(|p| p.name() == name)
}

/// The table the Python example draws with: (protocol name, `#rrggbb`,
/// matplotlib marker) for every protocol.
pub fn protocol_style_table() -> Vec<(&'static str, String, &'static str)> {
    every_protocol()
        .into_iter()
        .map(|p| {
            let s = protocol_style(p);
            (p.name(), s.color.hex(), s.marker.matplotlib())
        })
        .collect()
}

/// The `k`-th dash, for the `k`-th series of one protocol (e.g. the same
/// protocol at several speeds); the dashes repeat after four.
pub fn with_dash(style: SeriesStyle, k: usize) -> SeriesStyle {
    SeriesStyle { dash: Dash::ALL[k % Dash::ALL.len()], ..style }
}

/// The look of flow `i` in a figure of one run's flows: colours and markers
/// of their own (matplotlib's "Dark2" and the markers from the last),
/// none of a protocol's, since there a colour tells flows apart, not
/// protocols.
pub fn flow_style(i: usize) -> SeriesStyle {
    const DARK2: [Rgb; 8] = [
        Rgb(0x1b, 0x9e, 0x77),
        Rgb(0xd9, 0x5f, 0x02),
        Rgb(0x75, 0x70, 0xb3),
        Rgb(0xe7, 0x29, 0x8a),
        Rgb(0x66, 0xa6, 0x1e),
        Rgb(0xe6, 0xab, 0x02),
        Rgb(0xa6, 0x76, 0x1d),
        Rgb(0x66, 0x66, 0x66),
    ];
    let markers = MarkerShape::ALL;
    SeriesStyle {
        color: DARK2[i % DARK2.len()],
        marker: markers[markers.len() - 1 - i % markers.len()],
        dash: Dash::Solid,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn every_protocol_has_a_colour_and_a_marker_of_its_own() {
        let all = every_protocol();
        assert_eq!(all.len(), Protocol::ALL.len() + 2);
        let colors: HashSet<Rgb> = all.iter().map(|&p| protocol_style(p).color).collect();
        let markers: HashSet<MarkerShape> = all.iter().map(|&p| protocol_style(p).marker).collect();
        assert_eq!(colors.len(), all.len());
        assert_eq!(markers.len(), all.len());
        // tab10 in the order of the protocols: ATP default is tab:blue.
        assert_eq!(protocol_style(FlowProtocol::Engine(Protocol::AtpDefault)).color.hex(), "#1f77b4");
    }

    #[test]
    fn the_python_table_is_the_figures_lookup() {
        // What `meshbed.protocol_styles()` hands the Python example is, row
        // by row, what the CLI's figures draw a protocol with.
        let table = protocol_style_table();
        assert_eq!(table.len(), every_protocol().len());
        for (name, hex, marker) in &table {
            let p = protocol_named(name).unwrap_or_else(|| panic!("{name} names no protocol"));
            let style = protocol_style(p);
            assert_eq!(*hex, style.color.hex());
            assert_eq!(*marker, style.marker.matplotlib());
            assert_eq!(style.dash, Dash::Solid);
        }
        let names: Vec<&str> = table.iter().map(|r| r.0).collect();
        assert!(names.contains(&"tcp-newreno") && names.contains(&"udp") && names.contains(&"kernel-tcp"));
        assert_eq!(protocol_named("tcp-vegas"), None);
    }

    #[test]
    fn series_of_one_protocol_differ_by_dash_and_flows_by_colour() {
        let s = protocol_style(FlowProtocol::Engine(Protocol::Mtl));
        let dashes: HashSet<Dash> = (0..4).map(|k| with_dash(s, k).dash).collect();
        assert_eq!(dashes.len(), 4);
        assert!((0..4).all(|k| with_dash(s, k).color == s.color && with_dash(s, k).marker == s.marker));
        let protocol_colors: HashSet<Rgb> = every_protocol().iter().map(|&p| protocol_style(p).color).collect();
        let flows: HashSet<Rgb> = (0..8).map(|i| flow_style(i).color).collect();
        assert_eq!(flows.len(), 8);
        assert!(flows.is_disjoint(&protocol_colors));
    }
}

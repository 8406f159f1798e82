// tcp-chain.cc: one TCP bulk transfer along a static 802.11a chain in ns-3,
// matched to meshbed's `examples/ns3/tcp-chain.toml` (see
// scripts/ns3-tcp-compare, which builds and runs both sides).
//
// Build (Debian's ns-3.37: apt-get install libns3-dev):
//   g++ -O2 -std=c++17 -o tcp-chain contrib/ns3/tcp-chain.cc \
//     -lns3-wifi -lns3-internet -lns3-applications -lns3-mobility -lns3-propagation \
//     -lns3-traffic-control -lns3-network -lns3-core
// (`pkg-config --libs ns3-wifi` names libgsl.so, which only libgsl-dev has;
// the ns-3 libraries themselves suffice.)
// Run:
//   ./tcp-chain --hops=6 --tcp=cubic --bytes=2097152 --retries=on --run=1
//   ./tcp-chain --hops=6 --app=udp --duration=10      (saturated UDP)
// Output, one line:
//   ns3 tcp=cubic hops=6 retries=on run=1 bytes_rx=2097152 complete=1
//     goodput_bps=... completion_s=... wall_s=...
// goodput = bytes received / (time the last byte arrived - start), start
// being the BulkSend start (the handshake counts, as in meshbed); an
// incomplete transfer counts its bytes over the whole --duration.
// --app=udp replaces the transfer by saturated UDP for --duration (issue
// 28's second matched run, scripts/ns3-speed, against meshbed's
// `traffic = "saturated"`): 1472-byte datagrams offered every --udpInterval
// (1 ms, about twice what the first hop carries at 24 Mbit/s), so the
// sender's queue stays full as meshbed's saturated source keeps it; the
// datagrams it cannot take are dropped there. Its line reports
// rx_packets and the simulator's event count instead of the goodput.
// Diagnostics: --counters=1 adds MAC drops (queue, retry limit), PHY data
// transmissions and PHY receive drops; --trace=1 prints the sender's RTO,
// cwnd, congestion state and transmissions on stderr. Any ns-3 attribute
// can be overridden, e.g. --ns3::TcpSocket::DelAckTimeout=+40ms.
//
// Known ns-3.37 behaviour (measured when this was written): with delayed
// ACKs (200 ms) and MinRto 200 ms the sender can lock into one spurious RTO
// per segment (cwnd stays one segment), and TcpBbr
// with delayed ACKs collapses to ~50-100 kbit/s; RcvBufSize 92672 (64
// segments) and SndBufSize 4 MiB segfaulted in TcpRateLinux::SkbSent.
//
// What is matched to meshbed's defaults (crates/radio, docs/KEYS.md) and why:
// - Geometry: hops+1 nodes on a line, --spacing m apart (200 m).
// - Radio: 802.11a, channel 36 (5.18 GHz), 20 dBm, 0 dB antenna gains, noise
//   figure 7 dB, ns-2's two-ray ground model with 1.5 m antennas and system
//   loss 1 (ns-3's TwoRayGroundPropagationLossModel is the same formula:
//   Friis below the 488 m crossover, d^-4 above it), no fading.
// - Ranges: meshbed sets the receiver sensitivity at the power received at
//   250 m (-74.69 dBm), the carrier-sense threshold at 550 m (-82.57 dBm) and
//   ignores signals below -102 dBm. ns-3 (Yans): RxSensitivity = -102 dBm
//   (Yans drops weaker signals entirely, interference and CCA included),
//   ThresholdPreambleDetectionModel MinimumRssi = -74.69 dBm (weaker frames
//   are not locked on, only interference) and CcaEdThreshold = -82.57 dBm
//   (energy above it makes the medium busy). At 200 m spacing: the neighbour
//   decodes (-72.75 dBm), two hops (400 m, -78.77 dBm) is sensed but not
//   decoded, three hops (600 m, -84.09 dBm) is neither but interferes (SINR
//   at the receiver ~6 dB, below 24 Mbit/s' need).
// - MAC: DCF without QoS (AdhocWifiMac), ConstantRateWifiManager at
//   24 Mbit/s, control answers (ACKs) at the highest basic rate <= 24, i.e.
//   24 Mbit/s, as meshbed's default basic set {6,12,24}; RTS/CTS off;
//   retries: MaxSsrc 7 attempts (meshbed short_retry_limit 6) or 1 attempt
//   (short_retry_limit 0); interface queue: one drop-tail WifiMacQueue of 50
//   packets (the traffic-control queue disc removed, no 500 ms MaxDelay).
// - IP: static host routes along the chain, ARP caches pre-filled (meshbed has
//   no ARP), 1500-byte IP packets (SegmentSize 1460, or 1448 with the 12-byte
//   timestamp option).
// - TCP (the [flows.tcp] of the meshbed file): initial window 10, delayed
//   ACKs every 2nd segment / 200 ms, min RTO 200 ms, initial RTO 1 s, clock
//   granularity 1 ms, initial ssthresh 64 segments (meshbed's), receive
//   buffer 128 KiB (~90 segments; meshbed caps the window at 64, but 64
//   segments crashed ns-3.37 - meshbed with 90 differs by < 3%), classic
//   (RFC 6582 / RFC 6675) recovery rather than ns-3's default PRR. newreno:
//   no SACK, no timestamps, no limited transmit; sack/cubic/bbr: SACK,
//   timestamps, limited transmit; bbr: pacing on.
#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/mobility-module.h"
#include "ns3/network-module.h"
#include "ns3/traffic-control-module.h"
#include "ns3/wifi-module.h"

#include "meshbed-radio.h"

#include <chrono>
#include <cstdio>

using namespace ns3;

static uint64_t g_rxBytes = 0;    // bytes the sink has received
static double g_lastRx = 0.0;     // when the last of them arrived [s]

static void
OnRx(Ptr<const Packet> p, const Address&)
{
    g_rxBytes += p->GetSize();
    g_lastRx = Simulator::Now().GetSeconds();
}

// --trace: the sender's RTO, cwnd and state changes on stderr (debugging).
static void
OnRto(Time o, Time n)
{
    std::fprintf(stderr, "%.6f rto %.3f\n", Simulator::Now().GetSeconds(), n.GetSeconds());
}
static void
OnCwnd(uint32_t o, uint32_t n)
{
    std::fprintf(stderr, "%.6f cwnd %u\n", Simulator::Now().GetSeconds(), n);
}
static void
OnState(TcpSocketState::TcpCongState_t o, TcpSocketState::TcpCongState_t n)
{
    std::fprintf(stderr, "%.6f state %s\n", Simulator::Now().GetSeconds(), TcpSocketState::TcpCongStateName[n]);
}
static void
OnTx(Ptr<const Packet> p, const TcpHeader& h, Ptr<const TcpSocketBase>)
{
    std::fprintf(stderr, "%.6f tx %u len %u\n", Simulator::Now().GetSeconds(), h.GetSequenceNumber().GetValue(),
                 p->GetSize() - h.GetSerializedSize());
}
// MAC drops by reason (queue overflow, retry limit), for --counters.
static uint64_t g_drops[4] = {0, 0, 0, 0};
static void
OnMacDrop(WifiMacDropReason r, Ptr<const WifiMpdu>)
{
    if (r < 4)
        g_drops[r]++;
}

// Transmissions of full data frames (> 1000 bytes) and of all frames by
// PHY, for --counters: attempts = first transmissions + MAC retries.
static uint64_t g_dataTx = 0;
static void
OnPhyTx(Ptr<const Packet> p, double)
{
    if (p->GetSize() > 1000)
        g_dataTx++;
}
static uint64_t g_rxFail = 0;
static void
OnPhyRxDrop(Ptr<const Packet> p, WifiPhyRxfailureReason)
{
    g_rxFail++;
}

static void
ConnectTraces(Ptr<Application> app)
{
    Ptr<Socket> s = DynamicCast<BulkSendApplication>(app)->GetSocket();
    s->TraceConnectWithoutContext("RTO", MakeCallback(&OnRto));
    s->TraceConnectWithoutContext("CongestionWindow", MakeCallback(&OnCwnd));
    s->TraceConnectWithoutContext("CongState", MakeCallback(&OnState));
    s->TraceConnectWithoutContext("Tx", MakeCallback(&OnTx));
}

int
main(int argc, char* argv[])
{
    uint32_t hops = 6;
    std::string tcp = "newreno";
    uint64_t bytes = 2097152;
    std::string retries = "on";
    uint32_t run = 1;
    double spacing = 200.0;
    double duration = 300.0;   // simulated-time limit [s]
    uint32_t queue = 50;       // interface queue [packets]
    bool hystart = true;       // CUBIC's (classic) HyStart
    bool ts = true;            // timestamps for sack/cubic/bbr
    double rxSens = -74.69;    // dBm: meshbed's 250 m transmission range
    double ccaEd = -82.57;     // dBm: meshbed's 550 m carrier-sense range
    double floor = -102.0;     // dBm: meshbed's interference floor
    CommandLine cmd(__FILE__);
    cmd.AddValue("hops", "chain length (nodes = hops + 1)", hops);
    cmd.AddValue("tcp", "newreno | sack | cubic | bbr", tcp);
    cmd.AddValue("bytes", "application bytes to move", bytes);
    cmd.AddValue("retries", "MAC retries: on (7 attempts) | off (1 attempt)", retries);
    cmd.AddValue("run", "RngRun", run);
    cmd.AddValue("spacing", "node spacing [m]", spacing);
    cmd.AddValue("duration", "simulated-time limit [s]", duration);
    cmd.AddValue("queue", "interface queue [packets]", queue);
    cmd.AddValue("hystart", "CUBIC HyStart (classic) on/off", hystart);
    cmd.AddValue("timestamps", "timestamps for sack/cubic/bbr", ts);
    cmd.AddValue("rxSensitivity", "lock-on threshold (preamble MinimumRssi) [dBm]", rxSens);
    cmd.AddValue("floor", "Yans RxSensitivity: weaker signals do not exist [dBm]", floor);
    cmd.AddValue("ccaEd", "CcaEdThreshold [dBm]", ccaEd);
    bool counters = false;
    cmd.AddValue("counters", "also print MAC drop counts (queue, retry limit)", counters);
    bool trace = false;
    cmd.AddValue("trace", "print the sender's RTO/cwnd/state/Tx on stderr", trace);
    std::string app = "tcp";
    cmd.AddValue("app", "tcp (one transfer) | udp (saturated UDP for --duration)", app);
    double udpInterval = 0.001;
    cmd.AddValue("udpInterval", "--app=udp: time between datagrams offered [s]", udpInterval);
    cmd.Parse(argc, argv);
    RngSeedManager::SetSeed(1);
    RngSeedManager::SetRun(run);

    // ---- TCP ----
    bool sack = tcp != "newreno";
    bool useTs = sack && ts;
    uint32_t seg = useTs ? 1448 : 1460;   // 1500-byte IP packets
    std::string cc = tcp == "cubic" ? "ns3::TcpCubic" : tcp == "bbr" ? "ns3::TcpBbr" : "ns3::TcpNewReno";
    if (tcp != "newreno" && tcp != "sack" && tcp != "cubic" && tcp != "bbr")
    {
        std::fprintf(stderr, "unknown --tcp=%s\n", tcp.c_str());
        return 2;
    }
    if (app != "tcp" && app != "udp")
    {
        std::fprintf(stderr, "unknown --app=%s: expected tcp or udp\n", app.c_str());
        return 2;
    }
    if (app == "udp" && !(udpInterval > 0))
    {
        std::fprintf(stderr, "--udpInterval=%g: expected a time above 0 s\n", udpInterval);
        return 2;
    }
    Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(TypeId::LookupByName(cc)));
    Config::SetDefault("ns3::TcpL4Protocol::RecoveryType",
                       TypeIdValue(TypeId::LookupByName("ns3::TcpClassicRecovery")));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(seg));
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(10));
    Config::SetDefault("ns3::TcpSocket::InitialSlowStartThreshold", UintegerValue(64 * seg));
    // 128 KiB (ns-3's default): 64 segments (92672 B) crashed ns-3.37.
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(131072));
    // 128 KiB (ns-3's default, above the window); 4 MiB crashed ns-3.37 in
    // TcpRateLinux::SkbSent on some runs.
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(131072));
    Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(2));
    Config::SetDefault("ns3::TcpSocket::DelAckTimeout", TimeValue(MilliSeconds(200)));
    Config::SetDefault("ns3::TcpSocket::ConnTimeout", TimeValue(Seconds(1)));  // initial RTO
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(MilliSeconds(200)));
    Config::SetDefault("ns3::TcpSocketBase::ClockGranularity", TimeValue(MilliSeconds(1)));
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(sack));
    Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(useTs));
    Config::SetDefault("ns3::TcpSocketBase::WindowScaling", BooleanValue(true));
    Config::SetDefault("ns3::TcpSocketBase::LimitedTransmit", BooleanValue(sack));
    Config::SetDefault("ns3::TcpSocketState::EnablePacing", BooleanValue(tcp == "bbr"));
    Config::SetDefault("ns3::TcpCubic::HyStart", BooleanValue(hystart));

    // ---- MAC queue: one 50-packet drop-tail FIFO, no age limit ----
    Config::SetDefault("ns3::WifiMacQueue::MaxSize", QueueSizeValue(QueueSize(std::to_string(queue) + "p")));
    Config::SetDefault("ns3::WifiMacQueue::MaxDelay", TimeValue(Seconds(duration)));
    // MaxSsrc counts attempts: a frame is dropped once SSRC reaches it.
    Config::SetDefault("ns3::WifiRemoteStationManager::MaxSsrc", UintegerValue(retries == "off" ? 1 : 7));
    Config::SetDefault("ns3::WifiRemoteStationManager::RtsCtsThreshold", UintegerValue(65535));
    Config::SetDefault("ns3::WifiRemoteStationManager::FragmentationThreshold", UintegerValue(65535));

    // Parse again so that --ns3::Class::Attribute=value overrides the above.
    cmd.Parse(argc, argv);

    NodeContainer nodes;
    nodes.Create(hops + 1);
    MobilityHelper mob;
    Ptr<ListPositionAllocator> pos = CreateObject<ListPositionAllocator>();
    for (uint32_t i = 0; i <= hops; ++i)
        pos->Add(Vector(i * spacing, 0, 0));
    mob.SetPositionAllocator(pos);
    mob.SetMobilityModel("ns3::ConstantPositionMobilityModel");
    mob.Install(nodes);

    // ---- PHY and channel (meshbed-radio.h) ----
    YansWifiPhyHelper phy = meshbed::Phy(5.18e9, "{36, 20, BAND_5GHZ, 0}", rxSens, ccaEd, floor);

    WifiHelper wifi;
    wifi.SetStandard(WIFI_STANDARD_80211a);
    wifi.SetRemoteStationManager("ns3::ConstantRateWifiManager",
                                 "DataMode", StringValue("OfdmRate24Mbps"),
                                 "ControlMode", StringValue("OfdmRate24Mbps"));
    WifiMacHelper mac;
    mac.SetType("ns3::AdhocWifiMac", "QosSupported", BooleanValue(false));
    NetDeviceContainer devs = wifi.Install(phy, mac, nodes);

    // ---- IP, static routes, no queue disc, pre-filled ARP ----
    InternetStackHelper inet;
    Ipv4StaticRoutingHelper srh;
    inet.SetRoutingHelper(srh);
    inet.Install(nodes);
    Ipv4AddressHelper addr;
    addr.SetBase("10.0.0.0", "255.255.255.0");
    Ipv4InterfaceContainer ifs = addr.Assign(devs);
    TrafficControlHelper tch;
    tch.Uninstall(devs);
    for (uint32_t i = 0; i <= hops; ++i)
    {
        Ptr<Ipv4StaticRouting> rt = srh.GetStaticRouting(nodes.Get(i)->GetObject<Ipv4>());
        for (uint32_t j = 0; j <= hops; ++j)
        {
            if (j == i || j == i + 1 || j + 1 == i)
                continue;   // self and neighbours: the subnet route
            uint32_t next = j > i ? i + 1 : i - 1;
            rt->AddHostRouteTo(ifs.GetAddress(j), ifs.GetAddress(next), 1);
        }
    }
    NeighborCacheHelper nch;
    nch.PopulateNeighborCache();

    // ---- the transfer ----
    uint16_t port = 5000;
    const bool udp = app == "udp";
    const char* factory = udp ? "ns3::UdpSocketFactory" : "ns3::TcpSocketFactory";
    PacketSinkHelper sinkH(factory, InetSocketAddress(Ipv4Address::GetAny(), port));
    ApplicationContainer sink = sinkH.Install(nodes.Get(hops));
    sink.Start(Seconds(0.0));
    // UDP starts at 0 s as meshbed's saturated source does; TCP at 1 s.
    const double start = udp ? 0.0 : 1.0;
    ApplicationContainer sapp;
    if (udp)
    {
        UdpClientHelper src(ifs.GetAddress(hops), port);
        // ns-3.37 sends one datagram when MaxPackets is 0.
        src.SetAttribute("MaxPackets", UintegerValue(0xffffffffu));
        src.SetAttribute("Interval", TimeValue(Seconds(udpInterval)));
        src.SetAttribute("PacketSize", UintegerValue(1472));   // 1500-byte IP packets
        sapp = src.Install(nodes.Get(0));
    }
    else
    {
        BulkSendHelper src("ns3::TcpSocketFactory", InetSocketAddress(ifs.GetAddress(hops), port));
        src.SetAttribute("MaxBytes", UintegerValue(bytes));
        src.SetAttribute("SendSize", UintegerValue(seg));
        sapp = src.Install(nodes.Get(0));
    }
    sapp.Start(Seconds(start));
    sink.Get(0)->TraceConnectWithoutContext("Rx", MakeCallback(&OnRx));

    if (trace && !udp)
        Simulator::Schedule(Seconds(start + 1e-6), &ConnectTraces, sapp.Get(0));
    Config::ConnectWithoutContext("/NodeList/*/DeviceList/*/$ns3::WifiNetDevice/Mac/DroppedMpdu",
                                  MakeCallback(&OnMacDrop));
    Config::ConnectWithoutContext("/NodeList/*/DeviceList/*/$ns3::WifiNetDevice/Phy/PhyTxBegin",
                                  MakeCallback(&OnPhyTx));
    Config::ConnectWithoutContext("/NodeList/*/DeviceList/*/$ns3::WifiNetDevice/Phy/PhyRxDrop",
                                  MakeCallback(&OnPhyRxDrop));
    Simulator::Stop(Seconds(start + duration));
    auto t0 = std::chrono::steady_clock::now();
    Simulator::Run();
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    uint64_t events = Simulator::GetEventCount();
    Simulator::Destroy();
    if (udp)
    {
        std::printf("ns3 app=udp hops=%u run=%u rx_packets=%llu events=%llu wall_s=%.3f\n", hops, run,
                    (unsigned long long)(g_rxBytes / 1472), (unsigned long long)events, wall);
        return 0;
    }

    bool complete = g_rxBytes >= bytes;
    double end = complete ? g_lastRx : start + duration;
    double goodput = g_rxBytes * 8.0 / (end - start);
    std::printf("ns3 tcp=%s hops=%u retries=%s run=%u bytes_rx=%llu complete=%d goodput_bps=%.1f "
                "completion_s=%.6f wall_s=%.3f events=%llu\n",
                tcp.c_str(), hops, retries.c_str(), run, (unsigned long long)g_rxBytes, complete ? 1 : 0,
                goodput, end - start, wall, (unsigned long long)events);
    if (counters)
        std::printf("mac_drop_queue=%llu mac_drop_retry_limit=%llu phy_data_tx=%llu phy_rx_drop=%llu\n",
                    (unsigned long long)g_drops[0], (unsigned long long)g_drops[2],
                    (unsigned long long)g_dataTx, (unsigned long long)g_rxFail);
    return 0;
}

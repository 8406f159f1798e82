// manet-speed.cc: issue 28's 100-node matched runs in ns-3, the other side
// of meshbed's `crates/cli/src/bench_suite/aodv-cbr-100.toml` and
// `aodv-tcp-100.toml` (scripts/ns3-speed builds this and times both).
//
// Build (Debian's ns-3.37: apt-get install libns3-dev):
//   g++ -O2 -std=c++17 -o manet-speed contrib/ns3/manet-speed.cc \
//     -lns3-aodv -lns3-wifi -lns3-internet -lns3-applications \
//     -lns3-mobility -lns3-propagation -lns3-traffic-control -lns3-network \
//     -lns3-core
// Run:
//   ./manet-speed --traffic=cbr --flows=10 --maxSpeed=10 --run=1
//   ./manet-speed --traffic=tcp --flows=25 --maxSpeed=20 --run=1
// Output, one line:
//   ns3 traffic=cbr flows=10 run=1 events=... rx_packets=... rx_bytes=... wall_s=...
// wall_s is Simulator::Run alone; scripts/ns3-speed times the whole process.
//
// What is matched to meshbed's files and why (a speed comparison: the same
// amount of simulated work, not the same random draws):
// - 100 nodes uniform in 1000 m x 1000 m; random waypoint, pause 0, speed
//   uniform in [0.1, maxSpeed] m/s (meshbed's min_speed_mps 0.1: a speed
//   near zero would freeze a node for ever), destinations uniform in the
//   square.
// - Radio, meshbed's `preset = "ns2"`: 802.11b DSSS, data at 2 Mbit/s,
//   control frames at 1 Mbit/s, 20 dBm, two-ray ground with 1.5 m antennas
//   at 2.412 GHz (channel 1), noise figure 7 dB; lock-on (preamble
//   detection MinimumRssi) at the power received at 250 m, energy carrier
//   sense (CcaEdThreshold) at the power received at 550 m, both computed
//   by ns-3's own two-ray model here, and signals below -102 dBm ignored
//   (Yans RxSensitivity, meshbed's interference floor). Not matched: ns-2's
//   threshold reception with its 10 dB capture ratio (meshbed's preset);
//   ns-3 decides by its DSSS error-rate model.
// - MAC: DCF without QoS (AdhocWifiMac), RTS/CTS before every unicast frame
//   (RtsCtsThreshold 0, meshbed's rts_threshold_bytes = 0), ns-3's default
//   retry limits (MaxSsrc 7, MaxSlrc 4: meshbed's short 6 / long 3 retries),
//   one 50-packet drop-tail queue (traffic control removed).
// - AODV without HELLOs (EnableHello false, meshbed's hello = false), with
//   ns-3's link-layer feedback (its AODV hears the MAC's dropped frames)
//   and expanding ring search (ns-3's default).
// - Flows between 2N distinct random nodes, starting at 1 + U(0, 1) s:
//   CBR of 4 packets/s of 512-byte payload (UdpClient), or TCP NewReno bulk
//   transfers of 512-byte segments (initial window 10, delayed ACKs every
//   2nd segment) running to the end; 51 s simulated.
#include "ns3/aodv-module.h"
#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/mobility-module.h"
#include "ns3/network-module.h"
#include "ns3/traffic-control-module.h"
#include "ns3/wifi-module.h"

#include "meshbed-radio.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <vector>

using namespace ns3;

static uint64_t g_rxPackets = 0;
static uint64_t g_rxBytes = 0;

static void
OnRx(Ptr<const Packet> p, const Address&)
{
    g_rxPackets++;
    g_rxBytes += p->GetSize();
}

int
main(int argc, char* argv[])
{
    std::string traffic = "cbr";
    uint32_t flows = 10;
    uint32_t nodeCount = 100;
    double side = 1000.0;
    double maxSpeed = 10.0;
    double duration = 51.0;
    uint32_t run = 1;
    double floor = -102.0;   // dBm: meshbed's interference floor
    CommandLine cmd(__FILE__);
    cmd.AddValue("traffic", "cbr | tcp", traffic);
    cmd.AddValue("flows", "flows between distinct random nodes", flows);
    cmd.AddValue("nodes", "nodes", nodeCount);
    cmd.AddValue("side", "side of the square [m]", side);
    cmd.AddValue("maxSpeed", "random waypoint's top speed [m/s]", maxSpeed);
    cmd.AddValue("duration", "simulated time [s]", duration);
    cmd.AddValue("run", "RngRun", run);
    cmd.AddValue("floor", "Yans RxSensitivity: weaker signals do not exist [dBm]", floor);
    cmd.Parse(argc, argv);
    if (traffic != "cbr" && traffic != "tcp")
    {
        std::fprintf(stderr, "--traffic=%s: expected cbr or tcp\n", traffic.c_str());
        return 2;
    }
    if (2 * flows > nodeCount)
    {
        std::fprintf(stderr, "--flows=%u: needs 2 x flows <= --nodes=%u distinct nodes\n", flows, nodeCount);
        return 2;
    }
    RngSeedManager::SetSeed(1);
    RngSeedManager::SetRun(run);

    // ---- TCP (used when --traffic=tcp) ----
    Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(TcpNewReno::GetTypeId()));
    Config::SetDefault("ns3::TcpL4Protocol::RecoveryType",
                       TypeIdValue(TypeId::LookupByName("ns3::TcpClassicRecovery")));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(512));
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(10));
    Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(2));
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(false));
    Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(false));

    // ---- MAC ----
    Config::SetDefault("ns3::WifiMacQueue::MaxSize", QueueSizeValue(QueueSize("50p")));
    Config::SetDefault("ns3::WifiMacQueue::MaxDelay", TimeValue(Seconds(duration + 1)));
    Config::SetDefault("ns3::WifiRemoteStationManager::RtsCtsThreshold", UintegerValue(0));
    Config::SetDefault("ns3::WifiRemoteStationManager::FragmentationThreshold", UintegerValue(65535));
    cmd.Parse(argc, argv);   // --ns3::Class::Attribute=value overrides the above

    NodeContainer nodes;
    nodes.Create(nodeCount);

    // ---- mobility: random waypoint, pause 0 ----
    ObjectFactory posF;
    posF.SetTypeId("ns3::RandomRectanglePositionAllocator");
    std::string u = "ns3::UniformRandomVariable[Min=0.0|Max=" + std::to_string(side) + "]";
    posF.Set("X", StringValue(u));
    posF.Set("Y", StringValue(u));
    Ptr<PositionAllocator> posAlloc = posF.Create()->GetObject<PositionAllocator>();
    MobilityHelper mob;
    mob.SetMobilityModel("ns3::RandomWaypointMobilityModel",
                         "Speed",
                         StringValue("ns3::UniformRandomVariable[Min=0.1|Max=" + std::to_string(maxSpeed) + "]"),
                         "Pause", StringValue("ns3::ConstantRandomVariable[Constant=0.0]"),
                         "PositionAllocator", PointerValue(posAlloc));
    mob.SetPositionAllocator(posAlloc);
    mob.Install(nodes);

    // ---- PHY and channel (meshbed-radio.h): the preset's ranges ----
    const double rxSens = meshbed::RxDbmAt(2.412e9, 250.0);
    const double ccaEd = meshbed::RxDbmAt(2.412e9, 550.0);
    YansWifiPhyHelper phy = meshbed::Phy(2.412e9, "{1, 22, BAND_2_4GHZ, 0}", rxSens, ccaEd, floor);
    WifiHelper wifi;
    wifi.SetStandard(WIFI_STANDARD_80211b);
    wifi.SetRemoteStationManager("ns3::ConstantRateWifiManager",
                                 "DataMode", StringValue("DsssRate2Mbps"),
                                 "ControlMode", StringValue("DsssRate1Mbps"));
    WifiMacHelper mac;
    mac.SetType("ns3::AdhocWifiMac", "QosSupported", BooleanValue(false));
    NetDeviceContainer devs = wifi.Install(phy, mac, nodes);

    // ---- IP and AODV ----
    AodvHelper aodv;
    aodv.Set("EnableHello", BooleanValue(false));
    InternetStackHelper inet;
    inet.SetRoutingHelper(aodv);
    inet.Install(nodes);
    Ipv4AddressHelper addr;
    addr.SetBase("10.0.0.0", "255.255.0.0");
    Ipv4InterfaceContainer ifs = addr.Assign(devs);
    TrafficControlHelper tch;
    tch.Uninstall(devs);

    // ---- flows between 2N distinct nodes ----
    std::vector<uint32_t> ids(nodeCount);
    std::iota(ids.begin(), ids.end(), 0);
    Ptr<UniformRandomVariable> draw = CreateObject<UniformRandomVariable>();
    for (uint32_t i = 0; i + 1 < nodeCount; ++i)   // Fisher-Yates
        std::swap(ids[i], ids[draw->GetInteger(i, nodeCount - 1)]);
    for (uint32_t f = 0; f < flows; ++f)
    {
        uint32_t src = ids[2 * f];
        uint32_t dst = ids[2 * f + 1];
        uint16_t port = 5000 + f;
        double start = 1.0 + draw->GetValue(0.0, 1.0);
        if (traffic == "cbr")
        {
            PacketSinkHelper sinkH("ns3::UdpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), port));
            ApplicationContainer s = sinkH.Install(nodes.Get(dst));
            s.Start(Seconds(0.0));
            s.Get(0)->TraceConnectWithoutContext("Rx", MakeCallback(&OnRx));
            UdpClientHelper client(ifs.GetAddress(dst), port);
            // ns-3.37 sends one packet when MaxPackets is 0 (later versions: no
            // limit), so a count above what 51 s can send.
            client.SetAttribute("MaxPackets", UintegerValue(1000000));
            client.SetAttribute("Interval", TimeValue(MilliSeconds(250)));
            client.SetAttribute("PacketSize", UintegerValue(512));
            ApplicationContainer c = client.Install(nodes.Get(src));
            c.Start(Seconds(start));
        }
        else
        {
            PacketSinkHelper sinkH("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), port));
            ApplicationContainer s = sinkH.Install(nodes.Get(dst));
            s.Start(Seconds(0.0));
            s.Get(0)->TraceConnectWithoutContext("Rx", MakeCallback(&OnRx));
            BulkSendHelper bulk("ns3::TcpSocketFactory", InetSocketAddress(ifs.GetAddress(dst), port));
            bulk.SetAttribute("MaxBytes", UintegerValue(0));   // to the end
            bulk.SetAttribute("SendSize", UintegerValue(512));
            ApplicationContainer c = bulk.Install(nodes.Get(src));
            c.Start(Seconds(start));
        }
    }

    Simulator::Stop(Seconds(duration));
    auto t0 = std::chrono::steady_clock::now();
    Simulator::Run();
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    uint64_t events = Simulator::GetEventCount();
    Simulator::Destroy();
    std::printf("ns3 traffic=%s flows=%u run=%u events=%llu rx_packets=%llu rx_bytes=%llu wall_s=%.3f\n",
                traffic.c_str(), flows, run, (unsigned long long)events, (unsigned long long)g_rxPackets,
                (unsigned long long)g_rxBytes, wall);
    return 0;
}

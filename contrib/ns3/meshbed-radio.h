// meshbed-radio.h: meshbed's radio model as ns-3 (Yans) can run it, shared
// by tcp-chain.cc and manet-speed.cc so that both set it the same way.
//
// meshbed (crates/radio) computes received power with ns-2's two-ray
// ground model (1.5 m antennas, system loss 1; ns-3's
// TwoRayGroundPropagationLossModel is the same formula), 20 dBm, 0 dB
// antenna gains, noise figure 7 dB, no fading. Yans drops a signal below
// RxSensitivity outright (no interference, no energy for CCA), so
// RxSensitivity is meshbed's interference floor (-102 dBm), and meshbed's
// decode range is the preamble-detection model's minimum RSSI, with no SNR
// test at lock-on (meshbed locks on to any frame above its sensitivity
// that finds the receiver idle; the SINR decides the frame's fate
// afterwards). Unlocked signals count as interference and as energy for
// CcaEdThreshold (meshbed's carrier-sense range).
#ifndef MESHBED_RADIO_H
#define MESHBED_RADIO_H

#include "ns3/core-module.h"
#include "ns3/mobility-module.h"
#include "ns3/propagation-module.h"
#include "ns3/wifi-module.h"

#include <string>

namespace meshbed
{

// The propagation every meshbed preset used here runs: two-ray ground.
inline ns3::Ptr<ns3::TwoRayGroundPropagationLossModel>
TwoRay(double frequencyHz)
{
    ns3::Ptr<ns3::TwoRayGroundPropagationLossModel> m =
        ns3::CreateObject<ns3::TwoRayGroundPropagationLossModel>();
    m->SetAttribute("Frequency", ns3::DoubleValue(frequencyHz));
    m->SetAttribute("SystemLoss", ns3::DoubleValue(1.0));
    m->SetAttribute("HeightAboveZ", ns3::DoubleValue(1.5));
    return m;
}

// The mean power received at `distanceM` from a 20 dBm sender: how meshbed
// turns a range (`tx_range_m`, `cs_range_m`) into a threshold.
inline double
RxDbmAt(double frequencyHz, double distanceM)
{
    ns3::Ptr<ns3::ConstantPositionMobilityModel> a = ns3::CreateObject<ns3::ConstantPositionMobilityModel>();
    ns3::Ptr<ns3::ConstantPositionMobilityModel> b = ns3::CreateObject<ns3::ConstantPositionMobilityModel>();
    a->SetPosition(ns3::Vector(0, 0, 0));
    b->SetPosition(ns3::Vector(distanceM, 0, 0));
    return TwoRay(frequencyHz)->CalcRxPower(20.0, a, b);
}

// A Yans PHY on a two-ray channel at `frequencyHz` (`channelSettings` as
// ns-3 spells them) with meshbed's thresholds: lock-on at `rxSensDbm`,
// energy carrier sense at `ccaEdDbm`, nothing below `floorDbm`.
inline ns3::YansWifiPhyHelper
Phy(double frequencyHz, const std::string& channelSettings, double rxSensDbm, double ccaEdDbm, double floorDbm)
{
    using namespace ns3;
    YansWifiChannelHelper chan;
    chan.SetPropagationDelay("ns3::ConstantSpeedPropagationDelayModel");
    chan.AddPropagationLoss("ns3::TwoRayGroundPropagationLossModel",
                            "Frequency", DoubleValue(frequencyHz),
                            "SystemLoss", DoubleValue(1.0),
                            "HeightAboveZ", DoubleValue(1.5));
    YansWifiPhyHelper phy;
    phy.SetChannel(chan.Create());
    phy.Set("ChannelSettings", StringValue(channelSettings));
    phy.Set("TxPowerStart", DoubleValue(20.0));
    phy.Set("TxPowerEnd", DoubleValue(20.0));
    phy.Set("TxGain", DoubleValue(0.0));
    phy.Set("RxGain", DoubleValue(0.0));
    phy.Set("RxNoiseFigure", DoubleValue(7.0));
    phy.Set("RxSensitivity", DoubleValue(floorDbm));
    phy.Set("CcaEdThreshold", DoubleValue(ccaEdDbm));
    phy.SetPreambleDetectionModel("ns3::ThresholdPreambleDetectionModel",
                                  "MinimumRssi", DoubleValue(rxSensDbm),
                                  "Threshold", DoubleValue(-100.0));
    return phy;
}

} // namespace meshbed

#endif

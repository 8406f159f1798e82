-- Wireshark dissector for meshbed's ATP/TCP-over-UDP header
-- (docs/PROTOCOLS.md §1; crates/proto/src/wire.rs). Every field of the
-- header, named as the documents name it (seed 001 §3.3 Fig. 3.2, seed 000
-- §V.A.3): protocol id, version, control flags, N_h, SACK len, reserved,
-- connection id, sequence and acknowledgement numbers (64-bit byte
-- offsets; on ATP feedback the sequence number's echo), D_max (D_avg on
-- feedback), D_s, the SACK blocks and the data.
--
-- Registered on UDP port 7411 (`meshbed recv`'s default, and the port of
-- simulated captures) and as a heuristic dissector on any other UDP port.
--
--   wireshark -X lua_script:contrib/wireshark/meshbed.lua capture.pcap
--   tshark -X lua_script:contrib/wireshark/meshbed.lua -r n0.pcap -Y meshbed
-- or copy this file into Wireshark's personal plugins directory.

local HEADER_LEN = 36
local SACK_BLOCK_LEN = 16
local MAX_SACK_BLOCKS = 20
local MESHBED_UDP_PORT = 7411

local meshbed = Proto("meshbed", "meshbed ATP/TCP-over-UDP")

local protocol_ids = { [1] = "ATP", [2] = "TCP" }
-- The top four bits of a connection id: 1 + the index in Protocol::ALL
-- (crates/proto/src/connection.rs).
local connection_protocols = {
  [1] = "atp-default", [2] = "atp-aggressive", [3] = "atp-adaptive",
  [4] = "tcp-tahoe", [5] = "tcp-reno", [6] = "tcp-newreno",
  [7] = "tcp-newreno-elfn", [8] = "tcp-reno-paced", [9] = "tcp-newreno-paced",
  [10] = "mtl", [11] = "tcp-cubic", [12] = "tcp-sack", [13] = "tcp-bbr",
}

local F = meshbed.fields
F.protocol_id = ProtoField.uint8("meshbed.protocol_id", "Protocol id", base.DEC, protocol_ids)
F.version = ProtoField.uint8("meshbed.version", "Version", base.DEC)
F.control = ProtoField.uint8("meshbed.control", "Control", base.HEX)
F.sack_more = ProtoField.bool("meshbed.control.sack_more", "SACK-MORE", 8, nil, 0x80)
F.sack_opt = ProtoField.bool("meshbed.control.sack_opt", "SACK-OPT", 8, nil, 0x40)
F.sack_req = ProtoField.bool("meshbed.control.sack_req", "SACK-REQ", 8, nil, 0x20)
F.ack_flag = ProtoField.bool("meshbed.control.ack", "ACK", 8, nil, 0x10)
F.unknown_flag = ProtoField.bool("meshbed.control.unknown", "Unknown bit (an error)", 8, nil, 0x08)
F.rst = ProtoField.bool("meshbed.control.rst", "RST", 8, nil, 0x04)
F.syn = ProtoField.bool("meshbed.control.syn", "SYN", 8, nil, 0x02)
F.fin = ProtoField.bool("meshbed.control.fin", "FIN", 8, nil, 0x01)
F.n_h = ProtoField.uint8("meshbed.n_h", "N_h (hop count)", base.DEC)
F.sack_len = ProtoField.uint16("meshbed.sack_len", "SACK len (bytes)", base.DEC)
F.reserved = ProtoField.uint16("meshbed.reserved", "Reserved", base.HEX)
F.connection_id = ProtoField.uint32("meshbed.connection_id", "Connection id", base.HEX)
F.connection_protocol = ProtoField.uint32("meshbed.connection_id.protocol", "Protocol code", base.DEC,
  connection_protocols, 0xf0000000)
F.seq = ProtoField.uint64("meshbed.seq", "Sequence number (bytes)", base.DEC)
F.echo_transmission = ProtoField.uint32("meshbed.echo.transmission",
  "Echoed transmission number (ATP feedback; 0: none)", base.DEC)
F.echo_arrivals = ProtoField.uint32("meshbed.echo.arrivals", "Data packets received (ATP feedback, mod 2^32)", base.DEC)
F.ack = ProtoField.uint64("meshbed.ack", "Acknowledgement number (bytes)", base.DEC)
F.d_max_us = ProtoField.uint32("meshbed.d_max_us", "D_max (us)", base.DEC)
F.d_avg_us = ProtoField.uint32("meshbed.d_avg_us", "D_avg (us, D_max field of feedback)", base.DEC)
F.d_s_us = ProtoField.uint32("meshbed.d_s_us", "D_s (us)", base.DEC)
F.sack_block = ProtoField.none("meshbed.sack_block", "SACK block")
F.sack_start = ProtoField.uint64("meshbed.sack_block.start", "Start (bytes)", base.DEC)
F.sack_end = ProtoField.uint64("meshbed.sack_block.end", "End (bytes, exclusive)", base.DEC)
F.data_len = ProtoField.uint32("meshbed.data_len", "Data length", base.DEC)
F.data = ProtoField.bytes("meshbed.data", "Data")

local ef_malformed = ProtoExpert.new("meshbed.malformed", "Malformed meshbed header",
  expert.group.MALFORMED, expert.severity.ERROR)
meshbed.experts = { ef_malformed }

local flag_names = {
  { 0x80, "SACK-MORE" }, { 0x40, "SACK-OPT" }, { 0x20, "SACK-REQ" }, { 0x10, "ACK" },
  { 0x04, "RST" }, { 0x02, "SYN" }, { 0x01, "FIN" },
}

-- Whether the bytes follow the header's rules (wire.rs `check_len` and
-- `parse_datagram`): the heuristic's test, and the malformed flag.
local function looks_like_meshbed(tvb)
  local len = tvb:len()
  if len < HEADER_LEN then return false end
  local id = tvb(0, 1):uint()
  if id ~= 1 and id ~= 2 then return false end
  if tvb(1, 1):uint() ~= 1 then return false end
  if bit.band(tvb(2, 1):uint(), 0x08) ~= 0 then return false end
  local sack_len = tvb(4, 2):uint()
  if sack_len % SACK_BLOCK_LEN ~= 0 or sack_len > MAX_SACK_BLOCKS * SACK_BLOCK_LEN then return false end
  if HEADER_LEN + sack_len > len then return false end
  return true
end

function meshbed.dissector(tvb, pinfo, tree)
  local len = tvb:len()
  if len < HEADER_LEN then return 0 end
  pinfo.cols.protocol = "meshbed"
  local t = tree:add(meshbed, tvb(), "meshbed ATP/TCP-over-UDP header")
  if not looks_like_meshbed(tvb) then
    t:add_proto_expert_info(ef_malformed)
  end
  local id = tvb(0, 1):uint()
  t:add(F.protocol_id, tvb(0, 1))
  t:add(F.version, tvb(1, 1))
  local control = tvb(2, 1):uint()
  local ct = t:add(F.control, tvb(2, 1))
  for _, field in ipairs({ F.sack_more, F.sack_opt, F.sack_req, F.ack_flag, F.unknown_flag, F.rst, F.syn, F.fin }) do
    ct:add(field, tvb(2, 1))
  end
  t:add(F.n_h, tvb(3, 1))
  local sack_len = tvb(4, 2):uint()
  t:add(F.sack_len, tvb(4, 2))
  t:add(F.reserved, tvb(6, 2))
  local cid = t:add(F.connection_id, tvb(8, 4))
  cid:add(F.connection_protocol, tvb(8, 4))
  local seq_item = t:add(F.seq, tvb(12, 8))
  t:add(F.ack, tvb(20, 8))
  local feedback = bit.band(control, 0x40) ~= 0
  -- On ATP feedback the sequence number is a FeedbackEcho (wire.rs): the
  -- newest arrival's transmission number, then the packets received.
  if feedback and tvb(0, 1):uint() == 1 then
    seq_item:add(F.echo_transmission, tvb(12, 4))
    seq_item:add(F.echo_arrivals, tvb(16, 4))
  end
  -- On feedback (SACK-OPT) the D_max field carries the receiver's D_avg.
  t:add(feedback and F.d_avg_us or F.d_max_us, tvb(28, 4))
  t:add(F.d_s_us, tvb(32, 4))
  local blocks = 0
  local sack_end = HEADER_LEN + sack_len
  if sack_end > len then sack_end = len end
  local at = HEADER_LEN
  while at + SACK_BLOCK_LEN <= sack_end do
    local b = t:add(F.sack_block, tvb(at, SACK_BLOCK_LEN))
    b:add(F.sack_start, tvb(at, 8))
    b:add(F.sack_end, tvb(at + 8, 8))
    b:append_text(string.format(" [%s, %s)", tostring(tvb(at, 8):uint64()), tostring(tvb(at + 8, 8):uint64())))
    blocks = blocks + 1
    at = at + SACK_BLOCK_LEN
  end
  local data_len = len - sack_end
  t:add(F.data_len, data_len):set_generated()
  if data_len > 0 then
    t:add(F.data, tvb(sack_end, data_len))
  end

  local flags = {}
  for _, f in ipairs(flag_names) do
    if bit.band(control, f[1]) ~= 0 then flags[#flags + 1] = f[2] end
  end
  local info = string.format("%s [%s] Seq=%s Ack=%s N_h=%d %s=%dus D_s=%dus",
    protocol_ids[id] or ("proto " .. id), table.concat(flags, ", "),
    tostring(tvb(12, 8):uint64()), tostring(tvb(20, 8):uint64()), tvb(3, 1):uint(),
    feedback and "D_avg" or "D_max", tvb(28, 4):uint(), tvb(32, 4):uint())
  if blocks > 0 then info = info .. " SACK blocks=" .. blocks end
  info = info .. " Len=" .. data_len
  pinfo.cols.info = info
  t:append_text(", " .. info)
  return len
end

local function heuristic(tvb, pinfo, tree)
  if not looks_like_meshbed(tvb) then return false end
  meshbed.dissector(tvb, pinfo, tree)
  return true
end

DissectorTable.get("udp.port"):add(MESHBED_UDP_PORT, meshbed)
meshbed:register_heuristic("udp", heuristic)

#include "flow_meter.h"

#include <algorithm>

namespace gpp {

uint32_t flow_table_slots(uint32_t max_flows) {
  uint32_t n = 64;
  while (n < 2ull * std::max<uint32_t>(max_flows, 1) && n < (1u << 31)) n <<= 1;
  return n;
}

// ---- the host's store -------------------------------------------------------

HostFlowStore::HostFlowStore(uint32_t capacity, unsigned threads)
    : slots_(capacity), pool_(threads) {}

void HostFlowStore::add_range(const GppResult *records, const GppTunnelInfo *tunnels,
                              uint32_t begin, uint32_t end, FlowCounters &c) {
  const FlowTableView view{slots_.data(), capacity()};
  for (uint32_t i = begin; i < end; ++i) {
    switch (flow_update(view, records[i], tunnels ? tunnels[i].tunnel_id : 0)) {
      case kFlowNotIp: c.packets_not_ip++; break;
      case kFlowNoRoom: c.packets_untracked++; break;
      case kFlowNew: c.flows_created++; break;
      case kFlowCounted: break;
    }
  }
}

void HostFlowStore::add(const GppResult *records, uint32_t count, const GppTunnelInfo *tunnels) {
  if (count == 0) return;
  // Fewer threads for small batches: handing work out costs more.
  const unsigned chunks = std::min<unsigned>(pool_.threads(), count / 256 + 1);
  std::vector<FlowCounters> partial(chunks);
  pool_.run(chunks, [&](unsigned t) {
    add_range(records, tunnels, count * t / chunks, count * (t + 1) / chunks, partial[t]);
  });
  for (const FlowCounters &c : partial) {
    unsettled_.packets_not_ip += c.packets_not_ip;
    unsettled_.packets_untracked += c.packets_untracked;
    unsettled_.flows_created += c.flows_created;
  }
}

bool HostFlowStore::settle(FlowCounters &c, std::string *) {
  c.packets_not_ip += unsettled_.packets_not_ip;
  c.packets_untracked += unsettled_.packets_untracked;
  c.flows_created += unsettled_.flows_created;
  unsettled_ = FlowCounters{};
  return true;
}

bool HostFlowStore::end_flows(const FlowEndRule &rule, uint16_t seed,
                              std::vector<GppFlowRecord> &out, std::string *) {
  for (FlowSlot &s : slots_) {
    if (s.state != kFlowLive) continue;
    const uint8_t why = flow_end_reason(s, rule);
    if (!why) continue;
    GppFlowRecord rec{};
    flow_record(s, why, seed, rec);
    out.push_back(rec);
    s.state = kFlowDead;
  }
  return true;
}

bool HostFlowStore::live_ages(std::vector<FlowAge> &out, std::string *) {
  for (const FlowSlot &s : slots_)
    if (s.state == kFlowLive) out.push_back(FlowAge{s.end_ns, s.first});
  return true;
}

bool HostFlowStore::rebuild(std::string *) {
  std::vector<FlowSlot> fresh(slots_.size());
  const FlowTableView view{fresh.data(), capacity()};
  for (const FlowSlot &s : slots_)
    if (s.state == kFlowLive) flow_reinsert(view, s);
  slots_.swap(fresh);
  return true;
}

bool HostFlowStore::read_slots(std::vector<FlowSlot> &out, std::string *) {
  out = slots_;
  return true;
}

bool HostFlowStore::write_slots(const std::vector<FlowSlot> &slots, std::string *error) {
  if (slots.size() != slots_.size()) {
    if (error) *error = "flow table sizes differ";
    return false;
  }
  slots_ = slots;
  return true;
}

std::unique_ptr<FlowStore> make_host_flow_store(uint32_t capacity, unsigned threads,
                                                std::string *error) {
  try {
    return std::make_unique<HostFlowStore>(capacity, threads);
  } catch (const std::exception &e) {
    *error = "could not make a flow table of " + std::to_string(capacity) + " slots (" +
             std::to_string(static_cast<size_t>(capacity) * sizeof(FlowSlot) >> 20) +
             " MiB) in host memory: " + e.what();
    return nullptr;
  }
}

// ---- the policy ---------------------------------------------------------------

FlowMeter::FlowMeter(const FlowSettings &settings)
    : settings_(settings),
      store_(new HostFlowStore(flow_table_slots(settings.max_flows), settings.threads)) {}

FlowMeter::FlowMeter(const FlowSettings &settings, std::unique_ptr<FlowStore> store)
    : settings_(settings), store_(std::move(store)) {}

void FlowMeter::add(const GppResult *records, uint32_t count, const GppTunnelInfo *tunnels) {
  // Only a host store is fed records (flow_meter.h); a device store's
  // batches count themselves.
  static_cast<HostFlowStore &>(*store_).add(records, count, tunnels);
  uint64_t latest = 0;
  for (uint32_t i = 0; i < count; ++i) latest = std::max(latest, records[i].timestamp_ns);
  added(count, latest);
  settle(nullptr); // free on the host: the counters stay current
}

void FlowMeter::added(uint32_t count, uint64_t latest_ns) {
  counters_.packets += count;
  unsettled_packets_ += count;
  now_ns_ = std::max(now_ns_, latest_ns);
}

bool FlowMeter::settle(std::string *error) {
  if (!store_->settle(counters_, error)) return false;
  unsettled_packets_ = 0;
  counters_.active_flows = counters_.flows_created - counters_.flows_ended;
  return true;
}

bool FlowMeter::end_flows(const FlowEndRule &rule, std::vector<GppFlowRecord> &out,
                          std::string *error) {
  const size_t first_new = out.size();
  if (!store_->end_flows(rule, settings_.community_id_seed, out, error)) return false;
  for (size_t i = first_new; i < out.size(); ++i)
    if (out[i].end_reason == GPP_FLOW_END_NO_ROOM) counters_.flows_evicted++;
  const size_t ended = out.size() - first_new;
  counters_.flows_ended += ended;
  dead_slots_ += ended;
  std::sort(out.begin() + first_new, out.end(),
            [](const GppFlowRecord &a, const GppFlowRecord &b) {
              return a.first_packet < b.first_packet;
            });
  counters_.active_flows = counters_.flows_created - counters_.flows_ended;
  // Tombstones lengthen every probe: rebuild once they fill a quarter.
  if (dead_slots_ > store_->capacity() / 4) {
    if (!store_->rebuild(error)) return false;
    dead_slots_ = 0;
  }
  return true;
}

bool FlowMeter::sweep(std::vector<GppFlowRecord> &out, std::string *error) {
  // Each packet not yet settled made at most one flow: while even that
  // many cannot overfill the table, a device store need not be waited for.
  const bool maybe_crowded =
      counters_.active_flows + unsettled_packets_ > settings_.max_flows;
  const bool due = !swept_ || now_ns_ - last_sweep_ns_ >= settings_.sweep_interval_ns;
  if (!due && !maybe_crowded) return true;
  if (!settle(error)) return false;
  if (due) {
    swept_ = true;
    last_sweep_ns_ = now_ns_;
    FlowEndRule rule{};
    rule.kind = FlowEndRule::kTimedOut;
    rule.now = now_ns_;
    rule.timeouts = FlowTimeouts{settings_.idle_timeout_ns, settings_.active_timeout_ns};
    if (!end_flows(rule, out, error)) return false;
  }
  if (counters_.active_flows <= settings_.max_flows) return true;
  // Still too many: the flows idle longest make room (down to 7/8 of max).
  std::vector<FlowAge> ages;
  if (!store_->live_ages(ages, error)) return false;
  const size_t keep = settings_.max_flows / 8 * 7;
  if (ages.size() <= keep) return true;
  const size_t excess = ages.size() - keep;
  // Strictly older: the order flow_age_at_most (and so the kOldest rule)
  // cuts by.
  auto older = [](const FlowAge &a, const FlowAge &b) { return !flow_age_at_most(b, a); };
  std::nth_element(ages.begin(), ages.begin() + (excess - 1), ages.end(), older);
  FlowEndRule rule{};
  rule.kind = FlowEndRule::kOldest;
  rule.cutoff = ages[excess - 1];
  return end_flows(rule, out, error);
}

bool FlowMeter::flush(std::vector<GppFlowRecord> &out, std::string *error) {
  if (!settle(error)) return false;
  FlowEndRule rule{};
  rule.kind = FlowEndRule::kAll;
  return end_flows(rule, out, error);
}

bool FlowMeter::move_to(std::unique_ptr<FlowStore> store, std::string *error) {
  std::vector<FlowSlot> slots;
  if (!settle(error) || !store_->read_slots(slots, error) || !store->write_slots(slots, error))
    return false;
  store_ = std::move(store);
  return true;
}

} // namespace gpp

#include "flow_meter.h"

#include <algorithm>
#include <thread>

namespace gpp {

uint32_t flow_table_slots(uint32_t max_flows) {
  uint32_t n = 64;
  while (n < 2ull * std::max<uint32_t>(max_flows, 1) && n < (1u << 31)) n <<= 1;
  return n;
}

namespace {
constexpr uint32_t kNoSlot = 0xffffffffu;
} // namespace

FlowMeter::FlowMeter(const FlowSettings &settings)
    : settings_(settings), slots_(flow_table_slots(settings.max_flows)) {
  view_ = FlowTableView{slots_.data(), static_cast<uint32_t>(slots_.size())};
}

void FlowMeter::add_range(const GppResult *records, uint32_t begin, uint32_t end,
                          uint32_t *slot_of, FlowCounters &c) {
  for (uint32_t i = begin; i < end; ++i) {
    slot_of[i] = kNoSlot;
    switch (flow_update(view_, records[i], &slot_of[i])) {
      case kFlowNotIp: c.packets_not_ip++; break;
      case kFlowNoRoom: c.packets_untracked++; break;
      case kFlowNew: c.flows_created++; break;
      case kFlowCounted: break;
    }
  }
}

void FlowMeter::add(const GppResult *records, uint32_t count) {
  if (count == 0) return;
  slot_of_.resize(count);
  const unsigned threads = std::max(1u, std::min<unsigned>(settings_.threads, count / 256 + 1));
  std::vector<FlowCounters> partial(threads);
  if (threads == 1) {
    add_range(records, 0, count, slot_of_.data(), partial[0]);
  } else {
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        add_range(records, count * t / threads, count * (t + 1) / threads, slot_of_.data(),
                  partial[t]);
      });
    for (auto &th : pool) th.join();
  }
  // The first-packet fields, once every packet of the batch has been
  // counted; and the latest packet time.
  for (uint32_t i = 0; i < count; ++i) {
    if (slot_of_[i] != kNoSlot) flow_first_packet(view_, records[i], slot_of_[i]);
    now_ns_ = std::max(now_ns_, records[i].timestamp_ns);
  }
  for (const FlowCounters &c : partial) {
    counters_.packets_not_ip += c.packets_not_ip;
    counters_.packets_untracked += c.packets_untracked;
    counters_.flows_created += c.flows_created;
  }
  counters_.packets += count;
  counters_.active_flows = counters_.flows_created - counters_.flows_ended;
}

template <typename Reason>
void FlowMeter::end_flows(Reason reason, std::vector<GppFlowRecord> &out) {
  const size_t first_new = out.size();
  for (FlowSlot &s : slots_) {
    if (s.state != kFlowLive) continue;
    const uint8_t why = reason(s);
    if (!why) continue;
    GppFlowRecord rec{};
    flow_record(s, why, settings_.community_id_seed, rec);
    out.push_back(rec);
    s.state = kFlowDead;
    dead_slots_++;
    counters_.flows_ended++;
    if (why == GPP_FLOW_END_NO_ROOM) counters_.flows_evicted++;
  }
  std::sort(out.begin() + first_new, out.end(),
            [](const GppFlowRecord &a, const GppFlowRecord &b) {
              return a.first_packet < b.first_packet;
            });
  counters_.active_flows = counters_.flows_created - counters_.flows_ended;
  // Tombstones lengthen every probe: rebuild once they fill a quarter.
  if (dead_slots_ > slots_.size() / 4) rebuild();
}

void FlowMeter::sweep(std::vector<GppFlowRecord> &out) {
  const uint64_t live = counters_.active_flows;
  const bool crowded = live > settings_.max_flows;
  const bool due = !swept_ || now_ns_ - last_sweep_ns_ >= settings_.sweep_interval_ns;
  if (!due && !crowded) return;
  swept_ = true;
  last_sweep_ns_ = now_ns_;
  const FlowTimeouts timeouts{settings_.idle_timeout_ns, settings_.active_timeout_ns};
  end_flows([&](const FlowSlot &s) { return flow_end_reason(s, now_ns_, timeouts); }, out);
  if (counters_.active_flows <= settings_.max_flows) return;
  // Still too many: the flows idle longest make room (down to 7/8 of max).
  std::vector<uint64_t> last;
  for (const FlowSlot &s : slots_)
    if (s.state == kFlowLive) last.push_back(s.end_ns);
  const size_t excess = last.size() - settings_.max_flows / 8 * 7;
  std::nth_element(last.begin(), last.begin() + (excess - 1), last.end());
  const uint64_t cutoff = last[excess - 1];
  size_t evicted = 0;
  end_flows(
      [&](const FlowSlot &s) -> uint8_t {
        if (evicted >= excess || s.end_ns > cutoff) return 0;
        evicted++;
        return GPP_FLOW_END_NO_ROOM;
      },
      out);
}

void FlowMeter::flush(std::vector<GppFlowRecord> &out) {
  end_flows([](const FlowSlot &) -> uint8_t { return GPP_FLOW_END_FORCED; }, out);
}

void FlowMeter::rebuild() {
  std::vector<FlowSlot> fresh(slots_.size());
  const uint32_t mask = static_cast<uint32_t>(fresh.size()) - 1;
  for (const FlowSlot &s : slots_) {
    if (s.state != kFlowLive) continue;
    for (uint32_t probe = 0;; ++probe) {
      FlowSlot &d = fresh[(s.hash + probe) & mask];
      if (d.state == kFlowEmpty) {
        d = s;
        break;
      }
    }
  }
  slots_.swap(fresh);
  view_.slots = slots_.data();
  dead_slots_ = 0;
}

} // namespace gpp

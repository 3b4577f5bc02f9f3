#include "acl_rules.h"

#include "read_file.h"
#include "rule_text.h"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <map>
#include <sstream>

namespace gpp {
namespace {

std::atomic<uint64_t> next_generation{1};

// A cursor over one rule line.
struct Cursor {
  const std::string &s;
  size_t i = 0;

  void skip_space() {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  }
  bool at_end() {
    skip_space();
    return i >= s.size();
  }
  std::string word() {
    skip_space();
    const size_t start = i;
    while (i < s.size() && !std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    return s.substr(start, i - start);
  }
  bool expect(char c) {
    skip_space();
    if (i < s.size() && s[i] == c) {
      ++i;
      return true;
    }
    return false;
  }
  bool number(unsigned long max, unsigned long *out) {
    skip_space();
    if (i >= s.size() || !std::isdigit(static_cast<unsigned char>(s[i]))) return false;
    const char *begin = s.c_str() + i;
    char *end;
    errno = 0;
    // Hex with 0x (ClassBench protocols), else decimal: never octal.
    const bool hex = begin[0] == '0' && (begin[1] == 'x' || begin[1] == 'X');
    const unsigned long v = std::strtoul(begin, &end, hex ? 16 : 10);
    if (errno || v > max || end == begin) return false;
    i += end - begin;
    *out = v;
    return true;
  }
};

bool parse_prefix(const std::string &text, uint8_t *addr, uint8_t *len, uint8_t *version,
                  std::string *why) {
  const size_t slash = text.find('/');
  if (slash == std::string::npos) {
    *why = "address " + quoted(text) + " has no /prefix-length";
    return false;
  }
  const std::string a = text.substr(0, slash), l = text.substr(slash + 1);
  *version = a.find(':') != std::string::npos ? 6 : 4;
  if (inet_pton(*version == 4 ? AF_INET : AF_INET6, a.c_str(), addr) != 1) {
    *why = quoted(a) + " is not an IPv" + std::to_string(*version) + " address";
    return false;
  }
  char *end;
  errno = 0;
  const unsigned long bits = std::strtoul(l.c_str(), &end, 10);
  const unsigned long max = *version == 4 ? 32 : 128;
  if (l.empty() || !std::isdigit(static_cast<unsigned char>(l[0])) || *end || errno || bits > max) {
    *why = "prefix length " + quoted(l) + " is not 0.." + std::to_string(max);
    return false;
  }
  *len = static_cast<uint8_t>(bits);
  return true;
}

// FLAGS/MASK as ClassBench writes it: two hex numbers, e.g. 0x1000/0x1000.
bool is_flags_field(const std::string &w) {
  const size_t slash = w.find('/');
  if (slash == std::string::npos || w.find('/', slash + 1) != std::string::npos) return false;
  for (const std::string &part : {w.substr(0, slash), w.substr(slash + 1)}) {
    size_t i = part.compare(0, 2, "0x") == 0 || part.compare(0, 2, "0X") == 0 ? 2 : 0;
    if (i == part.size()) return false;
    for (; i < part.size(); ++i)
      if (!std::isxdigit(static_cast<unsigned char>(part[i]))) return false;
  }
  return true;
}

bool parse_rule(const std::string &line, ParsedAclRule *rule, std::string *why) {
  Cursor c{line};
  std::string src = c.word();
  if (src.empty() || src[0] != '@') {
    *why = "a rule starts with '@', not " + quoted(src, 16);
    return false;
  }
  uint8_t src_version, dst_version;
  if (!parse_prefix(src.substr(1), rule->src, &rule->src_len, &src_version, why)) return false;
  if (!parse_prefix(c.word(), rule->dst, &rule->dst_len, &dst_version, why)) return false;
  if (src_version != dst_version) {
    *why = "source and destination are of different IP versions";
    return false;
  }
  rule->ip_version = src_version;
  unsigned long v[4];
  if (!c.number(65535, &v[0]) || !c.expect(':') || !c.number(65535, &v[1]) ||
      !c.number(65535, &v[2]) || !c.expect(':') || !c.number(65535, &v[3])) {
    *why = "expected port ranges \"LO : HI  LO : HI\" (0..65535, decimal or 0x hex as "
           "test-acl reads them)";
    return false;
  }
  if (v[0] > v[1] || v[2] > v[3]) {
    *why = "a port range ends before it starts";
    return false;
  }
  rule->sport_lo = static_cast<uint16_t>(v[0]);
  rule->sport_hi = static_cast<uint16_t>(v[1]);
  rule->dport_lo = static_cast<uint16_t>(v[2]);
  rule->dport_hi = static_cast<uint16_t>(v[3]);
  unsigned long proto, mask;
  if (!c.number(255, &proto) || !c.expect('/') || !c.number(255, &mask) ||
      (c.i < line.size() && !std::isspace(static_cast<unsigned char>(line[c.i])))) {
    *why = "expected PROTO/MASK (numbers 0..255) followed by a space or the end of the line";
    return false;
  }
  rule->proto = static_cast<uint8_t>(proto);
  rule->proto_mask = static_cast<uint8_t>(mask);
  while (!c.at_end()) {
    const std::string w = c.word();
    if (w == "allow") {
      rule->action = GPP_ACL_ALLOW;
    } else if (w == "drop") {
      rule->action = GPP_ACL_DROP;
    } else if (is_flags_field(w)) {
      continue; // FLAGS/MASK: accepted, not matched (as DPDK test-acl)
    } else {
      *why = "unexpected " + quoted(w) + " (an action is \"allow\" or \"drop\")";
      return false;
    }
    if (!c.at_end()) {
      *why = "text after the action";
      return false;
    }
  }
  return true;
}

size_t align16(size_t n) { return (n + 15) / 16 * 16; }

// The bitmap index of a long slot (acl.h): appended to `words`; returns
// 1 + its offset there, for AclSlot::index.
uint32_t build_slot_index(const std::vector<ParsedAclRule> &rules, const uint32_t *slot_rules,
                          uint32_t count, std::vector<uint32_t> &words) {
  const uint32_t row_words = (count + 31) / 32;
  // Elementary intervals of one port field: every range starts or ends at a bound.
  auto bounds_of = [&](bool source) {
    std::vector<uint32_t> b{0};
    for (uint32_t i = 0; i < count; ++i) {
      const ParsedAclRule &r = rules[slot_rules[i]];
      b.push_back(source ? r.sport_lo : r.dport_lo);
      const uint32_t after = (source ? r.sport_hi : r.dport_hi) + 1u;
      if (after <= 65535) b.push_back(after);
    }
    std::sort(b.begin(), b.end());
    b.erase(std::unique(b.begin(), b.end()), b.end());
    return b;
  };
  const std::vector<uint32_t> sb = bounds_of(true), db = bounds_of(false);
  const uint32_t at = static_cast<uint32_t>(words.size());
  AclSlotIndex x{};
  x.words = row_words;
  x.sport_bounds = at + static_cast<uint32_t>((sizeof x + 3) / 4);
  x.sport_count = static_cast<uint32_t>(sb.size());
  x.dport_bounds = x.sport_bounds + x.sport_count;
  x.dport_count = static_cast<uint32_t>(db.size());
  x.rows = x.dport_bounds + x.dport_count;
  words.resize(x.rows + (x.sport_count + x.dport_count + 256) * row_words, 0);
  std::memcpy(words.data() + at, &x, sizeof x);
  std::copy(sb.begin(), sb.end(), words.begin() + x.sport_bounds);
  std::copy(db.begin(), db.end(), words.begin() + x.dport_bounds);
  for (uint32_t i = 0; i < count; ++i) {
    const ParsedAclRule &r = rules[slot_rules[i]];
    const uint32_t bit = 1u << (i % 32), word = i / 32;
    for (uint32_t k = 0; k < x.sport_count; ++k)
      if (sb[k] >= r.sport_lo && sb[k] <= r.sport_hi) words[x.rows + k * row_words + word] |= bit;
    for (uint32_t k = 0; k < x.dport_count; ++k)
      if (db[k] >= r.dport_lo && db[k] <= r.dport_hi)
        words[x.rows + (x.sport_count + k) * row_words + word] |= bit;
    for (uint32_t proto = 0; proto < 256; ++proto)
      if ((proto & r.proto_mask) == (r.proto & r.proto_mask))
        words[x.rows + (x.sport_count + x.dport_count + proto) * row_words + word] |= bit;
  }
  return at + 1;
}

void build_blob(AclRuleSet &set) {
  // Group rules by tuple, and inside a tuple by masked address pair.
  using Key = std::array<uint8_t, 32>;
  struct TupleBuild {
    uint8_t version, src_len, dst_len;
    uint32_t min_rule;
    std::map<Key, std::vector<uint32_t>> groups;
  };
  std::map<std::array<uint8_t, 3>, TupleBuild> by_tuple;
  for (uint32_t idx = 0; idx < set.rules.size(); ++idx) {
    const ParsedAclRule &r = set.rules[idx];
    const int addr_len = r.ip_version == 4 ? 4 : 16;
    const uint8_t src_len = acl_coarse_length(r.src_len, r.ip_version);
    const uint8_t dst_len = acl_coarse_length(r.dst_len, r.ip_version);
    auto &t = by_tuple.try_emplace({r.ip_version, src_len, dst_len},
                                   TupleBuild{r.ip_version, src_len, dst_len, idx, {}})
                  .first->second;
    Key key{};
    acl_mask(r.src, src_len, addr_len, key.data());
    acl_mask(r.dst, dst_len, addr_len, key.data() + 16);
    t.groups[key].push_back(idx); // ascending: rules are visited in order
  }
  std::vector<TupleBuild *> order;
  for (auto &kv : by_tuple) order.push_back(&kv.second);
  std::sort(order.begin(), order.end(),
            [](const TupleBuild *a, const TupleBuild *b) { return a->min_rule < b->min_rule; });

  std::vector<AclTuple> tuples;
  std::vector<AclSlot> slots;
  std::vector<uint8_t> tags; // parallel to slots
  std::vector<uint32_t> entries;
  std::vector<uint32_t> index_words;
  for (TupleBuild *t : order) {
    // At most a quarter full: a GPU thread waits a memory round trip per
    // slot it probes, and a miss probes to the next empty one.
    uint32_t size = 4;
    while (size < 4 * t->groups.size()) size *= 2;
    AclTuple tuple{};
    tuple.ip_version = t->version;
    tuple.src_len = t->src_len;
    tuple.dst_len = t->dst_len;
    tuple.min_rule = t->min_rule;
    tuple.slot_offset = static_cast<uint32_t>(slots.size());
    tuple.slot_mask = size - 1;
    slots.resize(slots.size() + size, AclSlot{});
    tags.resize(slots.size(), 0);
    const int addr_len = t->version == 4 ? 4 : 16;
    for (const auto &g : t->groups) {
      const uint32_t hash = acl_hash(g.first.data(), g.first.data() + 16, addr_len);
      uint32_t i = hash & tuple.slot_mask;
      while (slots[tuple.slot_offset + i].count != 0) i = (i + 1) & tuple.slot_mask;
      tags[tuple.slot_offset + i] = acl_slot_tag(hash);
      AclSlot &slot = slots[tuple.slot_offset + i];
      std::memcpy(slot.src, g.first.data(), 16);
      std::memcpy(slot.dst, g.first.data() + 16, 16);
      slot.first = static_cast<uint32_t>(entries.size());
      slot.count = static_cast<uint32_t>(g.second.size());
      entries.insert(entries.end(), g.second.begin(), g.second.end());
      if (slot.count >= kAclIndexMinRules)
        slot.index = build_slot_index(set.rules, g.second.data(), slot.count, index_words);
    }
    tuples.push_back(tuple);
  }

  std::vector<AclRule> rules;
  for (const ParsedAclRule &p : set.rules) {
    AclRule r{};
    r.sport_lo = p.sport_lo;
    r.sport_hi = p.sport_hi;
    r.dport_lo = p.dport_lo;
    r.dport_hi = p.dport_hi;
    r.proto = p.proto;
    r.proto_mask = p.proto_mask;
    r.action = p.action;
    r.src_len = p.src_len;
    r.dst_len = p.dst_len;
    const int addr_len = p.ip_version == 4 ? 4 : 16;
    acl_mask(p.src, p.src_len, addr_len, r.src);
    acl_mask(p.dst, p.dst_len, addr_len, r.dst);
    rules.push_back(r);
  }
  AclBlobHeader h{};
  h.magic = kAclBlobMagic;
  h.rule_count = static_cast<uint32_t>(rules.size());
  h.tuple_count = static_cast<uint32_t>(tuples.size());
  h.rules_offset = static_cast<uint32_t>(align16(sizeof h));
  h.tuples_offset = static_cast<uint32_t>(align16(h.rules_offset + rules.size() * sizeof(AclRule)));
  h.slots_offset = static_cast<uint32_t>(align16(h.tuples_offset + tuples.size() * sizeof(AclTuple)));
  h.entries_offset = static_cast<uint32_t>(align16(h.slots_offset + slots.size() * sizeof(AclSlot)));
  h.entry_rules_offset =
      static_cast<uint32_t>(align16(h.entries_offset + entries.size() * sizeof(uint32_t)));
  h.tags_offset =
      static_cast<uint32_t>(align16(h.entry_rules_offset + entries.size() * sizeof(AclRule)));
  h.index_offset = static_cast<uint32_t>(align16(h.tags_offset + tags.size()));
  h.total_size = static_cast<uint32_t>(h.index_offset + index_words.size() * sizeof(uint32_t));
  h.generation = next_generation++;
  set.blob.assign(h.total_size, 0);
  std::memcpy(set.blob.data(), &h, sizeof h);
  if (!rules.empty())
    std::memcpy(set.blob.data() + h.rules_offset, rules.data(), rules.size() * sizeof(AclRule));
  if (!tuples.empty())
    std::memcpy(set.blob.data() + h.tuples_offset, tuples.data(), tuples.size() * sizeof(AclTuple));
  if (!slots.empty())
    std::memcpy(set.blob.data() + h.slots_offset, slots.data(), slots.size() * sizeof(AclSlot));
  if (!entries.empty())
    std::memcpy(set.blob.data() + h.entries_offset, entries.data(), entries.size() * sizeof(uint32_t));
  auto *entry_rules = reinterpret_cast<AclRule *>(set.blob.data() + h.entry_rules_offset);
  for (size_t i = 0; i < entries.size(); ++i) entry_rules[i] = rules[entries[i]];
  if (!tags.empty()) std::memcpy(set.blob.data() + h.tags_offset, tags.data(), tags.size());
  if (!index_words.empty())
    std::memcpy(set.blob.data() + h.index_offset, index_words.data(),
                index_words.size() * sizeof(uint32_t));
}

} // namespace

uint32_t AclRuleSet::first_match(const GppResult &r) const {
  if (!(r.ip_flags & GPP_IP_HEADER_PARSED)) return kAclNoRule;
  const bool has_ports = (r.l4_proto == 6 || r.l4_proto == 17) && (r.ip_flags & GPP_IP_L4_PARSED);
  const uint16_t sport = has_ports ? r.sport : 0, dport = has_ports ? r.dport : 0;
  const int addr_len = r.ip_version == 4 ? 4 : 16;
  for (uint32_t i = 0; i < rules.size(); ++i) {
    const ParsedAclRule &x = rules[i];
    if (x.ip_version != r.ip_version) continue;
    uint8_t a[16], b[16], c[16], d[16];
    acl_mask(r.src, x.src_len, addr_len, a);
    acl_mask(x.src, x.src_len, addr_len, b);
    acl_mask(r.dst, x.dst_len, addr_len, c);
    acl_mask(x.dst, x.dst_len, addr_len, d);
    if (std::memcmp(a, b, addr_len) || std::memcmp(c, d, addr_len)) continue;
    if (sport < x.sport_lo || sport > x.sport_hi || dport < x.dport_lo || dport > x.dport_hi)
      continue;
    if ((r.l4_proto & x.proto_mask) != (x.proto & x.proto_mask)) continue;
    return i;
  }
  return kAclNoRule;
}

std::shared_ptr<const AclRuleSet> parse_acl_rules(const std::string &text, const std::string &name,
                                                  std::string *error) {
  auto set = std::make_shared<AclRuleSet>();
  std::string body = text;
  strip_utf8_bom(&body);
  std::istringstream in(body);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    if (line.find('\0') != std::string::npos) {
      // inet_pton and strtoul would stop at it and read a rule that is not there.
      *error = name + ":" + std::to_string(number) + ": a NUL byte in the line";
      return nullptr;
    }
    if (set->rules.size() == kMaxAclRules) {
      *error = name + ":" + std::to_string(number) + ": more than " +
               std::to_string(kMaxAclRules) + " rules";
      return nullptr;
    }
    ParsedAclRule rule;
    std::string why;
    if (!parse_rule(line.substr(first), &rule, &why)) {
      *error = name + ":" + std::to_string(number) + ": " + why;
      return nullptr;
    }
    set->rules.push_back(rule);
  }
  build_blob(*set);
  return set;
}

std::shared_ptr<const AclRuleSet> load_acl_rules(const std::string &path, std::string *error) {
  std::string text;
  if (!read_text_file(path, 256 << 20, "a rule file", &text, error)) return nullptr;
  return parse_acl_rules(text, path, error);
}

} // namespace gpp

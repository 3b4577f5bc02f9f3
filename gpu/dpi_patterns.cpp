#include "dpi_patterns.h"

#include "read_file.h"
#include "rule_text.h"
#include "worker_pool.h"

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <sstream>
#include <thread>

namespace gpp {
namespace {

std::atomic<uint64_t> next_generation{1};

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// Decodes `|41 42|` hex runs (and, in rule contents, backslash escapes).
bool decode(const std::string &in, bool backslash_escapes, std::string *out, std::string *why) {
  out->clear();
  for (size_t i = 0; i < in.size(); ++i) {
    const char c = in[i];
    if (backslash_escapes && c == '\\') {
      if (i + 1 == in.size()) {
        *why = "a backslash ends the content";
        return false;
      }
      out->push_back(in[++i]);
    } else if (c == '|') {
      const size_t end = in.find('|', i + 1);
      if (end == std::string::npos) {
        *why = "unterminated |hex| run";
        return false;
      }
      std::string digits;
      for (size_t j = i + 1; j < end; ++j)
        if (!std::isspace(static_cast<unsigned char>(in[j]))) digits.push_back(in[j]);
      if (digits.size() % 2 != 0) {
        *why = "odd number of hex digits in " + quoted("|" + in.substr(i + 1, end - i - 1) + "|");
        return false;
      }
      for (size_t j = 0; j < digits.size(); j += 2) {
        const int hi = hex_value(digits[j]), lo = hex_value(digits[j + 1]);
        if (hi < 0 || lo < 0) {
          *why = "bad hex digits in " + quoted("|" + in.substr(i + 1, end - i - 1) + "|");
          return false;
        }
        out->push_back(static_cast<char>(hi * 16 + lo));
      }
      i = end;
    } else {
      out->push_back(c);
    }
  }
  return true;
}

// The rule actions of Snort and Suricata, which write them in lower case.
constexpr const char *kRuleActions[] = {"alert", "drop", "pass", "reject", "log"};

// The first word of a line, up to a space or tab.
std::string first_word(const std::string &line) {
  return line.substr(0, line.find_first_of(" \t"));
}

bool is_rule(const std::string &line) {
  const std::string w = first_word(line);
  if (w.size() == line.size()) return false; // a lone word is a pattern
  for (const char *action : kRuleActions)
    if (w == action) return true;
  return false;
}

// A line that starts like a rule with its action in another case ("Alert
// tcp ..."): Suricata refuses it; read as a literal it would be a silent
// mistake.
bool miscased_rule(const std::string &line) {
  const std::string w = first_word(line);
  if (w.size() == line.size()) return false;
  for (const char *action : kRuleActions)
    if (w.size() == std::strlen(action) && w != action &&
        std::equal(w.begin(), w.end(), action, [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) == b;
        }))
      return true;
  return false;
}

std::string trim(const std::string &s) {
  const size_t a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  const size_t b = s.find_last_not_of(" \t");
  return s.substr(a, b - a + 1);
}

// One content of a rule, as its options describe it.
struct RuleContent {
  DpiPattern pattern;
  bool negated = false;
  bool fast_pattern = false;
  size_t fast_offset = 0, fast_length = std::string::npos; // the slice fast_pattern names
};

// Parses `fast_pattern`'s value: empty or "only" (the whole content), or
// "OFFSET,LENGTH" (that slice of it, Suricata's "chop" form).
bool apply_fast_pattern(const std::string &value, RuleContent *content, std::string *why) {
  content->fast_pattern = true;
  if (value.empty() || value == "only") return true;
  const size_t comma = value.find(',');
  char *end = nullptr;
  const std::string off_text = trim(value.substr(0, comma));
  const std::string len_text = comma == std::string::npos ? "" : trim(value.substr(comma + 1));
  const unsigned long off = std::strtoul(off_text.c_str(), &end, 10);
  const bool off_ok = !off_text.empty() && *end == '\0' && std::isdigit(static_cast<unsigned char>(off_text[0]));
  const unsigned long len = std::strtoul(len_text.c_str(), &end, 10);
  const bool len_ok = !len_text.empty() && *end == '\0' && std::isdigit(static_cast<unsigned char>(len_text[0]));
  const std::string &bytes = content->pattern.bytes;
  if (!off_ok || !len_ok || len == 0 || off > bytes.size() || len > bytes.size() - off) {
    *why = quoted("fast_pattern:" + value) + " is not \"only\" or OFFSET,LENGTH inside its " +
           std::to_string(bytes.size()) + "-byte content";
    return false;
  }
  content->fast_offset = off;
  content->fast_length = len;
  return true;
}

// The contents of one rule, in order, with their modifiers, and its sid.
bool parse_rule_contents(const std::string &line, std::vector<RuleContent> *out, uint32_t *sid,
                         std::string *why) {
  const size_t open = line.find('(');
  if (open == std::string::npos) {
    *why = "a rule without an option list";
    return false;
  }
  // Split the options at ';' outside quotes; backslash escapes stay in place.
  std::vector<std::string> options;
  std::string current;
  bool quoted = false;
  for (size_t i = open + 1; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '\\' && i + 1 < line.size()) {
      current.push_back(c);
      current.push_back(line[++i]);
    } else if (c == '"') {
      quoted = !quoted;
      current.push_back(c);
    } else if (c == ';' && !quoted) {
      options.push_back(trim(current));
      current.clear();
    } else {
      current.push_back(c);
    }
  }
  if (quoted) {
    *why = "unterminated quoted string";
    return false;
  }
  // The text after the last ';' must be only the closing parenthesis.
  const std::string rest = trim(current);
  if (!rest.empty() && rest != ")") {
    *why = "option " + gpp::quoted(rest) + " is not ended by ';'";
    return false;
  }
  *sid = 0;
  for (const std::string &opt : options) {
    const size_t colon = opt.find(':');
    const std::string key = trim(opt.substr(0, colon));
    const std::string value = colon == std::string::npos ? "" : trim(opt.substr(colon + 1));
    if (key == "content") {
      RuleContent c;
      std::string quoted_value = value;
      c.negated = !quoted_value.empty() && quoted_value[0] == '!';
      if (c.negated) quoted_value = trim(quoted_value.substr(1));
      if (quoted_value.size() < 2 || quoted_value.front() != '"' || quoted_value.back() != '"') {
        *why = "content is not a quoted string: " + gpp::quoted(opt);
        return false;
      }
      if (!decode(quoted_value.substr(1, quoted_value.size() - 2), true, &c.pattern.bytes, why))
        return false;
      if (c.pattern.bytes.empty()) {
        *why = "empty content";
        return false;
      }
      out->push_back(c);
    } else if (key == "nocase" || key == "fast_pattern") {
      // Modifiers of the content before them.
      if (out->empty()) {
        *why = key + " before any content";
        return false;
      }
      if (key == "nocase") out->back().pattern.nocase = true;
      else if (!apply_fast_pattern(value, &out->back(), why)) return false;
    } else if (key == "sid") {
      char *end = nullptr;
      const unsigned long n = std::strtoul(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || n > 0xffffffffu) {
        *why = gpp::quoted("sid:" + value) + " is not a number";
        return false;
      }
      *sid = static_cast<uint32_t>(n);
    }
  }
  for (RuleContent &c : *out) c.pattern.sid = *sid;
  return true;
}

// The patterns a rule gives under `select`.
void select_patterns(const std::vector<RuleContent> &contents, DpiSelect select,
                     std::vector<DpiPattern> *patterns) {
  if (select == DpiSelect::All) {
    for (const RuleContent &c : contents)
      if (!c.negated) patterns->push_back(c.pattern);
    return;
  }
  const RuleContent *chosen = nullptr;
  for (const RuleContent &c : contents) {
    if (c.negated) continue;
    if (c.fast_pattern) {
      chosen = &c;
      break;
    }
    if (!chosen || c.pattern.bytes.size() > chosen->pattern.bytes.size()) chosen = &c;
  }
  if (!chosen) return;
  patterns->push_back(chosen->pattern);
  patterns->back().bytes = chosen->pattern.bytes.substr(chosen->fast_offset, chosen->fast_length);
}

// One automaton over the patterns of one kind (dpi.h): their first
// kDpiPrefixBytes bytes; patterns longer than that are candidates of the
// state their prefix ends in, whose tail trie holds the rest of them.
struct Automaton {
  std::vector<std::array<uint32_t, 256>> next;
  std::vector<uint32_t> count;
  std::vector<int32_t> min_id;
  std::vector<std::pair<uint32_t, uint32_t>> candidates; // (state, pattern id), by state
  // next, count and min_id are in build order; the blob numbers states
  // breadth-first: its state i is build state order[i], build state s is renumber[s].
  std::vector<uint32_t> order, renumber;
};

bool build_automaton(const std::vector<DpiPattern> &patterns, bool nocase, Automaton *am,
                     std::string *why) {
  constexpr uint32_t kNone = 0xffffffffu;
  // Room for every state the prefixes can need, reserved at once: growing a
  // vector of 1 KiB rows copied them again and again (a fifth of the load
  // time of ET Open 2024).  Pages not reached are never touched.
  size_t most_states = 1;
  for (const DpiPattern &p : patterns)
    if (p.nocase == nocase) most_states += std::min<size_t>(p.bytes.size(), kDpiPrefixBytes);
  std::vector<std::array<uint32_t, 256>> go;
  go.reserve(std::min<size_t>(most_states, kMaxDpiStates));
  go.emplace_back();
  go[0].fill(kNone);
  std::vector<uint32_t> count(1, 0);
  std::vector<int32_t> min_id(1, -1);
  bool any = false;
  for (size_t id = 0; id < patterns.size(); ++id) {
    if (patterns[id].nocase != nocase) continue;
    any = true;
    uint32_t s = 0;
    const std::string &bytes = patterns[id].bytes;
    for (unsigned char raw : bytes.substr(0, kDpiPrefixBytes)) {
      const uint8_t c = dpi_fold(raw, nocase);
      if (go[s][c] == kNone) {
        if (go.size() == kMaxDpiStates) {
          *why = "the patterns need more than " + std::to_string(kMaxDpiStates) +
                 std::string(nocase ? " nocase" : " case-sensitive") +
                 " automaton states; the limit is reached at the pattern of " +
                 (patterns[id].where.empty() ? "pattern " + std::to_string(id) : patterns[id].where);
          return false;
        }
        go[s][c] = static_cast<uint32_t>(go.size());
        go.emplace_back();
        go.back().fill(kNone);
        count.push_back(0);
        min_id.push_back(-1);
      }
      s = go[s][c];
    }
    if (bytes.size() > kDpiPrefixBytes) {
      am->candidates.emplace_back(s, static_cast<uint32_t>(id));
      continue;
    }
    count[s]++;
    if (min_id[s] < 0 || static_cast<int32_t>(id) < min_id[s]) min_id[s] = static_cast<int32_t>(id);
  }
  // Candidates sit only at depth kDpiPrefixBytes, so no dictionary-suffix
  // state of another state has any: they need no propagation below.
  if (!any) return true; // leave am empty: no automaton of this kind
  // Breadth-first: failure links, then the full transition table.
  std::vector<uint32_t> fail(go.size(), 0);
  std::deque<uint32_t> queue;
  for (int c = 0; c < 256; ++c) {
    if (go[0][c] == kNone) {
      go[0][c] = 0;
    } else {
      fail[go[0][c]] = 0;
      queue.push_back(go[0][c]);
    }
  }
  // Breadth-first order, root first: states are renumbered in it below.
  std::vector<uint32_t> order{0};
  order.reserve(go.size());
  while (!queue.empty()) {
    const uint32_t s = queue.front();
    queue.pop_front();
    order.push_back(s);
    const uint32_t f = fail[s];
    count[s] += count[f];
    if (min_id[f] >= 0 && (min_id[s] < 0 || min_id[f] < min_id[s])) min_id[s] = min_id[f];
    for (int c = 0; c < 256; ++c) {
      const uint32_t t = go[s][c];
      if (t == kNone) {
        go[s][c] = go[f][c];
      } else {
        fail[t] = go[f][c];
        queue.push_back(t);
      }
    }
  }
  // Renumbered breadth-first (build_blob writes state `i` from order[i]):
  // the shallow states, where nearly every walk spends nearly every step,
  // then share a few megabytes of table at its start (cache lines and TLB
  // entries) instead of lying scattered over it.
  am->renumber.resize(go.size());
  for (uint32_t i = 0; i < order.size(); ++i) am->renumber[order[i]] = i;
  for (auto &candidate : am->candidates) candidate.first = am->renumber[candidate.first];
  std::stable_sort(am->candidates.begin(), am->candidates.end(),
                   [](const auto &a, const auto &b) { return a.first < b.first; });
  am->order = std::move(order);
  am->next = std::move(go);
  am->count = std::move(count);
  am->min_id = std::move(min_id);
  return true;
}

size_t align16(size_t n) { return (n + 15) / 16 * 16; }

// Byte classes of one automaton: class 0 for every byte no pattern uses
// (their transitions are alike in every state), one class per used byte;
// for nocase, upper-case letters share their lower-case letter's class.
uint32_t byte_classes(const std::vector<DpiPattern> &patterns, bool nocase, uint8_t *byte_class) {
  std::array<bool, 256> used{};
  for (const DpiPattern &p : patterns)
    if (p.nocase == nocase)
      for (unsigned char c : p.bytes) used[dpi_fold(c, nocase)] = true;
  const size_t used_count = std::count(used.begin(), used.end(), true);
  uint32_t classes = used_count == 256 ? 0 : 1; // all bytes used: no shared class 0
  for (int c = 0; c < 256; ++c) byte_class[c] = used[c] ? static_cast<uint8_t>(classes++) : 0;
  if (nocase)
    for (int c = 'A'; c <= 'Z'; ++c) byte_class[c] = byte_class[c + ('a' - 'A')];
  return classes;
}

// Automata of at least this many states fill their tables on a worker pool
// (smaller ones, as the fuzzers load by the thousand, on this thread).
constexpr uint32_t kParallelFillStates = 4096;

// The tail tries of an automaton's states (dpi.h), all in one node array:
// each node's children lie together, sorted by their first byte.
struct TailTries {
  std::vector<DpiTailNode> nodes; // label_offset: into `labels` until placed in the blob
  std::vector<uint8_t> keys;      // each node's first label byte
  std::string labels;
};

// Builds the tail trie of every state of `am` with candidates into `tries`
// and sets (*roots)[state] to its root's children.  Path-compressed: a node
// ends where its tails branch or one of them ends, so the walk's cost is
// the bytes a payload shares with the tails.
void build_tail_tries(const std::vector<DpiPattern> &patterns, const Automaton &am, bool nocase,
                      TailTries *tries, std::vector<DpiTailRange> *roots) {
  struct Tail {
    std::string bytes; // after the prefix, lower-cased for nocase (as compared)
    int32_t id;
  };
  struct Pending { // a node whose children are tails[lo, hi), which share `depth` bytes
    uint32_t node;
    size_t lo, hi, depth;
  };
  std::vector<Tail> tails;
  std::deque<Pending> pending;
  // Appends the children of tails[lo, hi) beyond their common `depth` bytes
  // (each longer than that) and queues theirs.
  auto add_children = [&](size_t lo, size_t hi, size_t depth) {
    const DpiTailRange range{static_cast<uint32_t>(tries->nodes.size()), 0};
    for (size_t g = lo; g < hi;) {
      size_t h = g + 1;
      while (h < hi && tails[h].bytes[depth] == tails[g].bytes[depth]) ++h;
      // Sorted, so the group's common prefix is its first and last tails'.
      const std::string &first = tails[g].bytes, &last = tails[h - 1].bytes;
      size_t end = depth + 1;
      while (end < first.size() && end < last.size() && first[end] == last[end]) ++end;
      DpiTailNode node{};
      node.label_offset = static_cast<uint32_t>(tries->labels.size());
      node.label_length = static_cast<uint32_t>(end - depth);
      node.out_min = -1;
      size_t k = g;
      for (; k < h && tails[k].bytes.size() == end; ++k) { // sorted by id among equals
        if (node.out_count++ == 0) node.out_min = tails[k].id;
      }
      tries->labels.append(first, depth, end - depth);
      tries->keys.push_back(static_cast<uint8_t>(first[depth]));
      if (k < h) pending.push_back({static_cast<uint32_t>(tries->nodes.size()), k, h, end});
      tries->nodes.push_back(node);
      g = h;
    }
    return DpiTailRange{range.first, static_cast<uint32_t>(tries->nodes.size()) - range.first};
  };
  const auto &c = am.candidates; // by state
  for (size_t g = 0; g < c.size();) {
    const uint32_t state = c[g].first;
    tails.clear();
    for (; g < c.size() && c[g].first == state; ++g) {
      std::string bytes = patterns[c[g].second].bytes.substr(kDpiPrefixBytes);
      for (char &ch : bytes) ch = static_cast<char>(dpi_fold(static_cast<uint8_t>(ch), nocase));
      tails.push_back({std::move(bytes), static_cast<int32_t>(c[g].second)});
    }
    std::sort(tails.begin(), tails.end(), [](const Tail &x, const Tail &y) {
      return x.bytes != y.bytes ? x.bytes < y.bytes : x.id < y.id;
    });
    (*roots)[state] = add_children(0, tails.size(), 0);
    for (; !pending.empty(); pending.pop_front()) {
      const Pending p = pending.front();
      tries->nodes[p.node].children = add_children(p.lo, p.hi, p.depth);
    }
  }
}

bool build_blob(DpiPatternSet &set, std::string *why) {
  // The two automata are independent: the nocase one is built on a second
  // thread (a large rule set loads in about half the time).
  Automaton am[kDpiAutomata];
  std::string nocase_why;
  bool nocase_ok = false;
  std::thread nocase([&] { nocase_ok = build_automaton(set.patterns, true, &am[1], &nocase_why); });
  const bool case_ok = build_automaton(set.patterns, false, &am[0], why);
  nocase.join();
  if (!case_ok) return false;
  if (!nocase_ok) {
    *why = nocase_why;
    return false;
  }
  TailTries tries;
  std::vector<DpiTailRange> roots[kDpiAutomata];
  for (int a = 0; a < kDpiAutomata; ++a) {
    roots[a].assign(am[a].next.size(), DpiTailRange{0, 0});
    build_tail_tries(set.patterns, am[a], a == 1, &tries, &roots[a]);
  }
  DpiBlobHeader h{};
  h.magic = kDpiBlobMagic;
  h.pattern_count = static_cast<uint32_t>(set.patterns.size());
  for (const DpiPattern &p : set.patterns) {
    h.max_pattern_length = std::max<uint32_t>(h.max_pattern_length,
                                              static_cast<uint32_t>(p.bytes.size()));
    if (p.bytes.size() > kDpiPrefixBytes) h.long_count++;
  }
  h.depth = std::min(h.max_pattern_length, kDpiPrefixBytes);
  h.generation = next_generation++;
  size_t offset = align16(sizeof h);
  h.tail_node_count = static_cast<uint32_t>(tries.nodes.size());
  h.tail_nodes_offset = static_cast<uint32_t>(offset);
  offset = align16(offset + tries.nodes.size() * sizeof(DpiTailNode));
  h.tail_keys_offset = static_cast<uint32_t>(offset);
  offset = align16(offset + tries.keys.size());
  const size_t labels_offset = offset;
  offset = align16(offset + tries.labels.size());
  for (int a = 0; a < kDpiAutomata; ++a) {
    const size_t states = am[a].next.size();
    DpiAutomaton &d = h.automata[a];
    d.states = static_cast<uint32_t>(states);
    d.classes = states ? byte_classes(set.patterns, a == 1, d.byte_class) : 0;
    d.entry_bytes = states < kDpiMaxStates16 ? 2 : 4;
    d.nocase = a == 1;
    d.next_offset = static_cast<uint32_t>(offset);
    offset = align16(offset + states * d.classes * d.entry_bytes);
    d.out_count_offset = static_cast<uint32_t>(offset);
    offset = align16(offset + states * sizeof(uint32_t));
    d.out_min_offset = static_cast<uint32_t>(offset);
    offset = align16(offset + states * sizeof(int32_t));
    d.tails_offset = static_cast<uint32_t>(offset);
    offset = align16(offset + states * sizeof(DpiTailRange));
  }
  if (offset > 0xffffffffu) {
    *why = "the automata exceed 4 GiB";
    return false;
  }
  h.total_size = static_cast<uint32_t>(offset);
  set.blob.assign(offset, 0);
  std::memcpy(set.blob.data(), &h, sizeof h);
  for (DpiTailNode &node : tries.nodes) node.label_offset += static_cast<uint32_t>(labels_offset);
  if (!tries.nodes.empty()) {
    std::memcpy(set.blob.data() + h.tail_nodes_offset, tries.nodes.data(),
                tries.nodes.size() * sizeof(DpiTailNode));
    std::memcpy(set.blob.data() + h.tail_keys_offset, tries.keys.data(), tries.keys.size());
    std::memcpy(set.blob.data() + labels_offset, tries.labels.data(), tries.labels.size());
  }
  // Each state's tail trie, by its blob number.
  for (int a = 0; a < kDpiAutomata; ++a) {
    auto *ranges = reinterpret_cast<DpiTailRange *>(set.blob.data() + h.automata[a].tails_offset);
    for (uint32_t s = 0; s < h.automata[a].states; ++s) ranges[s] = roots[a][s];
  }
  std::unique_ptr<WorkerPool> pool; // made for large sets only
  for (int a = 0; a < kDpiAutomata; ++a) {
    const DpiAutomaton &d = h.automata[a];
    if (!d.states) continue;
    // Compress each 256-wide row: a class's transition is its bytes' (alike).
    // The entry's top bit flags a target state with output.
    const uint32_t output_flag = d.entry_bytes == 2 ? 0x8000u : 0x80000000u;
    uint8_t *table = set.blob.data() + d.next_offset;
    const auto *tails = reinterpret_cast<const DpiTailRange *>(set.blob.data() + d.tails_offset);
    // Each state's table entry as a target, by its number while built (one
    // lookup per transition below instead of three scattered ones).
    std::vector<uint32_t> entry_of(am[a].next.size());
    for (size_t old_id = 0; old_id < entry_of.size(); ++old_id) {
      const uint32_t to = am[a].renumber[old_id];
      entry_of[old_id] = to | (am[a].count[old_id] || tails[to].count ? output_flag : 0);
    }
    auto fill_rows = [&](uint32_t first, uint32_t last) {
      for (uint32_t s = first; s < last; ++s)
        for (int c = 0; c < 256; ++c) {
          if (a == 1 && c >= 'A' && c <= 'Z') continue; // folded: their class is a letter's
          const uint32_t entry = entry_of[am[a].next[am[a].order[s]][c]];
          const size_t at = static_cast<size_t>(s) * d.classes + d.byte_class[c];
          if (d.entry_bytes == 2) {
            const uint16_t e16 = static_cast<uint16_t>(entry);
            std::memcpy(table + 2 * at, &e16, 2);
          } else {
            std::memcpy(table + 4 * at, &entry, 4);
          }
        }
    };
    // Rows are independent: a large set's (tens of thousands of states,
    // most of its load time in scattered reads) fill on every core.
    if (d.states < kParallelFillStates) {
      fill_rows(0, d.states);
    } else {
      if (!pool) pool = std::make_unique<WorkerPool>(0);
      pool->run_ranges(d.states, fill_rows);
    }
    auto *count = reinterpret_cast<uint32_t *>(set.blob.data() + d.out_count_offset);
    auto *min_id = reinterpret_cast<int32_t *>(set.blob.data() + d.out_min_offset);
    for (uint32_t s = 0; s < d.states; ++s) {
      count[s] = am[a].count[am[a].order[s]];
      min_id[s] = am[a].min_id[am[a].order[s]];
    }
  }
  return true;
}

} // namespace

void DpiPatternSet::naive_scan(const uint8_t *payload, uint32_t len, int32_t *pattern,
                               uint32_t *hits) const {
  *pattern = -1;
  *hits = 0;
  for (size_t id = 0; id < patterns.size(); ++id) {
    const DpiPattern &p = patterns[id];
    if (p.bytes.size() > len) continue;
    for (size_t at = 0; at + p.bytes.size() <= len; ++at) {
      bool match = true;
      for (size_t k = 0; k < p.bytes.size() && match; ++k) {
        unsigned char a = payload[at + k], b = static_cast<unsigned char>(p.bytes[k]);
        if (p.nocase) { // ASCII letters only, as dpi_scan
          if (a >= 'A' && a <= 'Z') a = static_cast<unsigned char>(a + ('a' - 'A'));
          if (b >= 'A' && b <= 'Z') b = static_cast<unsigned char>(b + ('a' - 'A'));
        }
        match = a == b;
      }
      if (match) {
        if (*hits != 0xffffffffu) ++*hits; // saturates, as dpi_scan
        if (*pattern < 0) *pattern = static_cast<int32_t>(id);
      }
    }
  }
}

const char *dpi_select_name(DpiSelect select) {
  return select == DpiSelect::FastPattern ? "fast-pattern" : "all";
}

bool dpi_select_from_name(const std::string &name, DpiSelect *select) {
  for (DpiSelect s : {DpiSelect::All, DpiSelect::FastPattern})
    if (name == dpi_select_name(s)) {
      *select = s;
      return true;
    }
  return false;
}

namespace {

// Adds the patterns of one file's text to `set`.
bool collect_patterns(const std::string &text, const std::string &name, DpiSelect select,
                      DpiPatternSet *set, std::string *error) {
  std::string body = text;
  strip_utf8_bom(&body);
  std::istringstream in(body);
  std::string line;
  std::vector<RuleContent> contents;
  for (int number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string t = trim(line);
    if (t.empty() || t[0] == '#') continue;
    std::string why;
    if (miscased_rule(t)) {
      *error = name + ":" + std::to_string(number) + ": rule actions are lower case (" +
               quoted(first_word(t), 16) + "); as a pattern line, write its first byte as hex";
      return false;
    }
    if (is_rule(t)) {
      if (t.find('\0') != std::string::npos) {
        *error = name + ":" + std::to_string(number) + ": a NUL byte in a rule";
        return false;
      }
      contents.clear();
      uint32_t sid = 0;
      if (!parse_rule_contents(t, &contents, &sid, &why)) {
        *error = name + ":" + std::to_string(number) + ": " + why;
        return false;
      }
      const size_t before = set->patterns.size();
      select_patterns(contents, select, &set->patterns);
      for (size_t k = before; k < set->patterns.size(); ++k)
        set->patterns[k].where = name + ":" + std::to_string(number);
    } else {
      DpiPattern p;
      if (!decode(line, false, &p.bytes, &why) || (p.bytes.empty() && (why = "empty pattern", true))) {
        *error = name + ":" + std::to_string(number) + ": " + why;
        return false;
      }
      p.where = name + ":" + std::to_string(number);
      set->patterns.push_back(p);
    }
    if (set->patterns.size() > kMaxDpiPatterns) {
      *error = name + ":" + std::to_string(number) + ": more than " +
               std::to_string(kMaxDpiPatterns) + " patterns";
      return false;
    }
  }
  return true;
}

std::shared_ptr<const DpiPatternSet> built(std::shared_ptr<DpiPatternSet> set,
                                           const std::string &name, std::string *error) {
  std::string why;
  if (!build_blob(*set, &why)) {
    *error = name + ": " + why;
    return nullptr;
  }
  return set;
}

constexpr std::streamoff kMaxPatternText = 64 << 20; // all files of one set together

} // namespace

std::shared_ptr<const DpiPatternSet> parse_dpi_patterns(const std::string &text,
                                                        const std::string &name,
                                                        std::string *error, DpiSelect select) {
  auto set = std::make_shared<DpiPatternSet>();
  if (!collect_patterns(text, name, select, set.get(), error)) return nullptr;
  return built(std::move(set), name, error);
}

std::shared_ptr<const DpiPatternSet> load_dpi_patterns(const std::string &path, std::string *error,
                                                       DpiSelect select) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    std::string text;
    if (!read_text_file(path, kMaxPatternText, "a pattern file", &text, error)) return nullptr;
    return parse_dpi_patterns(text, path, error, select);
  }
  // A rule folder: its *.rules files in name order.
  std::vector<std::string> files;
  if (!files_in(path, {".rules"}, &files, error)) return nullptr;
  if (files.empty()) {
    *error = path + ": a directory without *.rules files";
    return nullptr;
  }
  auto set = std::make_shared<DpiPatternSet>();
  std::streamoff left = kMaxPatternText;
  for (const std::string &f : files) {
    const std::string file = path + "/" + f;
    std::string text;
    if (!read_text_file(file, left, "a pattern folder's files together", &text, error) ||
        !collect_patterns(text, file, select, set.get(), error))
      return nullptr;
    left -= static_cast<std::streamoff>(text.size());
  }
  return built(std::move(set), path, error);
}

} // namespace gpp

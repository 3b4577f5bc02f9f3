// The harness's rte_acl against dpdk-test-acl (peer_test_acl.h).
#include "peer_test_acl.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <arpa/inet.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <vector>

#include "peer_rte_acl.h"
#include "read_file.h"

extern char **environ;

namespace peers {

namespace {

// A private directory under $TMPDIR (or /tmp) and the files put in it; all removed on destruction.
class TempDir {
public:
  TempDir() {
    const char *base = std::getenv("TMPDIR");
    std::string pattern = std::string(base && *base ? base : "/tmp") + "/gpupacket-peers-XXXXXX";
    std::vector<char> name(pattern.begin(), pattern.end());
    name.push_back('\0');
    if (mkdtemp(name.data())) path_ = name.data();
  }
  ~TempDir() {
    for (const std::string &f : files_) unlink(f.c_str());
    if (!path_.empty()) rmdir(path_.c_str());
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;

  bool ok() const { return !path_.empty(); }
  std::string file(const std::string &name) {
    files_.push_back(path_ + "/" + name);
    return files_.back();
  }

private:
  std::string path_;
  std::vector<std::string> files_;
};

// Rule and trace files are read by the loaders' own reader (limits, reasons).
constexpr int64_t kMaxTextBytes = 64 << 20;

bool write_text(const std::string &path, const std::string &text, std::string *error) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  f.close();
  if (!f) *error = path + ": cannot write";
  return static_cast<bool>(f);
}

// test-acl's skip_line: blank, or '#' after leading white space.
bool skipped(const std::string &line) {
  const size_t i = line.find_first_not_of(" \t\r\n\v\f");
  return i == std::string::npos || line[i] == '#';
}

// The lines test-acl reads (skipped ones left out), each as its 1-based
// number and its white-space separated words.
std::vector<std::pair<size_t, std::vector<std::string>>> data_lines(const std::string &text) {
  std::vector<std::pair<size_t, std::vector<std::string>>> out;
  std::istringstream in(text);
  size_t number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (skipped(line)) continue;
    std::istringstream words(line);
    std::vector<std::string> t;
    for (std::string w; words >> w;) t.push_back(w);
    out.emplace_back(number, std::move(t));
  }
  return out;
}

// ClassBench rule text as test-acl reads it: each rule line's first nine
// fields (addresses, port ranges, proto/mask), without the trailing flags
// column (and action, if any).  Skipped lines are dropped; test-acl numbers
// rule lines only, as gpupacket does, so numbers do not move.
bool test_acl_rules(const std::string &text, const std::string &name, std::string *out,
                    size_t *rules, std::string *error) {
  *rules = 0;
  for (const auto &[line_no, t] : data_lines(text)) {
    if (t.size() < 9 || t[0][0] != '@' || t[3] != ":" || t[6] != ":" ||
        t[0].find(':') != std::string::npos) {
      *error = name + ":" + std::to_string(line_no) + ": not an IPv4 ClassBench rule";
      return false;
    }
    *out += t[0] + '\t' + t[1] + '\t' + t[2] + " : " + t[4] + '\t' + t[5] + " : " + t[7] + '\t' + t[8] + '\n';
    ++*rules;
  }
  return true;
}

// A ClassBench trace (SRC DST SPORT DPORT PROTO FLAGS RULE, decimal): the
// 5-tuples.  Ports of protocols other than TCP/UDP are set to 0: gpupacket
// has no ports for them (acl_ports), while the generator wrote some.
bool load_trace(const std::string &path, std::vector<Tuple> *raw, std::vector<Tuple> *tuples,
                size_t *zeroed, std::string *error) {
  std::string text;
  if (!gpp::read_text_file(path, kMaxTextBytes, "a trace file", &text, error)) return false;
  *zeroed = 0;
  for (const auto &[line_no, t] : data_lines(text)) {
    unsigned long v[5];
    bool good = t.size() >= 5;
    for (int i = 0; good && i < 5; ++i) {
      char *end = nullptr;
      errno = 0;
      v[i] = std::strtoul(t[i].c_str(), &end, 10);
      good = errno == 0 && *end == '\0' && v[i] <= (i < 2 ? 0xffffffffUL : i < 4 ? 0xffffUL : 0xffUL);
    }
    if (!good) {
      *error = path + ":" + std::to_string(line_no) + ": not a ClassBench trace line";
      return false;
    }
    Tuple x{};
    x.proto = static_cast<uint8_t>(v[4]);
    x.src = htonl(static_cast<uint32_t>(v[0]));
    x.dst = htonl(static_cast<uint32_t>(v[1]));
    x.sport = htons(static_cast<uint16_t>(v[2]));
    x.dport = htons(static_cast<uint16_t>(v[3]));
    raw->push_back(x);
    if (x.proto != 6 && x.proto != 17 && (x.sport || x.dport)) {
      x.sport = x.dport = 0;
      ++*zeroed;
    }
    tuples->push_back(x);
  }
  if (tuples->empty()) *error = path + ": no trace lines";
  return !tuples->empty();
}

// test-acl's trace format: "0xSRC 0xDST SPORT DPORT PROTO".
std::string test_acl_trace(const std::vector<Tuple> &tuples) {
  std::string out;
  char line[64];
  for (const Tuple &t : tuples) {
    std::snprintf(line, sizeof line, "0x%08" PRIx32 " 0x%08" PRIx32 " %u %u %u\n", ntohl(t.src),
                  ntohl(t.dst), ntohs(t.sport), ntohs(t.dport), t.proto);
    out += line;
  }
  return out;
}

// Runs argv[0] with stdout and stderr captured; false and *error unless it exits 0.
bool run_tool(const std::vector<std::string> &args, std::string *output, std::string *error) {
  std::vector<char *> argv;
  for (const std::string &a : args) argv.push_back(const_cast<char *>(a.c_str()));
  argv.push_back(nullptr);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    *error = std::string("pipe: ") + std::strerror(errno);
    return false;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    *error = args[0] + ": cannot run: " + std::strerror(rc);
    return false;
  }
  char buf[65536];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) != 0;) {
    if (n > 0) output->append(buf, static_cast<size_t>(n));
    else if (errno != EINTR) break;
  }
  close(fds[0]);
  int status = 0;
  pid_t waited;
  while ((waited = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  if (waited < 0) {
    *error = args[0] + ": waitpid: " + std::strerror(errno);
    return false;
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return true;
  *error = args[0] + (WIFEXITED(status) ? " exited with " + std::to_string(WEXITSTATUS(status))
                                        : " died with signal " + std::to_string(WTERMSIG(status)));
  const size_t tail = output->size() > 2000 ? output->size() - 2000 : 0;
  *error += "; its output ends:\n" + output->substr(tail);
  return false;
}

// The figures of test-acl's closing line for lcore `lcore` (search_ip5tuples()).
bool parse_rate(const std::string &output, unsigned lcore, double *pps, uint64_t *packets,
                std::string *error) {
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    unsigned at = 0, iterations = 0, categories = 0;
    uint64_t cycles = 0;
    double sec = 0, per_pkt = 0, rate = 0;
    if (std::sscanf(line.c_str(),
                    "search_ip5tuples @lcore %u: %u iterations, %" SCNu64 " pkts, %u categories, "
                    "%" SCNu64 " cycles (%lf sec), %lf cycles/pkt, %lf pkt/sec",
                    &at, &iterations, packets, &categories, &cycles, &sec, &per_pkt, &rate) == 8 &&
        at == lcore) {
      *pps = rate;
      return true;
    }
  }
  *error = "no \"search_ip5tuples @lcore " + std::to_string(lcore) + ": ... pkt/sec\" line in dpdk-test-acl's output";
  return false;
}

// The "result:" line of every trace line (DUMP_PKT): test-acl prints
// results[r] - 1, i.e. the 0-based rule, 4294967295 for none.
bool parse_results(const std::string &output, size_t traces, std::vector<uint32_t> *rules,
                   std::string *error) {
  rules->assign(traces, 0);
  std::vector<bool> seen(traces);
  size_t count = 0;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    unsigned long index = 0, category = 0, result = 0;
    if (std::sscanf(line.c_str(), "ipv4_5tuple: %lu, category: %lu, result: %lu", &index, &category,
                    &result) != 3)
      continue;
    if (index == 0 || index > traces || category != 0 || seen[index - 1]) {
      *error = "unexpected dpdk-test-acl result line: " + line;
      return false;
    }
    seen[index - 1] = true;
    (*rules)[index - 1] = static_cast<uint32_t>(result);
    ++count;
  }
  if (count != traces) {
    *error = "dpdk-test-acl printed " + std::to_string(count) + " result lines for " +
             std::to_string(traces) + " trace lines";
    return false;
  }
  return true;
}

// A bound on --iter: seconds of any trace at any rate (test-acl takes up to INT32_MAX).
constexpr unsigned kMaxIterations = 100000000;

std::string rule_name(uint32_t rule) { return rule == gpp::kAclNoRule ? "none" : std::to_string(rule); }

} // namespace

bool test_acl_cross_check(WorkerPool &pool, const gpp::AclRuleSet &acl1k, const TestAclOptions &opt,
                          TestAclResult *result) {
  const std::string rules_path = opt.data_dir + "/acl/classbench_acl1_1k.rules";
  const std::string trace_path = opt.data_dir + "/acl/classbench_acl1_1k.trace";
  std::printf("\ndpdk-test-acl cross-check (%s), ClassBench acl1 1k rules and trace\n", opt.binary.c_str());
  auto fail = [](const std::string &why) {
    std::printf("FAIL: %s\n", why.c_str());
    return false;
  };

  std::string error, text, rules_text;
  size_t rule_count = 0, zeroed = 0;
  std::vector<Tuple> raw, tuples;
  if (!gpp::read_text_file(rules_path, kMaxTextBytes, "a rule file", &text, &error) ||
      !test_acl_rules(text, rules_path, &rules_text, &rule_count, &error) ||
      !load_trace(trace_path, &raw, &tuples, &zeroed, &error))
    return fail(error);
  if (rule_count != acl1k.rules.size())
    return fail(rules_path + ": " + std::to_string(rule_count) + " rule lines for test-acl but " +
                std::to_string(acl1k.rules.size()) + " rules parsed by gpupacket");
  TempDir dir;
  if (!dir.ok()) return fail(std::string("cannot make a temporary directory: ") + std::strerror(errno));
  const std::string rules_file = dir.file("acl1_1k.rules"), trace_file = dir.file("acl1_1k.trace");
  if (!write_text(rules_file, rules_text, &error) || !write_text(trace_file, test_acl_trace(tuples), &error))
    return fail(error);

  RteAcl ctx = build_rte_acl(acl1k, "gpupacket-peers-testacl", &error);
  if (!ctx) return fail(error);
  const size_t n = tuples.size();

  // Answers, untimed: test-acl's, the harness's rte_acl, gpupacket's ACL and
  // the brute-force first match, per trace line.
  const int cpu = pool.cpus().at(0);
  const std::vector<std::string> eal = {"-l", std::to_string(cpu), "--no-huge", "--no-pci", "-m", "256",
                                        "--log-level=error",
                                        // no shared runtime files or telemetry socket: runs beside
                                        // other DPDK processes (and this one) without clashing
                                        "--no-shconf", "--no-telemetry", "--"};
  auto test_acl = [&](unsigned iterations, unsigned verbose, std::string *output) {
    std::vector<std::string> args = {opt.binary};
    args.insert(args.end(), eal.begin(), eal.end());
    args.insert(args.end(), {"--rulesf=" + rules_file, "--tracef=" + trace_file,
                             "--tracenum=" + std::to_string(n), "--tracestep=64",
                             "--iter=" + std::to_string(iterations), "--verbose=" + std::to_string(verbose)});
    return run_tool(args, output, &error);
  };
  std::string output;
  std::vector<uint32_t> theirs;
  if (!test_acl(1, 2, &output) || !parse_results(output, n, &theirs, &error)) return fail(error);
  std::vector<uint32_t> harness(n), harness_raw(n);
  classify(ctx.get(), tuples.data(), 0, n, harness.data());
  classify(ctx.get(), raw.data(), 0, n, harness_raw.data());
  size_t diff_harness = 0, diff_ours = 0, diff_oracle = 0, matched = 0, moved = 0;
  for (size_t i = 0; i < n; ++i) {
    const GppResult r = record_of(tuples[i]);
    const uint32_t want = theirs[i], mine = rule_of(harness[i]);
    const uint32_t ours = gpp::acl_classify(acl1k.blob.data(), r), oracle = acl1k.first_match(r);
    moved += harness_raw[i] != harness[i];
    matched += want != gpp::kAclNoRule;
    if (mine == want && ours == want && oracle == want) continue;
    diff_harness += mine != want;
    diff_ours += ours != want;
    diff_oracle += oracle != want;
    if (diff_harness + diff_ours + diff_oracle <= 5)
      std::printf("  trace line %zu: test-acl %s, harness rte_acl %s, gpupacket %s, brute force %s\n", i + 1,
                  rule_name(want).c_str(), rule_name(mine).c_str(), rule_name(ours).c_str(),
                  rule_name(oracle).c_str());
  }
  const bool agree = diff_harness == 0 && diff_ours == 0 && diff_oracle == 0;
  result->lines = n;
  result->differences = std::max({diff_harness, diff_ours, diff_oracle});
  std::printf("  ports set to 0 on %zu trace lines of protocols without ports (as gpupacket parses them); "
              "that changes rte_acl's rule on %zu of them\n",
              zeroed, moved);
  std::printf("  answers, %zu trace lines (%zu matched): differences from test-acl: harness rte_acl %zu, "
              "gpupacket ACL %zu, brute-force first match %zu -> %s\n",
              n, matched, diff_harness, diff_ours, diff_oracle, agree ? "agree" : "DIFFER");

  // Rates: the harness's rte_acl on one worker, then test-acl on one lcore
  // of the same CPU with enough iterations for at least as long.
  const Tuple *base = tuples.data();
  const rte_acl_ctx *acx = ctx.get();
  const Point mine = pool.measure(1, n, 64, [&](unsigned, std::string *) -> Work {
    auto results = std::make_shared<std::vector<uint32_t>>(64);
    return [=](size_t first, size_t count) { classify(acx, base, first, count, results->data()); };
  }, opt.min_seconds);
  if (!mine.error.empty()) return fail("harness rte_acl: " + mine.error);
  // Iterations from the harness's rate; again, longer, if test-acl was faster
  // than that and finished early (its rate is what we compare, not its length).
  double their_pps = 0, their_seconds = 0;
  uint64_t their_packets = 0;
  unsigned iter = 0, attempts = 0;
  for (double rate = mine.rate(); their_seconds < opt.min_seconds && iter < kMaxIterations && attempts < 4;
       ++attempts) {
    const double want = std::ceil(1.2 * rate * opt.min_seconds / static_cast<double>(n));
    iter = static_cast<unsigned>(std::max(1.0, std::min(want, static_cast<double>(kMaxIterations))));
    output.clear();
    if (!test_acl(iter, 1, &output) || !parse_rate(output, static_cast<unsigned>(cpu), &their_pps, &their_packets, &error))
      return fail(error);
    their_seconds = their_pps > 0 ? their_packets / their_pps : 0;
    if (their_pps <= 0) return fail("dpdk-test-acl reported no rate");
    rate = std::max(rate * 2, their_pps);
  }
  std::printf("  dpdk-test-acl, 1 lcore (CPU %d), burst 64: %10.3f Mpps (%u iterations, %" PRIu64
              " packets, %.3f s)\n",
              cpu, their_pps / 1e6, iter, their_packets, their_seconds);
  std::printf("  harness rte_acl, 1 worker (CPU %d), burst 64: %8.3f Mpps (%" PRIu64 " packets, %.3f s)\n",
              mine.workers[0].cpu, mine.mpps(), mine.items(), mine.workers[0].seconds);
  result->test_acl_mpps = their_pps / 1e6;
  result->harness_mpps = mine.mpps();
  std::printf("  harness / dpdk-test-acl = %.3f (target on the 16-core GPU host: within 0.90 .. 1.10)\n",
              their_pps > 0 ? mine.rate() / their_pps : 0.0);
  return agree || fail("dpdk-test-acl, the harness's rte_acl and gpupacket's ACL differ on some trace lines");
}

} // namespace peers

// rte_acl configured as DPDK's app/test-acl configures it (peer_rte_acl.h).
#include "peer_rte_acl.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace peers {

namespace {

// test-acl's field and input indices (main.c: PROTO/SRC/DST/SRCP/DSTP_FIELD_IPV4
// and RTE_ACL_IPV4VLAN_*: input 1 is its unused VLAN word).
enum { PROTO, SRC, DST, SPORT, DPORT, FIELDS };
enum { INPUT_PROTO = 0, INPUT_SRC = 2, INPUT_DST = 3, INPUT_PORTS = 4 };
RTE_ACL_RULE_DEF(AclRule4, FIELDS);

const rte_acl_field_def kFieldDefs[FIELDS] = {
    {RTE_ACL_FIELD_TYPE_BITMASK, sizeof(uint8_t), PROTO, INPUT_PROTO, offsetof(Tuple, proto)},
    {RTE_ACL_FIELD_TYPE_MASK, sizeof(uint32_t), SRC, INPUT_SRC, offsetof(Tuple, src)},
    {RTE_ACL_FIELD_TYPE_MASK, sizeof(uint32_t), DST, INPUT_DST, offsetof(Tuple, dst)},
    {RTE_ACL_FIELD_TYPE_RANGE, sizeof(uint16_t), SPORT, INPUT_PORTS, offsetof(Tuple, sport)},
    {RTE_ACL_FIELD_TYPE_RANGE, sizeof(uint16_t), DPORT, INPUT_PORTS, offsetof(Tuple, dport)},
};

constexpr uint32_t kBuildCategories = 3; // test-acl's default --bldcat
constexpr uint32_t kRunCategories = 1;   // and --runcat
constexpr uint32_t kBurst = 64;          // the --tracestep the comparison uses

uint32_t load32(const uint8_t *p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

} // namespace

Tuple tuple_of(const GppResult &r) {
  const bool ports = (r.l4_proto == 6 || r.l4_proto == 17) && (r.ip_flags & GPP_IP_L4_PARSED);
  Tuple t{};
  t.proto = r.l4_proto;
  t.src = htonl(load32(r.src));
  t.dst = htonl(load32(r.dst));
  t.sport = htons(ports ? r.sport : 0);
  t.dport = htons(ports ? r.dport : 0);
  return t;
}

GppResult record_of(const Tuple &t) {
  GppResult r{};
  r.ip_version = 4;
  r.ip_flags = GPP_IP_HEADER_PARSED | GPP_IP_L4_PARSED;
  r.l4_proto = t.proto;
  std::memcpy(r.src, &t.src, 4);
  std::memcpy(r.dst, &t.dst, 4);
  r.sport = ntohs(t.sport);
  r.dport = ntohs(t.dport);
  return r;
}

RteAcl build_rte_acl(const gpp::AclRuleSet &acl, const char *name, std::string *error) {
  std::vector<AclRule4> rules;
  for (size_t i = 0; i < acl.rules.size(); ++i) {
    const gpp::ParsedAclRule &p = acl.rules[i];
    if (p.ip_version != 4) continue;
    const auto n = static_cast<uint32_t>(i + 1);
    AclRule4 r{};
    r.data.category_mask = RTE_LEN2MASK(RTE_ACL_MAX_CATEGORIES, uint32_t);
    r.data.priority = RTE_ACL_MAX_PRIORITY - static_cast<int32_t>(n);
    r.data.userdata = n;
    r.field[PROTO].value.u8 = p.proto;
    r.field[PROTO].mask_range.u8 = p.proto_mask;
    r.field[SRC].value.u32 = load32(p.src);
    r.field[SRC].mask_range.u32 = p.src_len;
    r.field[DST].value.u32 = load32(p.dst);
    r.field[DST].mask_range.u32 = p.dst_len;
    r.field[SPORT].value.u16 = p.sport_lo;
    r.field[SPORT].mask_range.u16 = p.sport_hi;
    r.field[DPORT].value.u16 = p.dport_lo;
    r.field[DPORT].mask_range.u16 = p.dport_hi;
    rules.push_back(r);
  }
  if (rules.empty()) {
    *error = std::string(name) + ": no IPv4 rules";
    return nullptr;
  }
  rte_acl_param param{};
  param.name = name;
  param.socket_id = SOCKET_ID_ANY;
  param.rule_size = RTE_ACL_RULE_SZ(FIELDS);
  param.max_rule_num = static_cast<uint32_t>(rules.size());
  RteAcl ctx(rte_acl_create(&param));
  if (!ctx) {
    *error = std::string(name) + ": rte_acl_create failed: " + rte_strerror(rte_errno);
    return nullptr;
  }
  int rc = rte_acl_add_rules(ctx.get(), reinterpret_cast<const rte_acl_rule *>(rules.data()),
                             static_cast<uint32_t>(rules.size()));
  if (rc != 0) {
    *error = std::string(name) + ": rte_acl_add_rules failed: " + rte_strerror(-rc);
    return nullptr;
  }
  rte_acl_config build{};
  build.num_categories = kBuildCategories;
  build.num_fields = FIELDS;
  std::memcpy(build.defs, kFieldDefs, sizeof kFieldDefs);
  rc = rte_acl_build(ctx.get(), &build);
  if (rc != 0) {
    *error = std::string(name) + ": rte_acl_build failed: " + rte_strerror(-rc);
    return nullptr;
  }
  return ctx;
}

void classify(const rte_acl_ctx *ctx, const Tuple *tuples, size_t first, size_t count, uint32_t *out) {
  const uint8_t *data[kBurst];
  for (size_t i = 0; i < count; i += kBurst) {
    const auto n = static_cast<uint32_t>(std::min<size_t>(kBurst, count - i));
    for (uint32_t j = 0; j < n; ++j) data[j] = reinterpret_cast<const uint8_t *>(tuples + first + i + j);
    rte_acl_classify(ctx, data, out + i, n, kRunCategories);
  }
}

} // namespace peers

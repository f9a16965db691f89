// Which resolved addresses a remote image fetch may connect to: one table per
// family, row for row from the IANA special-purpose address registries
//   IPv4: https://www.iana.org/assignments/iana-ipv4-special-registry
//   IPv6: https://www.iana.org/assignments/iana-ipv6-special-registry
// Every block the registry marks "Globally Reachable: False" is refused, and
// so are multicast (RFC 5771, RFC 4291), IPv6 site-local (RFC 3879) and all
// IPv6 space outside 2000::/3, the only global unicast allocation (IANA IPv6
// Address Space registry). Blocks that carry an IPv4 address inside an IPv6
// one (mapped, translated, NAT64, 6to4, Teredo) are judged by that IPv4
// address against the IPv4 table, since that is where the packets end up.
// Globally reachable special blocks (AS112, AMT, PCP/TURN anycast) are
// refused too where they sit inside a larger non-global block: no image is
// served from them.
#include "server/media/media.h"

#include <arpa/inet.h>

#include <array>
#include <cstring>

namespace qvl {
namespace {

struct V4Block {
  uint32_t net;  // host byte order
  int bits;
  const char* what;  // registry name and RFC, for the reader
};

constexpr std::array<V4Block, 18> kV4Refused = {{
    {0x00000000, 8, "\"this network\" (RFC 791)"},
    {0x0A000000, 8, "private use (RFC 1918)"},
    {0x64400000, 10, "shared address space, CGNAT (RFC 6598)"},
    {0x7F000000, 8, "loopback (RFC 1122)"},
    {0xA9FE0000, 16, "link local (RFC 3927)"},
    {0xAC100000, 12, "private use (RFC 1918)"},
    {0xC0000000, 24, "IETF protocol assignments, DS-Lite, NAT64 discovery (RFC 6890, 6333, 7335, 8880)"},
    {0xC0000200, 24, "documentation TEST-NET-1 (RFC 5737)"},
    {0xC0586300, 24, "deprecated 6to4 relay anycast (RFC 7526)"},
    {0xC0A80000, 16, "private use (RFC 1918)"},
    {0xC6120000, 15, "benchmarking (RFC 2544)"},
    {0xC6336400, 24, "documentation TEST-NET-2 (RFC 5737)"},
    {0xCB007100, 24, "documentation TEST-NET-3 (RFC 5737)"},
    {0xE0000000, 4, "multicast (RFC 5771)"},
    {0xF0000000, 4, "reserved for future use (RFC 1112)"},
    {0xFFFFFFFF, 32, "limited broadcast (RFC 919)"},
    // Globally reachable per the registry but anycast infrastructure, never an image host:
    {0xC01FC400, 24, "AS112-v4 (RFC 7535)"},
    {0xC0AF3000, 24, "direct delegation AS112 (RFC 7534)"},
}};

// What a matching IPv6 block means.
enum class V6Rule {
  Refuse,
  Ipv4Last32,     // the IPv4 address is the last 32 bits (mapped, translated, NAT64)
  Ipv4At16,       // 6to4: bits 16..47
  Teredo,         // the server's IPv4 at bits 32..63, the client's inverted in the last 32
  Global,         // global unicast outside every special block above it
};

struct V6Block {
  std::array<uint8_t, 16> prefix;
  int bits;
  V6Rule rule;
  const char* what;
};

constexpr std::array<uint8_t, 16> v6(std::initializer_list<uint16_t> groups) {
  std::array<uint8_t, 16> a{};
  size_t i = 0;
  for (const uint16_t g : groups) {
    a[i++] = static_cast<uint8_t>(g >> 8);
    a[i++] = static_cast<uint8_t>(g & 0xff);
  }
  return a;
}

// Checked in order: the first match decides, so more specific blocks come first.
constexpr std::array<V6Block, 19> kV6Blocks = {{
    {v6({0, 0, 0, 0, 0, 0xffff}), 96, V6Rule::Ipv4Last32, "IPv4-mapped (RFC 4291)"},
    {v6({0, 0, 0, 0, 0xffff, 0}), 96, V6Rule::Ipv4Last32, "IPv4-translated (RFC 2765)"},
    {v6({0, 0, 0, 0, 0, 0}), 96, V6Rule::Refuse, "unspecified, loopback, IPv4-compatible (RFC 4291)"},
    {v6({0x64, 0xff9b, 0, 0, 0, 0}), 96, V6Rule::Ipv4Last32, "IPv4/IPv6 translation, NAT64 (RFC 6052)"},
    {v6({0x64, 0xff9b, 1}), 48, V6Rule::Refuse, "local-use IPv4/IPv6 translation (RFC 8215)"},
    {v6({0x100, 0, 0, 0}), 64, V6Rule::Refuse, "discard-only (RFC 6666)"},
    {v6({0x100, 0, 0, 1}), 64, V6Rule::Refuse, "dummy IPv6 prefix (RFC 9780)"},
    {v6({0x2001, 0}), 32, V6Rule::Teredo, "Teredo (RFC 4380)"},
    {v6({0x2001, 0}), 23, V6Rule::Refuse, "IETF protocol assignments, benchmarking, ORCHID, AMT, AS112 (RFC 2928)"},
    {v6({0x2001, 0xdb8}), 32, V6Rule::Refuse, "documentation (RFC 3849)"},
    {v6({0x2002}), 16, V6Rule::Ipv4At16, "6to4 (RFC 3056)"},
    {v6({0x2620, 0x4f, 0x8000}), 48, V6Rule::Refuse, "direct delegation AS112 (RFC 7534)"},
    {v6({0x3fff}), 20, V6Rule::Refuse, "documentation (RFC 9637)"},
    {v6({0x5f00}), 16, V6Rule::Refuse, "segment routing SIDs (RFC 9602)"},
    {v6({0xfc00}), 7, V6Rule::Refuse, "unique local (RFC 4193)"},
    {v6({0xfe80}), 10, V6Rule::Refuse, "link-local (RFC 4291)"},
    {v6({0xfec0}), 10, V6Rule::Refuse, "site-local, deprecated (RFC 3879)"},
    {v6({0xff00}), 8, V6Rule::Refuse, "multicast (RFC 4291)"},
    {v6({0x2000}), 3, V6Rule::Global, "global unicast (RFC 4291)"},
}};

bool in_v4(uint32_t a, const V4Block& b) { return b.bits == 0 || (a >> (32 - b.bits)) == (b.net >> (32 - b.bits)); }

bool in_v6(const uint8_t* a, const V6Block& b) {
  const int whole = b.bits / 8, rest = b.bits % 8;
  if (std::memcmp(a, b.prefix.data(), static_cast<size_t>(whole)) != 0) return false;
  if (rest == 0) return true;
  const uint8_t mask = static_cast<uint8_t>(0xff << (8 - rest));
  return (a[whole] & mask) == (b.prefix[whole] & mask);
}

uint32_t be32(const uint8_t* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | uint32_t{p[3]};
}

}  // namespace

bool is_special_ipv4(uint32_t a) {
  for (const V4Block& b : kV4Refused)
    if (in_v4(a, b)) return true;
  return false;
}

bool is_special_ipv6(const uint8_t* a) {
  for (const V6Block& b : kV6Blocks) {
    if (!in_v6(a, b)) continue;
    switch (b.rule) {
      case V6Rule::Refuse: return true;
      case V6Rule::Ipv4Last32: return is_special_ipv4(be32(a + 12));
      case V6Rule::Ipv4At16: return is_special_ipv4(be32(a + 2));
      case V6Rule::Teredo: return is_special_ipv4(be32(a + 4)) || is_special_ipv4(~be32(a + 12));
      case V6Rule::Global: return false;
    }
  }
  return true;  // outside 2000::/3: reserved or unallocated (IANA IPv6 Address Space)
}

bool is_private_address(const std::string& ip) {
  in_addr v4{};
  if (inet_pton(AF_INET, ip.c_str(), &v4) == 1) return is_special_ipv4(ntohl(v4.s_addr));
  in6_addr v6addr{};
  if (inet_pton(AF_INET6, ip.c_str(), &v6addr) != 1) return true;  // not an address: refuse
  return is_special_ipv6(v6addr.s6_addr);
}

}  // namespace qvl

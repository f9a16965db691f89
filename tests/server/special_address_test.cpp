// is_private_address against the IANA IPv4 and IPv6 special-purpose address
// registries: one sample in each block (and just outside some), and every
// IPv6 form that carries an IPv4 address judged by that address.
#include <gtest/gtest.h>

#include "server/media/media.h"

namespace qvl {
namespace {

TEST(SpecialAddresses, EveryNonGlobalIpv4BlockIsRefused) {
  for (const char* ip :
       {"0.0.0.0", "0.1.2.3", "10.0.0.1", "100.64.0.1", "100.127.255.255", "127.0.0.1", "127.255.255.254",
        "169.254.169.254", "172.16.0.1", "172.31.255.255", "192.0.0.1", "192.0.0.170", "192.0.2.1", "192.88.99.1",
        "192.168.1.1", "198.18.0.1", "198.19.255.255", "198.51.100.7", "203.0.113.9", "224.0.0.1", "239.255.255.255",
        "240.0.0.1", "255.255.255.255", "192.31.196.1", "192.175.48.1"})
    EXPECT_TRUE(is_private_address(ip)) << ip;
  for (const char* ip : {"8.8.8.8", "1.1.1.1", "100.63.255.255", "100.128.0.0", "172.15.255.255", "172.32.0.1",
                         "192.0.1.1", "192.0.3.1", "198.17.255.255", "198.20.0.1", "93.184.216.34", "223.255.255.255"})
    EXPECT_FALSE(is_private_address(ip)) << ip;
}

TEST(SpecialAddresses, EveryNonGlobalIpv6BlockIsRefused) {
  for (const char* ip : {"::", "::1", "::7f00:1", "64:ff9b:1::1", "100::1", "100:0:0:1::1", "2001:2::1",
                         "2001:10::1", "2001:db8::1", "3fff::1", "5f00::1", "fc00::1", "fd12:3456::1", "fe80::1",
                         "febf::1", "fec0::1", "feff::1", "ff02::1", "2620:4f:8000::1", "4000::1", "1::1", "not-an-ip",
                         ""})
    EXPECT_TRUE(is_private_address(ip)) << ip;
  for (const char* ip : {"2606:4700::1111", "2a00:1450:4001::200e", "2001:4860:4860::8888", "2001:200::1"})
    EXPECT_FALSE(is_private_address(ip)) << ip;
}

TEST(SpecialAddresses, EmbeddedIpv4IsJudgedByTheIpv4Table) {
  // mapped ::ffff:0:0/96, translated ::ffff:0:0:0/96, NAT64 64:ff9b::/96
  for (const char* ip : {"::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:0:127.0.0.1", "::ffff:0:169.254.169.254",
                         "64:ff9b::127.0.0.1", "64:ff9b::10.1.2.3", "64:ff9b::192.168.0.1"})
    EXPECT_TRUE(is_private_address(ip)) << ip;
  for (const char* ip : {"::ffff:8.8.8.8", "::ffff:0:8.8.8.8", "64:ff9b::8.8.8.8"})
    EXPECT_FALSE(is_private_address(ip)) << ip;
  // 6to4 2002::/16: the IPv4 address is bits 16..47.
  EXPECT_TRUE(is_private_address("2002:7f00:1::1"));    // 127.0.0.1
  EXPECT_TRUE(is_private_address("2002:c0a8:101::1"));  // 192.168.1.1
  EXPECT_FALSE(is_private_address("2002:808:808::1"));  // 8.8.8.8
  // Teredo 2001::/32: server IPv4 in bits 32..63, client IPv4 inverted in the last 32.
  EXPECT_TRUE(is_private_address("2001:0:7f00:1::1"));              // server 127.0.0.1
  EXPECT_TRUE(is_private_address("2001:0:808:808::f5ff:fffe"));    // client ~0a000001 = 10.0.0.1
  EXPECT_FALSE(is_private_address("2001:0:808:808::f7f7:f7f7"));   // client 8.8.8.8
}

}  // namespace
}  // namespace qvl

// cookie.bind: the network tag of an address: the same inside a /24 (IPv4) or a /56 (IPv6),
// another one outside it, keyed by the cookie key, never 0.

#include <gtest/gtest.h>

#include <set>

#include "cookie/test_support.hpp"
#include "waitroom/cookie/network.hpp"

namespace waitroom::cookie {
namespace {

using test::make_key;
using test::ring_of;

client_address v4(std::uint8_t a, std::uint8_t b, std::uint8_t c, std::uint8_t d) {
    std::array<std::uint8_t, 16> out{};
    out[10] = 0xFF;
    out[11] = 0xFF;
    out[12] = a;
    out[13] = b;
    out[14] = c;
    out[15] = d;
    return out;
}

client_address v6(std::initializer_list<std::uint8_t> bytes) {
    std::array<std::uint8_t, 16> out{};
    std::size_t i = 0;
    for (auto b : bytes) {
        out[i++] = b;
    }
    return out;
}

TEST(NetworkTag, IsTheSameAcrossOneIpv4SlashTwentyFour) {
    auto ring = ring_of({make_key("k1", 1)});
    const auto t = network_tag(*ring, 0, v4(198, 51, 100, 7));
    EXPECT_EQ(network_tag(*ring, 0, v4(198, 51, 100, 200)), t);
    EXPECT_EQ(network_tag(*ring, 0, v4(198, 51, 100, 0)), t);
    EXPECT_NE(network_tag(*ring, 0, v4(198, 51, 101, 7)), t);
    EXPECT_NE(network_tag(*ring, 0, v4(199, 51, 100, 7)), t);
}

TEST(NetworkTag, IsTheSameAcrossOneIpv6SlashFiftySix) {
    auto ring = ring_of({make_key("k1", 1)});
    const auto t = network_tag(*ring, 0, v6({0x20, 0x01, 0x0d, 0xb8, 1, 2, 3, 0x40}));
    // Byte 7 is past the /56: a phone moving between /64s of its provider keeps the tag.
    EXPECT_EQ(network_tag(*ring, 0, v6({0x20, 0x01, 0x0d, 0xb8, 1, 2, 3, 0xFF, 9, 9})), t);
    EXPECT_NE(network_tag(*ring, 0, v6({0x20, 0x01, 0x0d, 0xb8, 1, 2, 4, 0x40})), t);
}

TEST(NetworkTag, TellsFamiliesAndAnUnknownAddressApart) {
    auto ring = ring_of({make_key("k1", 1)});
    // The IPv6 address whose first bytes equal an IPv4 /24's bytes is another network.
    EXPECT_NE(network_tag(*ring, 0, v4(10, 0, 0, 1)), network_tag(*ring, 0, v6({10, 0, 0})));
    EXPECT_NE(network_tag(*ring, 0, std::nullopt), network_tag(*ring, 0, v4(0, 0, 0, 1)));
    EXPECT_EQ(network_tag(*ring, 0, std::nullopt), network_tag(*ring, 0, std::nullopt));
}

TEST(NetworkTag, IsKeyedByTheCookieKey) {
    auto ring = ring_of({make_key("k2", 9), make_key("k1", 1)});
    auto other = ring_of({make_key("k1", 1)});
    const auto addr = v4(203, 0, 113, 9);
    EXPECT_NE(network_tag(*ring, 0, addr), network_tag(*ring, 1, addr));
    // The same key gives the same tag in any ring: a rotation keeps old cookies bound.
    EXPECT_EQ(network_tag(*ring, 1, addr), network_tag(*other, 0, addr));
}

TEST(NetworkTag, IsNeverZeroAndSpreadsAcrossNetworks) {
    auto ring = ring_of({make_key("k1", 1)});
    std::set<std::uint32_t> seen;
    for (int a = 0; a < 16; ++a) {
        for (int c = 0; c < 256; ++c) {
            auto t = network_tag(
                *ring, 0, v4(static_cast<std::uint8_t>(a), 7, static_cast<std::uint8_t>(c), 1));
            EXPECT_NE(t, 0u);
            seen.insert(t);
        }
    }
    EXPECT_EQ(seen.size(), 16u * 256u);
}

}  // namespace
}  // namespace waitroom::cookie

// The per-client count of origin connections: caps, giving back, IPv6 prefixes, and a table
// that stays right while clients come and go in any order.
#include "client_slots.hpp"

#include <gtest/gtest.h>

#include <map>
#include <random>

namespace waitroom::gateway {
namespace {

client_slots::address v4(std::uint8_t a, std::uint8_t b, std::uint8_t c, std::uint8_t d) {
    return {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, a, b, c, d};
}

client_slots::address v6(std::uint16_t net, std::uint16_t host) {
    client_slots::address a{0x20, 0x01, 0x0d, 0xb8};
    a[6] = static_cast<std::uint8_t>(net >> 8);
    a[7] = static_cast<std::uint8_t>(net);
    a[14] = static_cast<std::uint8_t>(host >> 8);
    a[15] = static_cast<std::uint8_t>(host);
    return a;
}

TEST(ClientSlots, GivesAClientUpToItsCapThenRefuses) {
    client_slots s;
    const auto a = client_slots::client_of(v4(192, 0, 2, 1));
    EXPECT_TRUE(s.take(a, 2));
    EXPECT_TRUE(s.take(a, 2));
    EXPECT_FALSE(s.take(a, 2));
    EXPECT_EQ(s.held(a), 2u);
    // Another client is not affected.
    EXPECT_TRUE(s.take(client_slots::client_of(v4(192, 0, 2, 2)), 2));
    s.give(a);
    EXPECT_TRUE(s.take(a, 2));
}

TEST(ClientSlots, ForgetsAClientThatGaveEverythingBack) {
    client_slots s;
    const auto a = client_slots::client_of(v4(198, 51, 100, 7));
    ASSERT_TRUE(s.take(a, 1));
    EXPECT_EQ(s.clients(), 1u);
    s.give(a);
    EXPECT_EQ(s.clients(), 0u);
    EXPECT_EQ(s.held(a), 0u);
    s.give(a);  // nothing held: no effect, no underflow
    EXPECT_EQ(s.held(a), 0u);
}

TEST(ClientSlots, CountsAnIPv6ClientByItsSlash56) {
    client_slots s;
    const auto one = client_slots::client_of(v6(0x100, 1));
    EXPECT_EQ(one, client_slots::client_of(v6(0x100, 2)));
    EXPECT_EQ(one, client_slots::client_of(v6(0x1ff, 2)));  // another /64 of the same /56
    EXPECT_NE(one, client_slots::client_of(v6(0x200, 1)));
    EXPECT_TRUE(s.take(client_slots::client_of(v6(0x100, 1)), 1));
    EXPECT_FALSE(s.take(client_slots::client_of(v6(0x100, 9)), 1));  // another address
    EXPECT_FALSE(s.take(client_slots::client_of(v6(0x1a0, 9)), 1));  // another of its /64s
    EXPECT_TRUE(s.take(client_slots::client_of(v6(0x200, 1)), 1));
}

TEST(ClientSlots, KeepsIPv4AddressesApart) {
    EXPECT_NE(client_slots::client_of(v4(10, 0, 0, 1)), client_slots::client_of(v4(10, 0, 0, 2)));
}

TEST(ClientSlots, AgreesWithAPlainMapThroughManyComingsAndGoings) {
    client_slots s;
    std::map<client_slots::address, std::size_t> expected;
    std::mt19937 random(7);
    constexpr std::size_t cap = 3;
    for (int step = 0; step < 200000; ++step) {
        // Up to 1000 clients at once: the table grows, and entries are removed in any order.
        const auto n = static_cast<std::uint16_t>(random() % 1000);
        const auto c = client_slots::client_of(
            v4(10, 1, static_cast<std::uint8_t>(n >> 8), static_cast<std::uint8_t>(n)));
        if (random() % 2 == 0) {
            const bool room = expected[c] < cap;
            ASSERT_EQ(s.take(c, cap), room) << step;
            expected[c] += room ? 1 : 0;
        } else if (expected[c] > 0) {
            s.give(c);
            --expected[c];
        }
        if (expected[c] == 0) {
            expected.erase(c);
        }
    }
    EXPECT_EQ(s.clients(), expected.size());
    for (const auto& [c, n] : expected) {
        EXPECT_EQ(s.held(c), n);
    }
}

}  // namespace
}  // namespace waitroom::gateway

// A worker's client connections: the per-client cap at attribution, idle connections closed
// oldest first near the worker's limit, and the heads being read held to their budget. The
// sessions are recorders of what the registry asks of them.
#include "client_registry.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <vector>

#include "waitroom/config/values.hpp"
#include "worker_context.hpp"

namespace waitroom::gateway {
namespace {

ip_bytes v4(std::uint8_t d) {
    return {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, d};
}

ip_bytes v6(std::uint8_t subnet_byte, std::uint8_t host) {
    ip_bytes a{0x20, 0x01, 0x0d, 0xb8};
    a[6] = subnet_byte;  // the last byte of the /56
    a[7] = host;         // inside the /56: one of its /64s
    a[15] = host;
    return a;
}

// A session that records what the registry asked of it.
struct recorder : session_base {
    void drain() override {}
    void close() override { ++closes; }
    bool sweep(std::chrono::steady_clock::time_point) override { return false; }
    void give_up_head() override { ++heads_given_up; }
    int closes = 0;
    int heads_given_up = 0;
};

// `n` sessions, each with its place in `registry`, counted in `open` as the worker does.
struct connections {
    connections(client_registry& registry, std::atomic<std::size_t>& open, std::size_t n)
        : sessions(n) {
        for (auto& s : sessions) {
            places.push_back(std::make_unique<connection_place>(registry, s));
        }
        open += n;
    }
    std::vector<recorder> sessions;
    std::vector<std::unique_ptr<connection_place>> places;
};

config::config capped(std::size_t cap) {
    config::config c;
    c.limits.max_connections_per_client = cap;
    return c;
}

TEST(ClientRegistry, RefusesAClientPastItsCapAndGivesThePlaceBackWhenOneCloses) {
    std::atomic<std::size_t> open{0};
    client_registry registry(open, nullptr, 0);
    const auto cfg = capped(2);
    connections c(registry, open, 4);
    EXPECT_TRUE(c.places[0]->claim(v4(1), cfg));
    EXPECT_TRUE(c.places[1]->claim(v4(1), cfg));
    EXPECT_FALSE(c.places[2]->claim(v4(1), cfg));
    EXPECT_TRUE(c.places[3]->claim(v4(2), cfg));  // another address has its own cap
    EXPECT_EQ(registry.held(v4(1)), 2u);
    c.places[0].reset();
    EXPECT_EQ(registry.held(v4(1)), 1u);
    connection_place again(registry, c.sessions[0]);
    EXPECT_TRUE(again.claim(v4(1), cfg));
}

TEST(ClientRegistry, CountsAnIPv6ClientByItsSlash56) {
    std::atomic<std::size_t> open{0};
    client_registry registry(open, nullptr, 0);
    const auto cfg = capped(2);
    connections c(registry, open, 4);
    EXPECT_TRUE(c.places[0]->claim(v6(1, 1), cfg));
    EXPECT_TRUE(c.places[1]->claim(v6(1, 2), cfg));   // another /64 of the same /56
    EXPECT_FALSE(c.places[2]->claim(v6(1, 3), cfg));  // and a third
    EXPECT_TRUE(c.places[3]->claim(v6(2, 1), cfg));   // the next /56
}

TEST(ClientRegistry, AttributesAConnectionOnceAndNeverWithoutACap) {
    std::atomic<std::size_t> open{0};
    client_registry registry(open, nullptr, 0);
    connections c(registry, open, 3);
    const auto cfg = capped(1);
    EXPECT_TRUE(c.places[0]->claim(v4(1), cfg));
    EXPECT_TRUE(c.places[0]->claim(v4(1), cfg));  // the first head after the peer: no second count
    EXPECT_EQ(registry.held(v4(1)), 1u);
    EXPECT_TRUE(c.places[1]->claim(v4(1), capped(0)));  // 0 = no cap
    EXPECT_TRUE(c.places[2]->claim(std::nullopt, cfg));
    EXPECT_EQ(registry.held(v4(1)), 1u);
}

TEST(ClientRegistry, ATrustedProxyPeerIsCountedUnderItsClientLater) {
    std::atomic<std::size_t> open{0};
    client_registry registry(open, nullptr, 0);
    auto cfg = capped(1);
    cfg.trusted_proxies.push_back(*config::parse_cidr("192.0.2.0/24"));
    connections c(registry, open, 2);
    request_info info;
    client_identity proxy;
    proxy.from_socket(asio::ip::make_address("192.0.2.9"), info);
    EXPECT_TRUE(c.places[0]->claim_peer(proxy, cfg));
    EXPECT_TRUE(c.places[1]->claim_peer(proxy, cfg));
    EXPECT_FALSE(c.places[0]->attributed());
    EXPECT_EQ(registry.held(v4(9)), 0u);
    EXPECT_TRUE(c.places[0]->claim(v4(7), cfg));
    EXPECT_FALSE(c.places[1]->claim(v4(7), cfg));
}

TEST(ClientRegistry, AnHttp2ConnectionTakesOverItsSessionsCount) {
    std::atomic<std::size_t> open{0};
    client_registry registry(open, nullptr, 0);
    const auto cfg = capped(1);
    connections c(registry, open, 2);
    ASSERT_TRUE(c.places[0]->claim(v4(1), cfg));
    c.places[1]->take_over(*c.places[0]);
    c.places[0].reset();  // the session that handed over ends: the count stays
    EXPECT_EQ(registry.held(v4(1)), 1u);
    EXPECT_TRUE(c.places[1]->attributed());
    c.places[1].reset();
    EXPECT_EQ(registry.held(v4(1)), 0u);
}

TEST(ClientRegistry, NearTheLimitClosesTheOldestIdleConnectionForEachAccepted) {
    std::atomic<std::size_t> open{0};
    client_registry registry(open, nullptr, 0);
    connections c(registry, open, 8);
    registry.accepted(100);  // far from the limit: nothing is closed
    for (std::size_t i = 0; i < 4; ++i) {
        c.places[i]->idle();
    }
    c.places[4]->hold_head(512, 1 << 20);  // a head under way is not idle
    registry.accepted(10);                 // 8 open + a reserve of 1 < 10: room enough
    EXPECT_EQ(c.sessions[0].closes, 0);
    open = 9;
    registry.accepted(10);
    EXPECT_EQ(c.sessions[0].closes, 1);
    registry.accepted(10);
    EXPECT_EQ(c.sessions[1].closes, 1);
    c.places[3]->busy();  // a request arrived: no longer idle
    registry.accepted(10);
    EXPECT_EQ(c.sessions[2].closes, 1);
    registry.accepted(10);  // none idle: nothing to close
    for (std::size_t i = 3; i < 8; ++i) {
        EXPECT_EQ(c.sessions[i].closes, 0) << i;
    }
    EXPECT_EQ(registry.idle_connections(), 0u);
}

TEST(ClientRegistry, AtTheLimitAConnectionTurningIdleMakesRoom) {
    // The listener paused with every connection busy; the first to turn idle gives way.
    std::atomic<std::size_t> open{0};
    client_registry registry(open, nullptr, 0);
    connections c(registry, open, 4);
    registry.accepted(4);
    c.places[2]->idle();
    EXPECT_EQ(c.sessions[2].closes, 1);
    open = 2;  // two closed: room again
    c.places[1]->idle();
    EXPECT_EQ(c.sessions[1].closes, 0);
}

TEST(ClientRegistry, PastTheHeaderBudgetGivesUpTheHeadsThatBeganFirst) {
    std::atomic<std::size_t> open{0};
    client_registry registry(open, nullptr, 0);
    connections c(registry, open, 4);
    constexpr std::size_t budget = 64 * 1024;
    c.places[0]->hold_head(16 * 1024, budget);
    c.places[1]->hold_head(16 * 1024, budget);
    c.places[2]->hold_head(16 * 1024, budget);
    c.places[0]->hold_head(32 * 1024, budget);  // grows, stays the first to have begun
    EXPECT_EQ(registry.head_bytes(), 64u * 1024);
    for (const auto& s : c.sessions) {
        EXPECT_EQ(s.heads_given_up, 0);
    }
    c.places[3]->hold_head(32 * 1024, budget);
    EXPECT_EQ(c.sessions[0].heads_given_up, 1);
    EXPECT_EQ(c.sessions[1].heads_given_up, 0);  // 16 + 16 + 32 KiB are within the budget
    EXPECT_EQ(registry.head_bytes(), 64u * 1024);
    c.places[1]->busy();  // its head is complete: its bytes no longer count
    EXPECT_EQ(registry.head_bytes(), 48u * 1024);
    c.places[3].reset();
    EXPECT_EQ(registry.head_bytes(), 16u * 1024);
}

TEST(ClientRegistry, GivesUpTheHeadThatGrowsPastTheBudgetWhenItBeganFirst) {
    std::atomic<std::size_t> open{0};
    client_registry registry(open, nullptr, 0);
    connections c(registry, open, 2);
    c.places[0]->hold_head(16 * 1024, 64 * 1024);
    c.places[1]->hold_head(16 * 1024, 64 * 1024);
    c.places[0]->hold_head(64 * 1024, 64 * 1024);
    EXPECT_EQ(c.sessions[0].heads_given_up, 1);
    EXPECT_EQ(c.sessions[1].heads_given_up, 0);
    EXPECT_EQ(registry.head_bytes(), 16u * 1024);
}

}  // namespace
}  // namespace waitroom::gateway

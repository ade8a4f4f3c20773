// The choice of a request's origin server (origin_balancer) and the servers' passive health
// (server_health, origin_group): pure logic, with a seeded random source and time as an argument.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <random>
#include <vector>

#include "origin_balancer.hpp"
#include "waitroom/gateway/origin_group.hpp"

namespace waitroom::gateway {
namespace {

using std::chrono::milliseconds;
using policy = config::balance_policy;

std::vector<balance_entry> servers(std::initializer_list<unsigned> weights) {
    std::vector<balance_entry> out;
    for (unsigned w : weights) {
        balance_entry e;
        e.weight = w;
        out.push_back(e);
    }
    return out;
}

// How many of `n` picks each server gets.
std::vector<int> tally(policy p, std::vector<balance_entry>& s, int n,
                       std::size_t avoid = no_server) {
    std::mt19937_64 random(42);
    std::vector<int> count(s.size(), 0);
    for (int i = 0; i < n; ++i) {
        const auto at = pick_server(p, s, avoid, random);
        if (at != no_server) {
            ++count[at];
        }
    }
    return count;
}

TEST(OriginBalancer, RoundRobinGivesEachServerItsWeightInTurnsSpreadOut) {
    auto s = servers({3, 1});
    std::mt19937_64 random(1);
    std::vector<std::size_t> order;
    for (int i = 0; i < 8; ++i) {
        order.push_back(pick_server(policy::round_robin, s, no_server, random));
    }
    // Smooth: the light server's turn falls between the heavy one's, not after all three.
    EXPECT_EQ(order, (std::vector<std::size_t>{0, 0, 1, 0, 0, 0, 1, 0}));
}

TEST(OriginBalancer, RoundRobinSkipsAServerThatIsNotAvailable) {
    auto s = servers({1, 1, 1});
    s[1].available = false;
    const auto count = tally(policy::round_robin, s, 300);
    EXPECT_EQ(count[1], 0);
    EXPECT_EQ(count[0], 150);
    EXPECT_EQ(count[2], 150);
}

TEST(OriginBalancer, LeastRequestPrefersTheServerWithFewerRequestsInFlight) {
    auto s = servers({1, 1});
    s[0].in_flight = 10;
    s[1].in_flight = 2;
    const auto count = tally(policy::least_request, s, 100);
    EXPECT_EQ(count[1], 100);  // with two servers both are always drawn
}

TEST(OriginBalancer, LeastRequestWeighsInFlightRequestsByWeight) {
    auto s = servers({4, 1});
    s[0].in_flight = 7;  // (7+1)/4 = 2 per weight
    s[1].in_flight = 2;  // (2+1)/1 = 3 per weight
    const auto count = tally(policy::least_request, s, 50);
    EXPECT_EQ(count[0], 50);
}

TEST(OriginBalancer, LeastRequestGivesAHeavierServerItsShareAtRest) {
    auto s = servers({3, 1, 1, 1});
    // Every server idle: the heavy one wins each draw it is in (half of them).
    const auto count = tally(policy::least_request, s, 6000);
    EXPECT_NEAR(count[0], 3000, 200);
    EXPECT_NEAR(count[1], 1000, 150);
    EXPECT_NEAR(count[3], 1000, 150);
}

TEST(OriginBalancer, NeverPicksTheServerARetryAvoids) {
    auto s = servers({1, 1, 1});
    for (auto p : {policy::round_robin, policy::least_request}) {
        const auto count = tally(p, s, 90, 0);
        EXPECT_EQ(count[0], 0);
        EXPECT_EQ(count[1] + count[2], 90);
    }
}

TEST(OriginBalancer, TriesAllServersWhenNoneIsAvailable) {
    auto s = servers({1, 1});
    s[0].available = false;
    s[1].available = false;
    const auto count = tally(policy::round_robin, s, 10);
    EXPECT_EQ(count[0], 5);
    EXPECT_EQ(count[1], 5);
}

TEST(OriginBalancer, HasNoServerWhenTheAvoidedOneIsTheOnlyOne) {
    auto s = servers({1});
    std::mt19937_64 random(3);
    EXPECT_EQ(pick_server(policy::least_request, s, 0, random), no_server);
    EXPECT_EQ(pick_server(policy::round_robin, s, 0, random), no_server);
    EXPECT_EQ(pick_server(policy::round_robin, s, no_server, random), 0u);
}

// ---- passive health ---------------------------------------------------------------------------

const ejection_rules rules{3, milliseconds{1000}, milliseconds{5000}};
const health_clock::time_point t0{std::chrono::hours{1}};

TEST(ServerHealth, EjectsAfterTheConfiguredFailuresInARow) {
    server_health h;
    EXPECT_FALSE(h.record_failure(server_failure::connect, rules, true, t0));
    EXPECT_FALSE(h.record_failure(server_failure::timeout, rules, true, t0));
    EXPECT_TRUE(h.available(t0));
    EXPECT_TRUE(h.record_failure(server_failure::connect, rules, true, t0));
    EXPECT_FALSE(h.available(t0));
    EXPECT_FALSE(h.available(t0 + milliseconds{999}));
    EXPECT_TRUE(h.available(t0 + milliseconds{1000}));
    EXPECT_EQ(h.ejections(), 1u);
}

TEST(ServerHealth, AnAnswerEndsTheStreak) {
    server_health h;
    h.record_failure(server_failure::connect, rules, true, t0);
    h.record_failure(server_failure::connect, rules, true, t0);
    h.record_success();
    EXPECT_FALSE(h.record_failure(server_failure::connect, rules, true, t0));
    EXPECT_FALSE(h.record_failure(server_failure::connect, rules, true, t0));
    EXPECT_TRUE(h.available(t0));
}

TEST(ServerHealth, BackOffDoublesOnEachEjectionInARowUpToTheBound) {
    server_health h;
    auto now = t0;
    for (int i = 0; i < 3; ++i) {
        h.record_failure(server_failure::connect, rules, true, now);
    }
    std::vector<long> out_for;
    for (int round = 0; round < 5; ++round) {
        const auto until = h.ejected_until();
        out_for.push_back(std::chrono::duration_cast<milliseconds>(until - now).count());
        now = until;
        // Back from its ejection, the first failure takes it out again at once.
        EXPECT_TRUE(h.record_failure(server_failure::connect, rules, true, now));
    }
    EXPECT_EQ(out_for, (std::vector<long>{1000, 2000, 4000, 5000, 5000}));
}

TEST(ServerHealth, AnAnswerAfterAnEjectionResetsTheBackOff) {
    server_health h;
    for (int i = 0; i < 3; ++i) {
        h.record_failure(server_failure::connect, rules, true, t0);
    }
    auto now = h.ejected_until();
    EXPECT_TRUE(h.record_failure(server_failure::connect, rules, true, now));  // 2 s now
    now = h.ejected_until();
    h.record_success();
    for (int i = 0; i < 2; ++i) {
        EXPECT_FALSE(h.record_failure(server_failure::connect, rules, true, now));
    }
    EXPECT_TRUE(h.record_failure(server_failure::connect, rules, true, now));
    EXPECT_EQ(h.ejected_until() - now, milliseconds{1000});
}

TEST(ServerHealth, AnAnswerDuringAnEjectionEndsIt) {
    server_health h;
    for (int i = 0; i < 3; ++i) {
        h.record_failure(server_failure::connect, rules, true, t0);
    }
    EXPECT_FALSE(h.available(t0));
    EXPECT_TRUE(h.record_success());
    EXPECT_TRUE(h.available(t0));
    EXPECT_FALSE(h.record_success());
}

TEST(ServerHealth, FailuresWhileEjectedDoNotExtendTheEjection) {
    server_health h;
    for (int i = 0; i < 3; ++i) {
        h.record_failure(server_failure::connect, rules, true, t0);
    }
    const auto until = h.ejected_until();
    for (int i = 0; i < 5; ++i) {
        EXPECT_FALSE(h.record_failure(server_failure::connect, rules, true, t0 + milliseconds{10}));
    }
    EXPECT_EQ(h.ejected_until(), until);
    EXPECT_EQ(h.ejections(), 1u);
}

TEST(ServerHealth, NeverEjectsTheLastAvailableServerOn5xxAlone) {
    server_health h;
    for (int i = 0; i < 10; ++i) {
        EXPECT_FALSE(h.record_failure(server_failure::server_error, rules, false, t0));
    }
    EXPECT_TRUE(h.available(t0));
    // With another server to take its requests, the same streak ejects it.
    EXPECT_TRUE(h.record_failure(server_failure::server_error, rules, true, t0));
}

TEST(ServerHealth, EjectsTheLastServerWhenItsStreakHoldsAConnectFailure) {
    server_health h;
    h.record_failure(server_failure::server_error, rules, false, t0);
    h.record_failure(server_failure::connect, rules, false, t0);
    EXPECT_TRUE(h.record_failure(server_failure::server_error, rules, false, t0));
}

TEST(ServerHealth, NeverEjectsWhenEjectAfterIsZero) {
    server_health h;
    const ejection_rules never{0, milliseconds{1000}, milliseconds{1000}};
    for (int i = 0; i < 100; ++i) {
        EXPECT_FALSE(h.record_failure(server_failure::connect, never, true, t0));
    }
    EXPECT_TRUE(h.available(t0));
}

TEST(ServerHealth, FailingHealthChecksTakeAServerOutUntilTheyPass) {
    server_health h;
    h.set_checks_pass(false);
    EXPECT_FALSE(h.available(t0));
    h.set_checks_pass(true);
    EXPECT_TRUE(h.available(t0));
}

config::origin two_servers() {
    config::origin o;
    o.servers = {{"http://127.0.0.1:1", false, "127.0.0.1", 1, "", 1},
                 {"http://127.0.0.1:2", false, "127.0.0.1", 2, "", 1}};
    o.eject_after = 1;
    o.eject_time = milliseconds{1000};
    return o;
}

TEST(OriginGroup, ClosesTheGateWhenItsLastServerIsEjectedAndOpensItWhenOneIsBack) {
    auto health = std::make_shared<origin_health>();
    int changes = 0;
    health->on_change([&] { ++changes; });
    origin_group g(two_servers(), health, nullptr);
    const auto& m = g.members();
    EXPECT_TRUE(g.record_failure(m[0], server_failure::connect, t0));
    EXPECT_TRUE(health->gate()->open());  // the other server takes requests
    EXPECT_TRUE(g.record_failure(m[1], server_failure::connect, t0));
    EXPECT_FALSE(health->gate()->open());
    EXPECT_EQ(changes, 2);
    EXPECT_FALSE(g.refresh_gate(t0 + milliseconds{500}));
    EXPECT_TRUE(g.refresh_gate(t0 + milliseconds{1000}));
    EXPECT_TRUE(health->gate()->open());
}

TEST(OriginGroup, OpensTheGateAtOnceWhenAnEjectedServerAnswers) {
    auto health = std::make_shared<origin_health>();
    origin_group g(two_servers(), health, nullptr);
    const auto& m = g.members();
    g.record_failure(m[0], server_failure::connect, t0);
    g.record_failure(m[1], server_failure::timeout, t0);
    ASSERT_FALSE(health->gate()->open());
    g.record_success(m[1]);  // a request tried while no server took requests got its answer
    EXPECT_TRUE(health->gate()->open());
    EXPECT_TRUE(m[1].health->available(t0));
}

TEST(OriginGroup, KeepsAServersHealthAcrossConfigsThatNameIt) {
    auto health = std::make_shared<origin_health>();
    origin_group before(two_servers(), health, nullptr);
    before.record_failure(before.members()[1], server_failure::connect, t0);
    auto o = two_servers();
    o.servers.erase(o.servers.begin());
    origin_group after(o, health, nullptr);
    ASSERT_EQ(after.members().size(), 1u);
    EXPECT_FALSE(after.members()[0].health->available(t0));
}

TEST(OriginGroup, AnOriginWithAUrlAloneIsOneServerOfWeightOne) {
    config::origin o;
    o.url = "http://10.0.0.5:8080/app";
    o.host = "10.0.0.5";
    o.port = 8080;
    o.base_path = "/app";
    origin_group g(o, std::make_shared<origin_health>(), nullptr);
    ASSERT_EQ(g.members().size(), 1u);
    EXPECT_EQ(g.members()[0].server.url, o.url);
    EXPECT_EQ(g.members()[0].server.base_path, "/app");
    EXPECT_EQ(g.members()[0].server.weight, 1u);
}

}  // namespace
}  // namespace waitroom::gateway

// The Redis store on a real Redis Cluster (three masters on loopback, formed by redis-cli): each
// room runs on its hash slot's master, so rooms spread over the masters; a slot migrated in the
// middle of a run is followed (ASK while its keys move, MOVED after) and loses or doubles no
// count; a master that dies fails only its own rooms, and its rooms come back when it does.

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "redis_cluster.hpp"
#include "redis_protocol.hpp"
#include "state/redis_calls.hpp"
#include "state/redis_fixture.hpp"
#include "state/store_doubles.hpp"

namespace waitroom::state {
namespace {

using namespace redis_test;
using test::cluster_set;
using test::t0;

redis_options cluster_options(cluster_set& c, std::vector<std::size_t> seeds = {0}) {
    redis_options o;
    o.timeout = 500ms;
    o.reconnect_min = 20ms;
    o.reconnect_max = 200ms;
    for (auto i : seeds) {
        o.cluster_nodes.push_back({"127.0.0.1", c.node(i).port()});
    }
    return o;
}

std::string meta_key(const std::string& room) { return redis::key("wr", room, "meta"); }

// `per_node` room ids on each of the three masters, found by asking the cluster.
std::vector<std::vector<std::string>> rooms_per_master(cluster_set& c, std::size_t per_node) {
    std::vector<std::vector<std::string>> out(3);
    for (int i = 0; i < 1000; ++i) {
        std::string room = "room-" + std::to_string(i);
        auto owner = c.owner_of(meta_key(room));
        if (owner < 3 && out[owner].size() < per_node) {
            out[owner].push_back(room);
        }
        if (out[0].size() == per_node && out[1].size() == per_node &&
            out[2].size() == per_node) {
            break;
        }
    }
    return out;
}

TEST(RedisCluster, KeySlotsAgreeWithTheServers) {
    cluster_set c;
    std::vector<std::string> keys{"shop", "wr:{shop}:meta", "foo{bar}{zap}", "foo{}{bar}",
                                  "foo{bar", "{{x}}", "}{", "a}b{c}", "ÄÖÜ", "x y"};
    for (int i = 0; i < 40; ++i) {
        keys.push_back("room-" + std::to_string(i * 7919));
    }
    for (const auto& k : keys) {
        EXPECT_EQ(std::to_string(redis::key_slot(k)), c.node(0).cli("CLUSTER KEYSLOT '" + k + "'"))
            << k;
    }
}

TEST(RedisCluster, EachRoomRunsOnItsSlotsMasterSoRoomsSpreadOverTheMasters) {
    cluster_set c;
    auto rooms = rooms_per_master(c, 2);
    boost::asio::io_context ioc;
    redis_store st(ioc.get_executor(), cluster_options(c));
    auto l = limits(10, 100);
    std::vector<room_report> reports;
    for (const auto& on_node : rooms) {
        ASSERT_EQ(on_node.size(), 2u);
        for (const auto& room : on_node) {
            auto r = report(l, room);
            r.deltas.admitted.add(t0, 2);
            r.deltas.active.add(t0, 2);
            reports.push_back(r);
        }
    }
    auto res = call_sync(ioc, st, node("a", "dc", t0, reports));
    ASSERT_FALSE(res.ec) << res.ec.message();
    ASSERT_EQ(res.rooms.size(), 6u);
    for (std::size_t m = 0; m < 3; ++m) {
        for (std::size_t k = 0; k < 2; ++k) {
            const auto& g = res.rooms[m * 2 + k];
            EXPECT_EQ(g.room, rooms[m][k]);
            EXPECT_EQ(g.counts.admitted_last_minute, 2) << g.room;
            // The room's keys live on its master.
            EXPECT_EQ(c.node(m).cli("EXISTS '" + meta_key(g.room) + "'"), "1") << g.room;
        }
    }
    for (std::size_t n = 0; n < 3; ++n) {
        EXPECT_NE(c.node(n).cli("DBSIZE"), "0") << "master " << n << " holds no room";
    }
    // A top-up goes to the room's master too.
    top_up_request t;
    t.node_id = "a";
    t.datacenter = "dc";
    t.room = rooms[2][0];
    t.limits = l;
    t.want = 1;
    t.now_ms = t0 + 10;
    t.epoch = res.rooms[4].epoch;
    auto up = call_top_up(ioc, st, t);
    EXPECT_FALSE(up.ec) << up.ec.message();
}

TEST(RedisCluster, StartsFromAnySeedThatAnswers) {
    cluster_set c;
    boost::asio::io_context ioc;
    auto o = cluster_options(c, {1});
    o.cluster_nodes.insert(o.cluster_nodes.begin(), {"127.0.0.1", test::free_loopback_port()});
    redis_store st(ioc.get_executor(), o);
    auto res = call_sync(ioc, st, node("a", "dc", t0, {report(limits(10, 100))}));
    EXPECT_FALSE(res.ec) << res.ec.message();
    EXPECT_EQ(c.node(c.owner_of(meta_key("shop"))).cli("EXISTS '" + meta_key("shop") + "'"), "1");
}

// Two nodes report one admission per room per round, resending a failed report as the sync task
// does; in the middle, room A's slot moves to another master. Every admission is counted once.
TEST(RedisCluster, FollowsASlotMigrationInTheMiddleOfARunAndCountsEveryAdmissionOnce) {
    cluster_set c;
    auto rooms = rooms_per_master(c, 1);
    const std::string a = rooms[0][0];  // on master 0, moves to master 2
    const std::string b = rooms[1][0];  // on master 1, stays
    boost::asio::io_context ioc;
    redis_store n1(ioc.get_executor(), cluster_options(c, {0}));
    redis_store n2(ioc.get_executor(), cluster_options(c, {1}));
    auto l = limits(1000, 1000);
    std::map<std::string, std::uint64_t> batch{{"n1", 1000}, {"n2", 2000}};
    std::map<std::string, std::string> epoch;
    int reported = 0;
    sync_result last;
    auto round = [&](redis_store& st, const std::string& id, std::chrono::milliseconds limit) {
        std::vector<room_report> rs;
        for (const auto& room : {a, b}) {
            auto r = report(l, room);
            r.deltas.admitted.add(t0, 1);
            r.epoch = epoch[room];
            rs.push_back(r);
        }
        auto n = node(id, "dc", t0 + reported, rs);
        n.batch = ++batch[id];
        auto res = sync_until_answered(ioc, st, n, limit);
        if (!res.ec) {
            ++reported;
            for (const auto& g : res.rooms) {
                epoch[g.room] = g.epoch;
            }
            last = res;
        }
        return res;
    };
    for (int i = 0; i < 5; ++i) {
        ASSERT_FALSE(round(n1, "n1", 5s).ec);
        ASSERT_FALSE(round(n2, "n2", 5s).ec);
    }
    const unsigned slot = redis::key_slot(a);
    int in_window = 0;
    c.migrate(slot, 0, 2, [&] {
        // The keys are on master 2, the slot still master 0's: it answers ASK, and master 2
        // serves the script only once every key it names is there (else TRYAGAIN). One try
        // each, within the call's deadline; a report that fails is sent again below.
        for (auto* st : {&n1, &n2}) {
            std::vector<room_report> rs{report(l, a)};
            rs[0].epoch = epoch[a];
            auto res = call_sync(ioc, *st, node("probe", "dc", t0 + reported, rs));
            in_window += res.ec ? 0 : 1;
        }
    });
    EXPECT_NE(c.node(2).cli("INFO commandstats").find("cmdstat_asking:"), std::string::npos)
        << "the ASK redirection was not followed with ASKING";
    for (int i = 0; i < 5; ++i) {
        ASSERT_FALSE(round(n1, "n1", 10s).ec);
        ASSERT_FALSE(round(n2, "n2", 10s).ec);
    }
    EXPECT_EQ(c.owner_of(meta_key(a)), 2u);
    EXPECT_EQ(c.node(2).cli("EXISTS '" + meta_key(a) + "'"), "1");
    ASSERT_EQ(last.rooms.size(), 2u);
    // 20 reports, each with one admission in each room; the probes in the window add none.
    EXPECT_EQ(last.rooms[0].counts.admitted_last_minute, 20) << "room " << a;
    EXPECT_EQ(last.rooms[1].counts.admitted_last_minute, 20) << "room " << b;
    std::cout << "[ cluster  ] syncs served inside the ASK window: " << in_window << " of 2\n";
}

TEST(RedisCluster, ADeadMasterFailsOnlyItsOwnRoomsAndTheyComeBackWithIt) {
    cluster_set c;
    auto rooms = rooms_per_master(c, 1);
    boost::asio::io_context ioc;
    auto o = cluster_options(c, {0, 1});
    o.timeout = 300ms;
    redis_store st(ioc.get_executor(), o);
    auto l = limits(10, 100);
    auto on = [&](std::size_t m) { return report(l, rooms[m][0]); };
    auto first = call_sync(ioc, st, node("a", "dc", t0, {on(0), on(1), on(2)}));
    ASSERT_FALSE(first.ec) << first.ec.message();

    c.node(2).kill();
    // Room 0's part runs, room 2's cannot: the call's outcome is unknown as a whole.
    auto both = on(0);
    both.deltas.admitted.add(t0, 1);
    both.epoch = first.rooms[0].epoch;
    auto partly = node("a", "dc", t0 + 100, {both, on(2)});
    partly.batch = 77;
    EXPECT_EQ(call_sync(ioc, st, partly).ec, make_error_code(errc::lost));
    auto others = call_sync(ioc, st, node("a", "dc", t0 + 200, {on(0), on(1)}));
    EXPECT_FALSE(others.ec) << others.ec.message();
    EXPECT_EQ(others.rooms[0].counts.admitted_last_minute, 1);

    c.node(2).start();  // empty (no persistence), with its slots from its cluster config
    auto back_report = on(2);
    back_report.epoch = first.rooms[2].epoch;
    auto back = sync_until_answered(ioc, st, node("a", "dc", t0 + 300, {back_report}), 30s, 100ms);
    ASSERT_FALSE(back.ec) << back.ec.message();
    // It lost the room: the node re-reported its live windows under a new epoch.
    EXPECT_NE(back.rooms[0].epoch, first.rooms[2].epoch);
}

}  // namespace
}  // namespace waitroom::state

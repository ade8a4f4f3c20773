// The Redis store behind Redis Sentinel: a real master, its replica and three sentinels on
// loopback. The store finds the master through the sentinels, follows a failover (the master
// SIGKILLed, or a failover ordered by a sentinel), and neither loses nor doubles a count that it
// acknowledged: every write waits for the replica, and a resent report counts once.

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <fstream>
#include <iostream>
#include <string>

#include "state/redis_calls.hpp"
#include "state/redis_fixture.hpp"
#include "state/store_doubles.hpp"

namespace waitroom::state {
namespace {

using namespace redis_test;
using test::sentinel_set;
using test::t0;

redis_options sentinel_options(sentinel_set& s) {
    redis_options o;
    o.timeout = 500ms;
    o.reconnect_min = 20ms;
    o.reconnect_max = 200ms;
    o.master_name = s.name();
    for (std::size_t i = 0; i < 3; ++i) {
        o.sentinels.push_back({"127.0.0.1", s.sentinel(i).port()});
    }
    return o;
}

// One node reporting one admission per sync, a failed report sent again (same batch).
struct reporting_node {
    reporting_node(boost::asio::io_context& c, redis_store& s) : ioc(c), st(s) {}
    boost::asio::io_context& ioc;
    redis_store& st;
    std::uint64_t batch = 500;
    std::string epoch;
    std::int64_t now = t0;
    sync_result last;

    sync_result next(std::chrono::milliseconds limit = 30s) {
        auto r = report(limits(1000, 1000));
        r.deltas.admitted.add(t0, 1);
        r.epoch = epoch;
        auto n = node("a", "dc", ++now, {r});
        n.batch = ++batch;
        auto res = sync_until_answered(ioc, st, n, limit);
        if (!res.ec) {
            epoch = res.rooms[0].epoch;
            last = res;
        }
        return res;
    }
};

TEST(RedisSentinel, FindsTheMasterThroughTheSentinels) {
    sentinel_set s;
    boost::asio::io_context ioc;
    redis_store st(ioc.get_executor(), sentinel_options(s));
    reporting_node n(ioc, st);
    ASSERT_FALSE(n.next(5s).ec);
    EXPECT_EQ(s.server(0).cli("EXISTS wr:{shop}:meta"), "1");
    EXPECT_EQ(s.server(0).cli("ROLE").substr(0, 6), "master");
    // Every write waited for the replica.
    EXPECT_NE(s.server(0).cli("INFO commandstats").find("cmdstat_wait:calls="), std::string::npos);
}

TEST(RedisSentinel, AsksTheNextSentinelWhenOneIsDownOrUnknown) {
    sentinel_set s;
    s.sentinel(0).kill();
    boost::asio::io_context ioc;
    auto o = sentinel_options(s);
    o.sentinels.insert(o.sentinels.begin(), {"127.0.0.1", test::free_loopback_port()});
    redis_store st(ioc.get_executor(), o);
    reporting_node n(ioc, st);
    EXPECT_FALSE(n.next(5s).ec);

    auto unknown = sentinel_options(s);
    unknown.master_name = "no-such-master";
    redis_store lost(ioc.get_executor(), unknown);
    auto res = call_sync(ioc, lost, node("a", "dc", t0, {report(limits(10, 10))}));
    EXPECT_EQ(res.ec, make_error_code(errc::unavailable)) << res.ec.message();
}

TEST(RedisSentinel, FollowsAFailoverAfterTheMasterIsKilledAndLosesNoAcknowledgedCount) {
    sentinel_set s;
    boost::asio::io_context ioc;
    redis_store st(ioc.get_executor(), sentinel_options(s));
    reporting_node n(ioc, st);
    for (int i = 0; i < 20; ++i) {
        ASSERT_FALSE(n.next(5s).ec);
    }
    const auto killed = std::chrono::steady_clock::now();
    s.server(0).kill();
    auto res = n.next(30s);  // fails until the sentinels promote the replica, then goes through
    const auto gap = std::chrono::steady_clock::now() - killed;
    ASSERT_FALSE(res.ec) << res.ec.message();
    for (int i = 0; i < 19; ++i) {
        ASSERT_FALSE(n.next(5s).ec);
    }
    EXPECT_EQ(s.named_master(), s.server(1).port());
    EXPECT_EQ(s.server(1).cli("ROLE").substr(0, 6), "master");
    // 40 reports of one admission each, the one in flight at the kill included: none lost, none
    // counted twice.
    EXPECT_EQ(n.last.rooms[0].counts.admitted_last_minute, 40);
    std::cout << "[ sentinel ] store answered again "
              << std::chrono::duration_cast<std::chrono::milliseconds>(gap).count()
              << " ms after the master was killed\n";
}

TEST(RedisSentinel, FollowsAFailoverOrderedWhileTheOldMasterStaysUp) {
    sentinel_set s;
    boost::asio::io_context ioc;
    redis_store st(ioc.get_executor(), sentinel_options(s));
    reporting_node n(ioc, st);
    for (int i = 0; i < 5; ++i) {
        ASSERT_FALSE(n.next(5s).ec);
    }
    // A sentinel promotes a replica only once it has heard from it lately (NOGOODSLAVE before).
    std::string ordered;
    for (int i = 0; i < 100 && ordered != "OK"; ++i) {
        ordered = s.sentinel(0).cli("SENTINEL FAILOVER " + s.name());
        if (ordered != "OK") {
            std::this_thread::sleep_for(100ms);
        }
    }
    ASSERT_EQ(ordered, "OK");
    // The old master becomes a replica (READONLY to writes); the store moves to the new one.
    for (int i = 0; i < 50 && s.named_master() != s.server(1).port(); ++i) {
        std::this_thread::sleep_for(100ms);
    }
    ASSERT_EQ(s.named_master(), s.server(1).port());
    for (int i = 0; i < 5; ++i) {
        ASSERT_FALSE(n.next(30s).ec);
    }
    EXPECT_EQ(n.last.rooms[0].counts.admitted_last_minute, 10);
    EXPECT_EQ(s.server(1).cli("ROLE").substr(0, 6), "master");
}

// A replica that does not acknowledge (frozen): the master's answer could be lost in a
// failover, so the call fails as lost, and its resend (same batch) counts once when the
// replica is back.
TEST(RedisSentinel, AWriteNoReplicaAcknowledgedFailsAsLostAndItsResendCountsOnce) {
    sentinel_set s;
    boost::asio::io_context ioc;
    redis_store st(ioc.get_executor(), sentinel_options(s));
    reporting_node n(ioc, st);
    ASSERT_FALSE(n.next(5s).ec);
    s.server(1).pause();
    auto r = report(limits(1000, 1000));
    r.deltas.admitted.add(t0, 1);
    r.epoch = n.epoch;
    auto rep = node("a", "dc", ++n.now, {r});
    rep.batch = ++n.batch;
    EXPECT_EQ(call_sync(ioc, st, rep).ec, make_error_code(errc::lost));
    s.server(1).resume();
    auto res = sync_until_answered(ioc, st, rep, 10s);
    ASSERT_FALSE(res.ec) << res.ec.message();
    EXPECT_EQ(res.rooms[0].counts.admitted_last_minute, 2);
}

// A sentinel that names a master nobody can reach (stale, or lying): the store moves on to the
// next sentinel instead of asking the same one forever.
TEST(RedisSentinel, ASentinelNamingAnUnreachableMasterIsPassedOver) {
    sentinel_set s;
    test::scratch_dir dir;
    const std::string conf = dir.file("stale.conf");
    std::ofstream(conf) << "sentinel monitor " << s.name() << " 127.0.0.1 "
                        << test::free_loopback_port() << " 2\n";
    redis_server stale({"--sentinel"}, conf);
    boost::asio::io_context ioc;
    auto o = sentinel_options(s);
    o.sentinels.insert(o.sentinels.begin(), {"127.0.0.1", stale.port()});
    redis_store st(ioc.get_executor(), o);
    reporting_node n(ioc, st);
    auto res = n.next(10s);
    ASSERT_FALSE(res.ec) << res.ec.message();
    EXPECT_EQ(s.server(0).cli("EXISTS wr:{shop}:meta"), "1");
}

}  // namespace
}  // namespace waitroom::state

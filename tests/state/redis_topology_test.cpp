// Where the Redis store sends its calls, without a server: Redis Cluster's key slots and its
// MOVED/ASK redirections and slot map, and a sentinel's answers (malformed ones are refused,
// never trusted). The same rules against real processes are in redis_cluster_test.cpp and
// redis_sentinel_test.cpp.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "redis_cluster.hpp"
#include "state/redis_values.hpp"
#include "redis_sentinel.hpp"

namespace waitroom::state::redis {
namespace {

using namespace test_values;

const redis_endpoint from{"10.0.0.9", 7000};

TEST(RedisCluster, KeySlotIsCrc16OfTheHashTagAsRedisComputesIt) {
    // Values from the Redis Cluster specification and `CLUSTER KEYSLOT`.
    EXPECT_EQ(key_slot("123456789"), 0x31C3 % 16384);
    EXPECT_EQ(key_slot("foo"), 12182);
    EXPECT_EQ(key_slot("bar"), 5061);
    EXPECT_EQ(key_slot(""), 0);
    // The hash tag: the first '{' to the next '}', when not empty.
    EXPECT_EQ(key_slot("{user1000}.following"), key_slot("user1000"));
    EXPECT_EQ(key_slot("foo{bar}{zap}"), key_slot("bar"));
    EXPECT_EQ(key_slot("foo{{bar}}zap"), key_slot("{bar"));
    // An empty or unclosed tag: the whole key.
    EXPECT_NE(key_slot("foo{}{bar}"), key_slot("bar"));
    EXPECT_NE(key_slot("foo{bar"), key_slot("bar"));
    // Every key of a room is in the room's slot.
    for (const auto& k : room_keys("wr", "shop")) {
        EXPECT_EQ(key_slot(k), key_slot("shop")) << k;
    }
}

TEST(RedisCluster, ReadsMovedAndAskRedirections) {
    auto m = parse_redirect(error("MOVED 3999 127.0.0.1:6381"), from);
    ASSERT_TRUE(m);
    EXPECT_FALSE(m->ask);
    EXPECT_EQ(m->slot, 3999);
    EXPECT_EQ(m->to, (redis_endpoint{"127.0.0.1", 6381}));

    auto a = parse_redirect(error("ASK 16383 shard-b.internal:7002"), from);
    ASSERT_TRUE(a);
    EXPECT_TRUE(a->ask);
    EXPECT_EQ(a->slot, 16383);
    EXPECT_EQ(a->to, (redis_endpoint{"shard-b.internal", 7002}));

    auto v6 = parse_redirect(error("MOVED 1 [::1]:7000"), from);
    ASSERT_TRUE(v6);
    EXPECT_EQ(v6->to, (redis_endpoint{"::1", 7000}));
    auto same_host = parse_redirect(error("MOVED 5 :7001"), from);
    ASSERT_TRUE(same_host);
    EXPECT_EQ(same_host->to, (redis_endpoint{"10.0.0.9", 7001}));

    for (const char* bad : {"MOVED", "MOVED 3999", "MOVED 16384 h:1", "MOVED -1 h:1",
                            "MOVED 12 h", "MOVED 12 h:0", "MOVED 12 h:65536", "MOVED 12 h:1x",
                            "MOVED x h:1", "ASK 1 ?:7000", "TRYAGAIN Multiple keys", "ERR x"}) {
        EXPECT_FALSE(parse_redirect(error(bad), from)) << bad;
    }
    // Only an error reply redirects.
    EXPECT_FALSE(parse_redirect(text("MOVED 1 h:1"), from));
    EXPECT_FALSE(parse_redirect(text("MOVED 1 h:1", value::kind::status), from));
}

value range(std::int64_t first, std::int64_t last, std::string host, std::int64_t port) {
    return array({integer(first), integer(last),
                  array({text(std::move(host)), integer(port), text("a1b2"), array({})})});
}

TEST(RedisCluster, ReadsTheSlotMap) {
    auto r = parse_cluster_slots(array({range(0, 5460, "127.0.0.1", 7000),
                                        range(5461, 10922, "", 7001),
                                        range(10923, 16383, "?", 7002)}),
                                 from);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->size(), 2u);  // the master without a known address is left out
    EXPECT_EQ((*r)[0].first, 0);
    EXPECT_EQ((*r)[0].last, 5460);
    EXPECT_EQ((*r)[0].master, (redis_endpoint{"127.0.0.1", 7000}));
    EXPECT_EQ((*r)[1].master, (redis_endpoint{"10.0.0.9", 7001}));  // "": the node asked

    // Replicas after the master are ignored.
    auto with_replica = range(0, 16383, "127.0.0.1", 7000);
    with_replica.elements.push_back(array({text("127.0.0.1"), integer(7003), text("r")}));
    auto one = parse_cluster_slots(array({with_replica}), from);
    ASSERT_TRUE(one);
    ASSERT_EQ(one->size(), 1u);
    EXPECT_EQ((*one)[0].master.port, 7000);

    for (const auto& bad : std::vector<value>{
             text("x"), array({text("x")}), array({range(5, 4, "h", 1)}),
             array({range(0, 16384, "h", 1)}), array({range(-1, 3, "h", 1)}),
             array({range(0, 3, "h", 0)}), array({range(0, 3, "h", 65536)}),
             array({range(0, 3, std::string(256, 'h'), 1)}),
             array({array({integer(0), integer(3)})}),
             array({array({integer(0), integer(3), array({text("h")})})})}) {
        EXPECT_FALSE(parse_cluster_slots(bad, from));
    }
}

TEST(RedisSentinel, ReadsTheMasterAddressAndRefusesAnythingElse) {
    auto m = parse_master_address(array({text("127.0.0.1"), text("6380")}));
    ASSERT_TRUE(m);
    EXPECT_EQ(*m, (redis_endpoint{"127.0.0.1", 6380}));
    value nil;  // an unknown master name
    for (const auto& bad : std::vector<value>{
             nil, error("ERR unknown"), array({text("h")}),
             array({text("h"), text("0")}), array({text("h"), text("65536")}),
             array({text("h"), text("80x")}), array({text("h"), text("")}),
             array({text(""), text("80")}), array({text("h"), integer(80)}),
             array({text("h"), text("80"), text("x")})}) {
        EXPECT_FALSE(parse_master_address(bad));
    }
}

TEST(RedisSentinel, CountsTheReplicasAMasterHas) {
    auto replica = array({text("127.0.0.1"), text("6380"), text("12")});
    EXPECT_EQ(connected_replicas(array({text("master"), integer(12), array({replica, replica})})),
              2u);
    EXPECT_EQ(connected_replicas(array({text("master"), integer(12), array({})})), 0u);
    EXPECT_EQ(connected_replicas(array({text("master"), integer(12)})), 0u);
    EXPECT_EQ(connected_replicas(array({text("slave"), text("h"), array({replica})})), 0u);
    EXPECT_EQ(connected_replicas(error("ERR")), 0u);
}

TEST(RedisSentinel, OnlyAMasterRolePasses) {
    EXPECT_TRUE(is_master_role(array({text("master"), integer(12), array({})})));
    EXPECT_FALSE(is_master_role(array({text("slave"), text("127.0.0.1"), integer(6379)})));
    EXPECT_FALSE(is_master_role(array({text("sentinel"), array({})})));
    EXPECT_FALSE(is_master_role(text("master")));
    EXPECT_FALSE(is_master_role(error("NOPERM")));
    EXPECT_FALSE(is_master_role(array({})));
}

}  // namespace
}  // namespace waitroom::state::redis

// The Redis store's wire format without a server: the script's arguments and keys, and the
// decoding of its answers (malformed answers are errors, never crashes).

#include <gtest/gtest.h>

#include "redis_protocol.hpp"
#include "waitroom/state/error.hpp"

namespace waitroom::state::redis {
namespace {

value integer(std::int64_t n) {
    value v;
    v.type = value::kind::integer;
    v.integer = n;
    return v;
}

value text(std::string s, value::kind k = value::kind::string) {
    value v;
    v.type = k;
    v.str = std::move(s);
    return v;
}

value array(std::vector<value> e) {
    value v;
    v.type = value::kind::array;
    v.elements = std::move(e);
    return v;
}

TEST(RedisProtocol, EveryKeyOfARoomCarriesItsHashTag) {
    auto keys = room_keys("wr", "shop");
    ASSERT_EQ(keys.size(), 5u);
    for (const auto& k : keys) {
        EXPECT_TRUE(k.starts_with("wr:{shop}:")) << k;
    }
}

TEST(RedisProtocol, SyncCommandCarriesLimitsAndEveryDelta) {
    node_report n;
    n.node_id = "edge-1";
    n.datacenter = "fra";
    n.now_ms = 1000;
    n.node_ttl_ms = 3000;
    room_report r;
    r.room = "shop";
    r.limits.total_active_users = 200;
    r.limits.needs_slots = false;
    r.deltas.admitted.add(0, 2);
    r.deltas.active.add(0, 2);
    r.deltas.active.add(-10'000, -1);
    r.deltas.waiting.add({0, 0}, 4);
    r.deltas.slots_used = 2;
    r.deltas.demand = 7;
    r.slots_returned = 1;
    auto c = sync_command("wr", n, r);
    ASSERT_GE(c.size(), 8u + 16u);
    EXPECT_EQ(c[0], "EVALSHA");
    EXPECT_EQ(c[1], room_script_sha());
    EXPECT_EQ(c[2], "5");
    EXPECT_EQ(c[3], "wr:{shop}:admitted");
    EXPECT_EQ(c[8], "sync");
    EXPECT_EQ(c[9], "edge-1");
    EXPECT_EQ(c[10], "fra");
    EXPECT_EQ(c[11], "1000");
    EXPECT_EQ(c[12], "200");
    EXPECT_EQ(c[19], "0");  // needs_slots
    EXPECT_EQ(c[20], "3000");
    EXPECT_EQ(c[21], "2");  // slots_used
    EXPECT_EQ(c[22], "1");  // returned
    EXPECT_EQ(c[23], "7");  // demand
    std::vector<std::string> tail(c.begin() + 24, c.end());
    EXPECT_EQ(tail, (std::vector<std::string>{"1", "0", "2", "2", "0", "2", "-10000", "-1", "1",
                                              "0", "0", "4"}));
}

TEST(RedisProtocol, ScriptShaIsTheSha1OfTheScript) {
    EXPECT_EQ(room_script_sha().size(), 40u);
    EXPECT_NE(room_script().find("room_ledger"), std::string_view::npos);
    auto load = script_load_command();
    ASSERT_EQ(load.size(), 3u);
    EXPECT_EQ(load[2], std::string(room_script()));
}

TEST(RedisProtocol, DecodesAGrantWithWaitingBucketsAndDatacenters) {
    auto v = array({integer(3), integer(0), integer(5), integer(6), integer(9),
                    array({integer(100), integer(2), integer(200), integer(1)}),
                    array({text("dc1"), integer(2), text("dc2"), integer(1)})});
    room_grant g;
    ASSERT_FALSE(parse_grant(v, "shop", 42, g));
    EXPECT_EQ(g.room, "shop");
    EXPECT_EQ(g.granted, 3);
    EXPECT_EQ(g.counts.as_of_ms, 42);
    EXPECT_EQ(g.counts.active, 5);
    EXPECT_EQ(g.counts.admitted_last_minute, 6);
    EXPECT_EQ(g.counts.held, 9);
    ASSERT_EQ(g.counts.waiting.size(), 2u);
    EXPECT_EQ(g.counts.waiting[1], (std::pair<std::int64_t, std::int64_t>{200, 1}));
    ASSERT_EQ(g.counts.datacenters.size(), 2u);
    EXPECT_EQ(g.counts.datacenters[0].datacenter, "dc1");
    EXPECT_EQ(g.counts.datacenters[0].nodes, 2u);
}

TEST(RedisProtocol, MalformedAnswersAreProtocolErrors) {
    room_grant g;
    const auto protocol = make_error_code(errc::protocol);
    EXPECT_EQ(parse_grant(integer(1), "shop", 0, g), protocol);
    EXPECT_EQ(parse_grant(array({integer(1)}), "shop", 0, g), protocol);
    auto odd = array({integer(3), integer(0), integer(5), integer(6), integer(9),
                      array({integer(100)}), array({})});
    EXPECT_EQ(parse_grant(odd, "shop", 0, g), protocol);
    auto bad_dc = array({integer(3), integer(0), integer(5), integer(6), integer(9), array({}),
                         array({integer(1), integer(1)})});
    EXPECT_EQ(parse_grant(bad_dc, "shop", 0, g), protocol);
    std::int64_t n = 0;
    EXPECT_EQ(parse_top_up(text("x"), n), protocol);
    EXPECT_FALSE(parse_top_up(integer(4), n));
    EXPECT_EQ(n, 4);
}

TEST(RedisProtocol, RecognisesNoscript) {
    EXPECT_TRUE(is_noscript(text("NOSCRIPT No matching script.", value::kind::error)));
    EXPECT_FALSE(is_noscript(text("ERR wrong", value::kind::error)));
    EXPECT_FALSE(is_noscript(text("NOSCRIPT", value::kind::string)));
}

}  // namespace
}  // namespace waitroom::state::redis

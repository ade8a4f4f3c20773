// The Redis store's wire format without a server: the script's arguments and keys, and the
// decoding of its answers (malformed answers are errors, never crashes).

#include <gtest/gtest.h>
#include <hiredis/hiredis.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "redis_protocol.hpp"
#include "state/redis_values.hpp"
#include "waitroom/room/room_state.hpp"
#include "waitroom/state/error.hpp"

namespace waitroom::state::redis {
namespace {

using namespace test_values;

TEST(RedisProtocol, EveryKeyOfARoomCarriesItsHashTag) {
    auto keys = room_keys("wr", "shop");
    ASSERT_EQ(keys.size(), 10u);
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
    r.deltas.revoke({18'446'744'073'709'551'615ull, -10'000});
    r.deltas.check_in_ticket({9'223'372'036'854'775'808ull, 0, 10'000});
    r.deltas.leave_queue(5);
    r.deltas.flag(6);
    r.lost_top_up = 77;
    auto c = sync_command("wr", n, r);
    ASSERT_GE(c.size(), 13u + 18u);
    EXPECT_EQ(c[0], "EVALSHA");
    EXPECT_EQ(c[1], room_script_sha());
    EXPECT_EQ(c[2], "10");
    EXPECT_EQ(c[3], "wr:{shop}:admitted");
    EXPECT_EQ(c[8], "wr:{shop}:overrides");
    EXPECT_EQ(c[9], "wr:{shop}:revoked");
    EXPECT_EQ(c[10], "wr:{shop}:queued");
    EXPECT_EQ(c[11], "wr:{shop}:levels");
    EXPECT_EQ(c[12], "wr:{shop}:flagged");
    EXPECT_EQ(c[13], "sync");
    EXPECT_EQ(c[14], "edge-1");
    EXPECT_EQ(c[15], "fra");
    EXPECT_EQ(c[16], "1000");
    EXPECT_EQ(c[17], "200");
    EXPECT_EQ(c[24], "0");       // needs_slots
    EXPECT_EQ(c[25], "600000");  // rejoin_ms
    EXPECT_EQ(c[26], "3000");
    EXPECT_EQ(c[27], "2");   // slots_used
    EXPECT_EQ(c[28], "1");   // returned
    EXPECT_EQ(c[29], "7");   // demand
    EXPECT_EQ(c[30], "0");   // batch
    EXPECT_EQ(c[31], "");    // no epoch known yet
    EXPECT_EQ(c[32], "-1");  // the windows are deltas
    std::vector<std::string> tail(c.begin() + 33, c.end());
    // The waiting counts go only with a re-report: the queue's tickets go instead (one check-in,
    // rank 0 for a ticket with its top bit set; one out of the queue; one flag).
    EXPECT_EQ(tail, (std::vector<std::string>{"1",
                                              "0",
                                              "2",
                                              "2",
                                              "0",
                                              "2",
                                              "-10000",
                                              "-1",
                                              "0",
                                              "1",
                                              "18446744073709551615",
                                              "-10000",
                                              "1",
                                              "9223372036854775808",
                                              "0",
                                              "10000",
                                              "0",
                                              "1",
                                              "5",
                                              "1",
                                              "6",
                                              "-1",
                                              "77"}));  // not exact; the lost top-up
}

TEST(RedisProtocol, FullSyncCommandCarriesTheLiveWindowsAndTheHeldSlotsInsteadOfTheDeltas) {
    node_report n;
    n.node_id = "edge-1";
    n.now_ms = 1000;
    room_report r;
    r.room = "shop";
    r.epoch = "500/edge-2";
    r.deltas.active.add(0, 1);
    r.live.active.add(0, 5);
    r.live.admitted.add(0, 6);
    r.held = 3;
    auto c = sync_command("wr", n, r);
    ASSERT_GE(c.size(), 33u);
    EXPECT_EQ(c[31], "500/edge-2");
    EXPECT_EQ(c[32], "-1");
    r.full = true;
    c = sync_command("wr", n, r);
    EXPECT_EQ(c[31], "500/edge-2");
    EXPECT_EQ(c[32], "3");
    std::vector<std::string> tail(c.begin() + 33, c.end());
    EXPECT_EQ(tail, (std::vector<std::string>{"1", "0", "6", "1", "0", "5", "0", "0", "0", "0", "0",
                                              "-1", "0"}));
    r.full = false;
    r.held_exact = true;
    c = sync_command("wr", n, r);
    EXPECT_EQ(c[32], "-1");
    EXPECT_EQ(c[c.size() - 2], "3");  // exact held slots
    // A re-report leaving degraded mode says so too: the script keeps the node reserved until
    // a report shows that it got an answer.
    r.full = true;
    c = sync_command("wr", n, r);
    EXPECT_EQ(c[32], "3");
    EXPECT_EQ(c[c.size() - 2], "3");
}

TEST(RedisProtocol, TopUpCommandNamesTheEpochTheNodeKnowsAndItsId) {
    top_up_request req;
    req.node_id = "edge-1";
    req.room = "shop";
    req.want = 4;
    req.epoch = "500/edge-2";
    req.id = 18'446'744'073'709'551'615ull;
    req.need = 3;
    req.unreported = 2;
    auto c = top_up_command("wr", req);
    ASSERT_GE(c.size(), 5u);
    EXPECT_EQ(c[c.size() - 5], "4");
    EXPECT_EQ(c[c.size() - 4], "500/edge-2");
    EXPECT_EQ(c[c.size() - 3], "18446744073709551615");
    EXPECT_EQ(c[c.size() - 2], "3");  // ARGV[17]: the visitors waiting for it
    EXPECT_EQ(c.back(), "2");         // ARGV[18]: the places held that the counts miss
    req.unreported = -5;
    EXPECT_EQ(top_up_command("wr", req).back(), "0") << "never a negative count of places";
}

TEST(RedisProtocol, StaleAnswerAsksForTheLiveWindows) {
    room_grant g;
    ASSERT_FALSE(parse_grant(text("stale"), "shop", 0, g));
    EXPECT_TRUE(g.stale);
    EXPECT_EQ(g.room, "shop");
    EXPECT_TRUE(is_stale(text("stale")));
    EXPECT_FALSE(is_stale(text("stale", value::kind::error)));
    EXPECT_EQ(parse_grant(text("fresh"), "shop", 0, g), make_error_code(errc::protocol));
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
                    array({text("dc1"), integer(2), text("dc2"), integer(1)}),
                    array({integer(1), integer(-1)}), text("1000/edge-1"),
                    array({text("18446744073709551615"), text("7")}), integer(4)});
    room_grant g;
    ASSERT_FALSE(parse_grant(v, "shop", 42, g));
    EXPECT_EQ(g.abandoned, 4);
    EXPECT_EQ(g.room, "shop");
    EXPECT_EQ(g.epoch, "1000/edge-1");
    EXPECT_FALSE(g.stale);
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
    EXPECT_EQ(g.overrides.queue_all, std::optional<bool>(true));
    EXPECT_EQ(g.overrides.suspended, std::nullopt);
    EXPECT_EQ(g.counts.revoked, (std::vector<std::uint64_t>{7, 18'446'744'073'709'551'615ull}));
    v.elements[10] = integer(-1);
    EXPECT_TRUE(parse_grant(v, "shop", 42, g)) << "a negative count of abandonments";
    v.elements.pop_back();
    EXPECT_TRUE(parse_grant(v, "shop", 42, g)) << "an answer of a script without the count";
    v.elements.push_back(integer(0));
    v.elements[9] = array({text("7x")});
    EXPECT_TRUE(parse_grant(v, "shop", 42, g)) << "a ticket that is not a number";
    v.elements[9] = array({});
    ASSERT_FALSE(parse_grant(v, "shop", 42, g));
    v.elements[6] = array({text("dc1"), integer(-1)});
    EXPECT_TRUE(parse_grant(v, "shop", 42, g)) << "a negative count of nodes";
    v.elements[6] = array({text("dc1"), integer(4'294'967'296)});
    EXPECT_TRUE(parse_grant(v, "shop", 42, g)) << "more nodes than 32 bits count";
    v.elements[6] = array({text("dc1"), integer(4'294'967'295), text("dc2"), integer(2)});
    ASSERT_FALSE(parse_grant(v, "shop", 42, g));
    EXPECT_EQ(room::room_state(g.counts, room::room_limits{}).nodes(), 4'294'967'295u)
        << "the sum saturates";
}

TEST(RedisProtocol, RefusesCountsNoStoreCouldHave) {
    // Past 2^40 a count would bring the sums of room_state (a waiting count per bucket, up to
    // half a million buckets in a reply) or the pools near the ends of int64.
    constexpr std::int64_t most = std::int64_t{1} << 40;
    const auto grant = [](std::vector<value> counts, value waiting) {
        return array({counts[0], counts[1], counts[2], counts[3], counts[4], std::move(waiting),
                      array({text("dc1"), integer(1)}), array({integer(-1), integer(-1)}),
                      text("1000/edge-1"), array({}), counts[5], array({}),
                      array({integer(10'000), counts[6]})});
    };
    const std::vector<value> fine{integer(most), integer(most), integer(-most), integer(-most),
                                  integer(most), integer(most), integer(most)};
    room_grant g;
    ASSERT_FALSE(parse_grant(grant(fine, array({integer(100), integer(most)})), "shop", 42, g));
    EXPECT_EQ(g.counts.waiting.at(0).second, most);
    EXPECT_EQ(g.counts.active, -most);
    EXPECT_TRUE(parse_grant(grant(fine, array({integer(100), integer(most + 1)})), "shop", 42, g))
        << "a waiting count";
    EXPECT_TRUE(parse_grant(grant(fine, array({integer(100), integer(-1)})), "shop", 42, g))
        << "a negative waiting count";
    for (std::size_t i = 0; i < fine.size(); ++i) {
        auto past = fine;
        past[i] = integer(past[i].integer < 0 ? -most - 1 : most + 1);
        EXPECT_TRUE(parse_grant(grant(past, array({})), "shop", 42, g)) << "count " << i;
        past[i] = integer(most + 1);
        EXPECT_TRUE(parse_grant(grant(past, array({})), "shop", 42, g)) << "count " << i;
        past[i] = integer(std::numeric_limits<std::int64_t>::min());
        EXPECT_TRUE(parse_grant(grant(past, array({})), "shop", 42, g)) << "count " << i;
    }
    // A window no store could have: its start past 2^62 ms, either way.
    auto far = grant(fine, array({}));
    far.elements[12] = array({integer(std::int64_t{1} << 62), integer(1)});
    EXPECT_FALSE(parse_grant(far, "shop", 42, g));
    far.elements[12] = array({integer((std::int64_t{1} << 62) + 1), integer(1)});
    EXPECT_TRUE(parse_grant(far, "shop", 42, g)) << "a place's window";
    far.elements[12] = array({});
    far.elements[11] = array({integer(std::numeric_limits<std::int64_t>::min()), integer(1)});
    EXPECT_TRUE(parse_grant(far, "shop", 42, g)) << "a sub-window";
    far.elements[11] = array({integer(1000), integer(most + 1)});
    EXPECT_TRUE(parse_grant(far, "shop", 42, g)) << "a sub-window's count";
    std::int64_t n = 0;
    EXPECT_FALSE(parse_top_up(integer(most), n));
    EXPECT_TRUE(parse_top_up(integer(most + 1), n));
    EXPECT_TRUE(parse_top_up(integer(-1), n));
}

TEST(RedisProtocol, DecodesTheMinutesAdmissionsBySubWindowAndRefusesBadOnes) {
    auto v = array({integer(3), integer(0), integer(5), integer(6), integer(9), array({}),
                    array({text("dc1"), integer(1)}), array({integer(-1), integer(-1)}),
                    text("1000/edge-1"), array({}), integer(0),
                    array({integer(2000), integer(2), integer(1000), integer(4)})});
    room_grant g;
    ASSERT_FALSE(parse_grant(v, "shop", 42, g));
    EXPECT_EQ(g.counts.admitted_windows,
              (std::vector<std::pair<std::int64_t, std::int64_t>>{{1000, 4}, {2000, 2}}));
    v.elements[11] = array({integer(1000)});
    EXPECT_TRUE(parse_grant(v, "shop", 42, g)) << "a sub-window without its count";
    v.elements[11] = array({integer(1000), integer(-3)});
    EXPECT_TRUE(parse_grant(v, "shop", 42, g)) << "a negative count";
    v.elements[11] = text("1000");
    EXPECT_TRUE(parse_grant(v, "shop", 42, g)) << "not a list";
    v.elements.pop_back();
    ASSERT_FALSE(parse_grant(v, "shop", 42, g)) << "an older script's answer";
    EXPECT_TRUE(g.counts.admitted_windows.empty());
}

using windows = std::vector<std::pair<std::int64_t, std::int64_t>>;

// A sync answer of the script, its lists of admissions by sub-window and of places by
// check-in window as given.
value grant_with_windows(value admitted, value active) {
    return array({integer(3), integer(0), integer(5), integer(6), integer(9), array({}),
                  array({text("dc1"), integer(1)}), array({integer(-1), integer(-1)}),
                  text("1000/edge-1"), array({}), integer(0), std::move(admitted),
                  std::move(active)});
}

TEST(RedisProtocol, DecodesThePlacesByCheckInWindowAndRefusesBadOnes) {
    auto v = grant_with_windows(array({integer(1000), integer(4)}),
                                array({integer(20'000), integer(3), integer(5'000), integer(1)}));
    room_grant g;
    ASSERT_FALSE(parse_grant(v, "shop", 42, g));
    EXPECT_EQ(g.counts.active_windows, (windows{{5'000, 1}, {20'000, 3}}));
    EXPECT_EQ(g.counts.admitted_windows, (windows{{1000, 4}}));
    const auto protocol = make_error_code(errc::protocol);
    v.elements[12] = array({integer(5'000)});
    EXPECT_EQ(parse_grant(v, "shop", 42, g), protocol) << "a window without its count";
    v.elements[12] = array({integer(5'000), integer(-1)});
    EXPECT_EQ(parse_grant(v, "shop", 42, g), protocol) << "a negative count";
    v.elements[12] = array({integer(5'000), text("1")});
    EXPECT_EQ(parse_grant(v, "shop", 42, g), protocol) << "a count that is not an integer";
    v.elements[12] = array({text("5000"), integer(1)});
    EXPECT_EQ(parse_grant(v, "shop", 42, g), protocol) << "a window that is not an integer";
    v.elements[12] = integer(5'000);
    EXPECT_EQ(parse_grant(v, "shop", 42, g), protocol) << "not a list";
    v.elements.push_back(array({}));
    EXPECT_EQ(parse_grant(v, "shop", 42, g), protocol) << "a 14th element";
    v.elements.resize(12);
    ASSERT_FALSE(parse_grant(v, "shop", 42, g)) << "an older script's answer";
    EXPECT_TRUE(g.counts.active_windows.empty());
    EXPECT_EQ(g.counts.admitted_windows, (windows{{1000, 4}}));
}

// Each list is bounded whatever the reply holds, ascending: the newest admission sub-windows
// are kept; a list of check-in windows longer than the script ever sends (it lists runs of
// windows past room::max_active_windows, up to twice that with nodes' clocks far ahead) is left
// out unread, and the grant stands (the list only informs the wait estimate).
TEST(RedisProtocol, BoundsTheWindowsOfAnOverlongList) {
    const std::int64_t newest = 1'000'000;
    // `n` windows a second apart, newest first, each counting its start in seconds.
    auto newest_first = [&](std::size_t n) {
        value list = array({});
        for (std::size_t i = 0; i < n; ++i) {
            const std::int64_t w = newest - static_cast<std::int64_t>(i) * 1000;
            list.elements.push_back(integer(w));
            list.elements.push_back(integer(w / 1000));
        }
        return list;
    };
    auto v = grant_with_windows(newest_first(max_admitted_windows + 100),
                                newest_first(2 * max_active_windows + 1));
    room_grant g;
    ASSERT_FALSE(parse_grant(v, "shop", 42, g));
    const windows& kept = g.counts.admitted_windows;
    ASSERT_EQ(kept.size(), max_admitted_windows);
    EXPECT_TRUE(std::is_sorted(kept.begin(), kept.end()));
    EXPECT_EQ(kept.front().first,
              newest - static_cast<std::int64_t>(max_admitted_windows - 1) * 1000);
    EXPECT_EQ(kept.back().first, newest);
    for (const auto& [w, n] : kept) {
        EXPECT_EQ(n, w / 1000) << "each window keeps its own count";
    }
    EXPECT_TRUE(g.counts.active_windows.empty());
    // Up to twice the bound (nodes' clocks far ahead add windows) is read as it is.
    v = grant_with_windows(newest_first(3), newest_first(2 * max_active_windows));
    room_grant full;
    ASSERT_FALSE(parse_grant(v, "shop", 42, full));
    ASSERT_EQ(full.counts.active_windows.size(), 2 * max_active_windows);
    EXPECT_TRUE(
        std::is_sorted(full.counts.active_windows.begin(), full.counts.active_windows.end()));
}

TEST(RedisProtocol, OverridesCommandSaysWhatToDoWithEachSwitch) {
    override_write w;
    w.room = "shop";
    w.queue_all = switch_write::on;
    w.suspended = switch_write::unset;
    w.keep_ms = 5000;
    auto c = overrides_command("wr", w);
    ASSERT_EQ(c.size(), 17u);
    EXPECT_EQ(c[0], "EVALSHA");
    EXPECT_EQ(c[2], "10");
    EXPECT_EQ(c[8], "wr:{shop}:overrides");
    EXPECT_EQ(std::vector<std::string>(c.begin() + 13, c.end()),
              (std::vector<std::string>{"overrides", "1", "unset", "5000"}));
    w.queue_all = switch_write::keep;
    w.suspended = switch_write::off;
    c = overrides_command("wr", w);
    EXPECT_EQ(c[14], "keep");
    EXPECT_EQ(c[15], "0");
}

TEST(RedisProtocol, DecodesOverridesAndRefusesOtherValues) {
    room_switch_values o;
    ASSERT_FALSE(parse_overrides(array({integer(0), integer(-1)}), o));
    EXPECT_EQ(o.queue_all, std::optional<bool>(false));
    EXPECT_EQ(o.suspended, std::nullopt);
    const auto protocol = make_error_code(errc::protocol);
    EXPECT_EQ(parse_overrides(array({integer(2), integer(0)}), o), protocol);
    EXPECT_EQ(parse_overrides(array({integer(1)}), o), protocol);
    EXPECT_EQ(parse_overrides(integer(1), o), protocol);
}

TEST(RedisProtocol, MalformedAnswersAreProtocolErrors) {
    room_grant g;
    const auto protocol = make_error_code(errc::protocol);
    EXPECT_EQ(parse_grant(integer(1), "shop", 0, g), protocol);
    EXPECT_EQ(parse_grant(array({integer(1)}), "shop", 0, g), protocol);
    auto odd =
        array({integer(3), integer(0), integer(5), integer(6), integer(9), array({integer(100)}),
               array({}), array({integer(-1), integer(-1)}), text("e"), array({})});
    EXPECT_EQ(parse_grant(odd, "shop", 0, g), protocol);
    auto bad_dc = array({integer(3), integer(0), integer(5), integer(6), integer(9), array({}),
                         array({integer(1), integer(1)}), array({integer(-1), integer(-1)}),
                         text("e"), array({})});
    EXPECT_EQ(parse_grant(bad_dc, "shop", 0, g), protocol);
    auto no_overrides =
        array({integer(3), integer(0), integer(5), integer(6), integer(9), array({}), array({})});
    EXPECT_EQ(parse_grant(no_overrides, "shop", 0, g), protocol);
    auto no_epoch = array({integer(3), integer(0), integer(5), integer(6), integer(9), array({}),
                           array({}), array({integer(-1), integer(-1)})});
    EXPECT_EQ(parse_grant(no_epoch, "shop", 0, g), protocol);
    auto epoch_not_text =
        array({integer(3), integer(0), integer(5), integer(6), integer(9), array({}), array({}),
               array({integer(-1), integer(-1)}), integer(7), array({})});
    EXPECT_EQ(parse_grant(epoch_not_text, "shop", 0, g), protocol);
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

// Reads `bytes` with a reader that has the client's bounded reply builders; the replies it got
// go to `out`, and the result is false when the reader refused the bytes.
bool read_bounded(std::string_view bytes, std::vector<value>& out,
                  std::int64_t max = max_reply_elements) {
    redisReader* r = redisReaderCreate();
    reply_budget budget;
    budget.max = max;
    bound_replies(*r, budget);
    bool ok = redisReaderFeed(r, bytes.data(), bytes.size()) == REDIS_OK;
    void* reply = nullptr;
    while (ok && (ok = redisReaderGetReply(r, &reply) == REDIS_OK) && reply != nullptr) {
        out.push_back(from_reply(*static_cast<redisReply*>(reply)));
        freeReplyObject(reply);
    }
    redisReaderFree(r);
    return ok;
}

TEST(RedisProtocol, BoundedReaderBuildsTheSameRepliesAsHiredis) {
    std::vector<value> got;
    ASSERT_TRUE(
        read_bounded("*3\r\n:7\r\n$3\r\nabc\r\n*2\r\n+OK\r\n$-1\r\n-ERR no\r\n*0\r\n", got));
    ASSERT_EQ(got.size(), 3u);
    ASSERT_EQ(got[0].type, value::kind::array);
    ASSERT_EQ(got[0].elements.size(), 3u);
    EXPECT_EQ(got[0].elements[0].integer, 7);
    EXPECT_EQ(got[0].elements[1].str, "abc");
    ASSERT_EQ(got[0].elements[2].elements.size(), 2u);
    EXPECT_EQ(got[0].elements[2].elements[0].type, value::kind::status);
    EXPECT_EQ(got[0].elements[2].elements[1].type, value::kind::nil);
    EXPECT_TRUE(got[1].is_error());
    EXPECT_EQ(got[1].str, "ERR no");
    EXPECT_EQ(got[2].type, value::kind::array);
    EXPECT_TRUE(got[2].elements.empty());
}

TEST(RedisProtocol, AnArrayCountPastTheBoundIsRefusedBeforeAnythingIsAllocated) {
    // Eleven bytes that would make hiredis's own reader calloc 1.6 GB (found by the fuzzer).
    std::vector<value> got;
    EXPECT_FALSE(read_bounded("*200000000\r\n", got));
    EXPECT_TRUE(got.empty());
    // A count that does not fit hiredis 0.14's int.
    EXPECT_FALSE(read_bounded("*4294967295\r\n", got));
    // Exactly the bound is allowed (the slots are allocated; the elements never arrive).
    EXPECT_TRUE(read_bounded("*" + std::to_string(max_reply_elements) + "\r\n", got));
}

TEST(RedisProtocol, ASmallerBoundIsTheSameArithmetic) {
    std::vector<value> got;
    EXPECT_TRUE(read_bounded("*2\r\n*1\r\n:1\r\n:2\r\n", got, 3));  // 2 + 1 elements
    EXPECT_FALSE(read_bounded("*2\r\n*2\r\n:1\r\n:1\r\n:2\r\n", got, 3));
    EXPECT_FALSE(read_bounded("*4\r\n", got, 3));
    ASSERT_TRUE(read_bounded("*3\r\n:1\r\n:2\r\n:3\r\n*3\r\n:1\r\n:2\r\n:3\r\n", got, 3));
}

TEST(RedisProtocol, TheBoundCountsEveryArrayOfOneReplyAndRestartsWithTheNext) {
    // An array of more than half the bound, its elements all sent.
    const std::int64_t half = max_reply_elements / 2 + 1;
    std::string full_half = "*" + std::to_string(half) + "\r\n";
    for (std::int64_t i = 0; i < half; ++i) {
        full_half += ":1\r\n";
    }
    // Two of them in one reply are past the bound...
    std::vector<value> got;
    EXPECT_FALSE(read_bounded("*2\r\n" + full_half + full_half, got));
    EXPECT_TRUE(got.empty());
    // ...but as two replies each has its own budget.
    ASSERT_TRUE(read_bounded(full_half + full_half, got));
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[1].elements.size(), static_cast<std::size_t>(half));
}

}  // namespace
}  // namespace waitroom::state::redis

// Idempotent syncs: every report carries its node's batch id; a store answers a repeat
// of the batch it last applied for that node without counting it again, and a node whose sync
// timed out sends that batch again under its id instead of merging it into the next one.

#include <gtest/gtest.h>

#include <memory>
#include <optional>

#include "waitroom/config/config.hpp"
#include "waitroom/room/engine.hpp"
#include "waitroom/state/local_store.hpp"
#include "waitroom/state/sync_task.hpp"

#include "state/store_doubles.hpp"
#include "support/room_config.hpp"

namespace waitroom::state {
namespace {

using test::scripted_store;
using test::t0;

room::room_limits limits() {
    room::room_limits l;
    l.total_active_users = 100;
    l.new_users_per_minute = 100;
    l.session_ms = 300'000;
    l.abandon_after_ms = 25'000;
    return l;
}

node_report admitted_two(std::uint64_t batch, std::int64_t now, const std::string& id = "a") {
    node_report n;
    n.node_id = id;
    n.datacenter = "dc";
    n.now_ms = now;
    n.batch = batch;
    room_report r;
    r.room = "shop";
    r.limits = limits();
    r.deltas.admitted.add(t0, 2);
    r.deltas.active.add(t0, 2);
    r.deltas.slots_used = 2;
    r.deltas.demand = 2;
    n.rooms.push_back(r);
    return n;
}

sync_result call(store& st, node_report r) {
    std::optional<sync_result> out;
    st.sync(std::move(r), [&](sync_result s) { out = std::move(s); });
    EXPECT_TRUE(out.has_value());
    return out ? std::move(*out) : sync_result{make_error_code(errc::timeout), {}};
}

TEST(SyncBatch, LocalStoreCountsTheSameBatchTwiceOnce) {
    local_store st;
    auto first = call(st, admitted_two(7, t0));
    ASSERT_FALSE(first.ec);
    EXPECT_EQ(first.rooms[0].counts.admitted_last_minute, 2);
    auto again = call(st, admitted_two(7, t0 + 100));
    ASSERT_FALSE(again.ec);
    EXPECT_EQ(again.rooms[0].counts.admitted_last_minute, 2);  // answered, not counted
    EXPECT_EQ(again.rooms[0].counts.active, 2);

    EXPECT_EQ(call(st, admitted_two(8, t0 + 200)).rooms[0].counts.admitted_last_minute, 4);
    // Another node's batch with the same number is its own.
    EXPECT_EQ(call(st, admitted_two(8, t0 + 300, "b")).rooms[0].counts.admitted_last_minute, 6);
    // No batch id: always applied (stores driven without ids, such as the simulator's).
    EXPECT_EQ(call(st, admitted_two(0, t0 + 400)).rooms[0].counts.admitted_last_minute, 8);
    EXPECT_EQ(call(st, admitted_two(0, t0 + 500)).rooms[0].counts.admitted_last_minute, 10);
}

struct one_node {
    explicit one_node(store& st) : sync(state, st, sync_options{}) {
        auto cfg = test::shop_config(100, 100);
        eng = std::make_shared<room::engine>(cfg);
        sync.set_engine(eng);
    }
    std::error_code run(std::int64_t now) {
        std::optional<std::error_code> out;
        sync.run_once(now, [&](std::error_code ec) { out = ec; });
        EXPECT_TRUE(out.has_value());
        return out.value_or(errc::timeout);
    }
    void admit(std::int64_t window, std::int64_t n) {
        room::delta_set d;
        d["shop"].admitted.add(window, n);
        d["shop"].active.add(window, n);
        state.submit(d);
    }
    std::shared_ptr<room::engine> eng;
    room::node_state state;
    sync_task sync;
};

TEST(SyncBatch, TimedOutSyncThatTheStoreAppliedIsSentAgainAndCountedOnce) {
    scripted_store st;
    one_node n(st);
    ASSERT_FALSE(n.run(t0));
    n.admit(t0, 3);
    st.lose_next = true;
    EXPECT_EQ(n.run(t0 + 1'000), make_error_code(errc::timeout));
    EXPECT_EQ(st.inner.counts("shop", limits(), t0 + 1'000).admitted_last_minute, 3);

    n.admit(t0, 5);                   // arrives while the first batch's fate is unknown
    ASSERT_FALSE(n.run(t0 + 2'000));  // the same batch again: answered, not counted
    ASSERT_EQ(st.batches.size(), 3u);
    EXPECT_EQ(st.batches[2], st.batches[1]);
    EXPECT_EQ(st.inner.counts("shop", limits(), t0 + 2'000).admitted_last_minute, 3);

    ASSERT_FALSE(n.run(t0 + 3'000));  // then the new deltas, in a batch of their own
    EXPECT_NE(st.batches[3], st.batches[2]);
    EXPECT_EQ(st.inner.counts("shop", limits(), t0 + 3'000).admitted_last_minute, 8);
}

TEST(SyncBatch, EveryReportOfANodeHasANewBatch) {
    scripted_store st;
    one_node n(st);
    ASSERT_FALSE(n.run(t0));
    ASSERT_FALSE(n.run(t0 + 1'000));
    ASSERT_EQ(st.batches.size(), 2u);
    EXPECT_NE(st.batches[0], 0u);
    EXPECT_GT(st.batches[1], st.batches[0]);
}

// A sync answer lost after the store applied it carried a grant the node never got: the resend
// of that batch gets it again (the store takes the lost one back), so the node's pool and the
// store's count of its held slots agree. Before, the resend granted nothing and the slots stayed
// held by nobody for as long as the node lived.
TEST(SyncBatch, AResentBatchGetsTheGrantItsLostAnswerCarried) {
    local_store st;
    auto first = call(st, admitted_two(7, t0));
    ASSERT_FALSE(first.ec);
    ASSERT_GT(first.rooms[0].granted, 0);
    auto again = call(st, admitted_two(7, t0 + 100));  // the first answer never arrived
    ASSERT_FALSE(again.ec);
    EXPECT_EQ(again.rooms[0].granted, first.rooms[0].granted);
    EXPECT_EQ(st.held_total("shop"), again.rooms[0].granted);
}

top_up_request top_up_of(std::int64_t want, std::uint64_t id, std::int64_t now) {
    top_up_request r;
    r.node_id = "a";
    r.datacenter = "dc";
    r.room = "shop";
    r.limits = limits();
    r.want = want;
    r.now_ms = now;
    r.id = id;
    return r;
}

// A top-up answer lost after the store granted it: the next sync names it and the store
// takes its slots back; a name that is not the store's last top-up of the node changes nothing.
TEST(SyncBatch, ALostTopUpNamedByTheNextSyncIsTakenBack) {
    local_store lost;
    local_store control;  // the same node without the top-up
    for (auto* st : {&lost, &control}) {
        ASSERT_FALSE(call(*st, admitted_two(1, t0)).ec);
    }
    std::optional<top_up_result> t;
    lost.top_up(top_up_of(3, 41, t0 + 10), [&](top_up_result r) { t = r; });
    ASSERT_TRUE(t && t->granted == 3);

    auto named = admitted_two(2, t0 + 20);
    named.rooms[0].lost_top_up = 41;
    auto a = call(lost, named);
    auto b = call(control, admitted_two(2, t0 + 20));
    EXPECT_EQ(a.rooms[0].granted, b.rooms[0].granted);
    EXPECT_EQ(lost.held_total("shop"), control.held_total("shop"));

    lost.top_up(top_up_of(3, 42, t0 + 30), [&](top_up_result r) { t = r; });
    ASSERT_EQ(t->granted, 3);
    auto other = admitted_two(3, t0 + 40);
    other.rooms[0].lost_top_up = 41;  // already settled: not the last top-up any more
    ASSERT_FALSE(call(lost, other).ec);
    ASSERT_FALSE(call(control, admitted_two(3, t0 + 40)).ec);
    EXPECT_GT(lost.held_total("shop"), control.held_total("shop"));
}

// The sync task: a top-up whose answer never came is named in the room's next report, and no
// further top-up of the room goes out until that report is answered.
TEST(SyncBatch, TheNodeNamesItsLostTopUpAndAsksNoMoreUntilItIsSettled) {
    scripted_store st;
    one_node n(st);
    ASSERT_FALSE(n.run(t0));
    const int calls = st.top_up_calls;
    st.lose_next_top_up = true;
    std::optional<bool> got;
    n.sync.top_up("shop", t0 + 10, [&](bool ok) { got = ok; });
    ASSERT_TRUE(got.has_value());
    EXPECT_FALSE(*got);
    EXPECT_EQ(st.top_up_calls, calls + 1);
    EXPECT_GT(st.inner.held_total("shop"), n.state.pool("shop").available());  // granted, lost

    got.reset();
    n.sync.top_up("shop", t0 + 20, [&](bool ok) { got = ok; });
    EXPECT_EQ(got, std::optional<bool>(false));
    EXPECT_EQ(st.top_up_calls, calls + 1);  // not asked: the lost one is not settled yet

    ASSERT_FALSE(n.run(t0 + 1'000));
    EXPECT_EQ(st.inner.held_total("shop"), n.state.pool("shop").available());
    got.reset();
    n.sync.top_up("shop", t0 + 1'010, [&](bool ok) { got = ok; });
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(st.top_up_calls, calls + 2);  // settled: top-ups go out again
}

// A sync applied by the store whose answer was lost past the lease (the node went degraded and
// merged its deltas back) carried a grant the node never got. Leaving degraded mode the node
// says exactly what it holds of the store's lease, so the store's count matches its pool again.
TEST(SyncBatch, LeavingDegradedModeTheStoreCountsExactlyTheLeaseTheNodeHolds) {
    scripted_store st;
    one_node n(st);
    ASSERT_FALSE(n.run(t0));
    room::delta_set busy;
    busy["shop"].demand = 10;
    n.state.submit(busy);
    st.lose_next = true;
    EXPECT_EQ(n.run(t0 + 3'000), make_error_code(errc::timeout));  // past the lease
    EXPECT_TRUE(n.sync.degraded(t0 + 3'000));
    const std::int64_t leaked = st.inner.held_total("shop");
    EXPECT_GT(leaked, 0);  // granted in the answer that never came
    ASSERT_FALSE(n.run(t0 + 4'000));
    EXPECT_FALSE(n.sync.degraded(t0 + 4'000));
    EXPECT_EQ(st.inner.held_total("shop"), n.state.pool("shop").available());
}

}  // namespace
}  // namespace waitroom::state

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

}  // namespace
}  // namespace waitroom::state

// The Asio timers that drive a node's sync task and its workers' delta flushes.

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

#include "server/sync_timer.hpp"
#include "state/store_doubles.hpp"
#include "support/decide.hpp"
#include "waitroom/state/local_store.hpp"
#include "waitroom/state/sync_task.hpp"

namespace waitroom::server {
namespace {

using test::make_engine;
using test::t0;

TEST(SyncTimer, DrivesTheSyncTaskOnTheExecutor) {
    test::one_node n(make_engine(10, 100));
    auto& [eng, node, st, sync] = n;
    util::manual_clock clock;
    boost::asio::io_context ioc;
    sync_timer timer(ioc.get_executor(), sync, clock, std::chrono::milliseconds{1000});
    timer.start();
    ioc.run_one();  // the first sync runs at once
    EXPECT_EQ(sync.syncs(), 1u);
    timer.stop();
    ioc.run();  // the cancelled wait completes; nothing else is pending
    EXPECT_EQ(sync.syncs(), 1u);
}

// A visitor's decision on a worker (a top-up asked of the store when its pool is empty).
room::decision decide(room::engine& e, room::worker_state& ws, state::sync_task& sync,
                      const room::payload* cookie, std::int64_t now, room::rng& rng) {
    return test::decide_with_top_ups(e, e.rooms()[0], ws, cookie, now, rng,
                                     [&] { sync.top_up("shop", now, [](bool) {}); });
}

std::int64_t active_in_snapshot(const room::node_state& node) {
    const room::room_state* rs = node.snapshot()->find("shop");
    return rs == nullptr ? -1 : rs->counts().active;
}

// Each worker admits a visitor between two syncs; its counters stay in the worker. The next sync
// has both flush first, and waits for the last to answer: the store counts both visitors.
TEST(SyncTimer, EachSyncTakesEveryWorkersDeltasFirst) {
    test::one_node n(make_engine(10, 100));
    auto& [eng, node, st, sync] = n;
    room::worker_state ws1(node), ws2(node);
    room::rng rng(7);
    sync.run_once(t0);
    ASSERT_EQ(decide(*eng, ws1, sync, nullptr, t0 + 100, rng).what, room::action::admit);
    ASSERT_EQ(decide(*eng, ws2, sync, nullptr, t0 + 200, rng).what, room::action::admit);

    util::manual_clock clock{util::sys_time{std::chrono::milliseconds{t0 + 1000}}};
    boost::asio::io_context control, worker1, worker2;
    sync_timer timer(control.get_executor(), sync, clock, std::chrono::milliseconds{1000},
                     {{worker1.get_executor(), &ws1}, {worker2.get_executor(), &ws2}});
    const auto syncs = sync.syncs();
    timer.start();
    ASSERT_EQ(control.poll_one(), 1u);  // the round: a flush posted to each worker
    ASSERT_EQ(worker1.poll_one(), 1u);
    ASSERT_EQ(control.poll_one(), 1u);  // worker 1's answer
    EXPECT_EQ(sync.syncs(), syncs) << "worker 2 has not answered yet";
    ASSERT_EQ(worker2.poll_one(), 1u);
    ASSERT_EQ(control.poll_one(), 1u);  // the last answer: the sync
    ASSERT_EQ(sync.syncs(), syncs + 1);
    EXPECT_EQ(active_in_snapshot(node), 2);
    timer.stop();
}

// A worker that does not answer in time does not hold the sync back; its deltas go with the
// next sync, which asks it again once it has answered.
TEST(SyncTimer, ABusyWorkersDeltasGoWithTheNextSync) {
    test::one_node n(make_engine(10, 100));
    auto& [eng, node, st, sync] = n;
    room::worker_state ws(node);
    room::rng rng(7);
    sync.run_once(t0);
    ASSERT_EQ(decide(*eng, ws, sync, nullptr, t0 + 100, rng).what, room::action::admit);

    util::manual_clock clock{util::sys_time{std::chrono::milliseconds{t0 + 1000}}};
    boost::asio::io_context control, worker;
    sync_timer timer(control.get_executor(), sync, clock, std::chrono::milliseconds{400},
                     {{worker.get_executor(), &ws}});
    const auto syncs = sync.syncs();
    timer.start();
    control.run_one();  // the round starts; the flush waits in the busy worker
    EXPECT_EQ(sync.syncs(), syncs);
    control.run_one();  // the deadline (100 ms) passes: the sync runs without the worker
    EXPECT_EQ(sync.syncs(), syncs + 1);
    EXPECT_EQ(active_in_snapshot(node), 0) << "the admission is still in the worker";
    worker.run_one();   // the late flush
    control.run_one();  // its answer ends nothing: that round is over
    EXPECT_EQ(sync.syncs(), syncs + 1);
    control.run_one();  // the next round, 400 ms after the last began
    worker.run_one();
    control.run_one();
    EXPECT_EQ(sync.syncs(), syncs + 2);
    EXPECT_EQ(active_in_snapshot(node), 1) << "the late deltas went with this sync";
    timer.stop();
}

}  // namespace
}  // namespace waitroom::server

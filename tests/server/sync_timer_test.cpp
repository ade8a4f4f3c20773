// The Asio timers that drive a node's sync task and its workers' delta flushes.

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

#include "server/sync_timer.hpp"
#include "state/store_doubles.hpp"
#include "waitroom/state/local_store.hpp"
#include "waitroom/state/sync_task.hpp"

namespace waitroom::server {
namespace {

using test::make_engine;
using test::t0;

TEST(SyncTimer, DrivesTheSyncTaskOnTheExecutor) {
    auto eng = make_engine(10, 100);
    room::node_state node;
    state::local_store st;
    state::sync_task sync(node, st, {});
    sync.set_engine(eng);
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
    auto d = e.decide(e.rooms()[0], ws, cookie, now, rng);
    if (d.what == room::action::wait_for_slots) {
        sync.top_up("shop", now, [](bool) {});
        d = e.decide(e.rooms()[0], ws, cookie, now, rng, room::attempt::after_top_up);
    }
    return d;
}

// A room of one place, sessions of 5 s (active windows of 1 s: a visitor last seen at t0 + 100
// holds the place in the store until t0 + 6000). Visitor a comes back at t0 + 5800, after its
// worker's last flush; the next sync runs at t0 + 6500. Unless that sync takes the worker's
// deltas first, the store has dropped a's place and leases it to b: two in a room of one.
TEST(SyncTimer, EachSyncTakesEveryWorkersCheckInsFirst) {
    auto eng = make_engine(1, 100, std::chrono::seconds{5});
    room::node_state node;
    state::local_store st;
    state::sync_task sync(node, st, {});
    sync.set_engine(eng);
    room::worker_state ws(node);
    room::rng rng(7);
    sync.run_once(t0);
    const auto a = decide(*eng, ws, sync, nullptr, t0 + 100, rng);
    ASSERT_EQ(a.what, room::action::admit);
    ws.flush();
    sync.run_once(t0 + 1000);
    ASSERT_EQ(decide(*eng, ws, sync, nullptr, t0 + 1100, rng).what, room::action::queue)
        << "the room of one is full";
    sync.run_once(t0 + 5500);
    ASSERT_EQ(decide(*eng, ws, sync, &a.cookie, t0 + 5800, rng).what, room::action::admit)
        << "a's session is alive: it comes back and is counted in a later window";

    util::manual_clock clock{util::sys_time{std::chrono::milliseconds{t0 + 6500}}};
    boost::asio::io_context control, worker;
    sync_timer timer(control.get_executor(), sync, clock, std::chrono::milliseconds{1000},
                     {{worker.get_executor(), &ws}});
    const auto syncs = sync.syncs();
    timer.start();
    // The two threads, one step at a time: the flush is posted to the worker, its answer to
    // control, and the sync runs there.
    for (int i = 0; i < 100 && sync.syncs() == syncs; ++i) {
        control.poll_one();
        worker.poll_one();
    }
    ASSERT_EQ(sync.syncs(), syncs + 1);
    timer.stop();
    EXPECT_EQ(decide(*eng, ws, sync, nullptr, t0 + 6600, rng).what, room::action::queue)
        << "a still holds the one place: b waits";
}

// A worker that does not answer in time does not hold the sync back: its deltas go next time.
TEST(SyncTimer, ABusyWorkerDoesNotHoldTheSyncBack) {
    auto eng = make_engine(10, 100);
    room::node_state node;
    state::local_store st;
    state::sync_task sync(node, st, {});
    sync.set_engine(eng);
    room::worker_state ws(node);
    util::manual_clock clock;
    boost::asio::io_context control, worker;  // the worker's context never runs
    sync_timer timer(control.get_executor(), sync, clock, std::chrono::milliseconds{40},
                     {{worker.get_executor(), &ws}});
    timer.start();
    control.run_one();  // the round starts; the flush waits in the worker
    EXPECT_EQ(sync.syncs(), 0u);
    control.run_one();  // the deadline (10 ms) passes
    EXPECT_EQ(sync.syncs(), 1u);
    timer.stop();
    worker.run();  // the late flush answers a round that is over: no second sync
    control.restart();
    control.run();
    EXPECT_EQ(sync.syncs(), 1u);
}

}  // namespace
}  // namespace waitroom::server

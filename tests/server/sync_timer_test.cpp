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

    room::worker_state ws(node);
    flush_timer flusher(ioc.get_executor(), ws, std::chrono::milliseconds{1000});
    flusher.start();
    flusher.stop();
    ioc.restart();
    ioc.run();
}

}  // namespace
}  // namespace waitroom::server

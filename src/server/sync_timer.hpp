#pragma once
// Asio drivers for the sync task and the workers' delta flushes: steady timers on an executor
// that server/ owns, so no thread is created here.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <memory>

#include "waitroom/room/engine.hpp"
#include "waitroom/state/sync_task.hpp"
#include "waitroom/util/clock.hpp"

namespace waitroom::server {

// Runs state::sync_task::run_once every interval on `ex` (any io_context; usually a worker's).
class sync_timer {
  public:
    sync_timer(boost::asio::any_io_executor ex, state::sync_task& task, const util::clock& clock,
               std::chrono::milliseconds interval);
    ~sync_timer();
    void start();  // first sync immediately
    void stop();   // on the executor's thread (or posted there)

  private:
    struct impl;
    std::shared_ptr<impl> impl_;
};

// Flushes one worker's deltas every interval. Must run on that worker's io_context.
class flush_timer {
  public:
    flush_timer(boost::asio::any_io_executor ex, room::worker_state& ws,
                std::chrono::milliseconds interval);
    ~flush_timer();
    void start();
    void stop();

  private:
    struct impl;
    std::shared_ptr<impl> impl_;
};

}  // namespace waitroom::server

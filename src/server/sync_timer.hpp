#pragma once
// The Asio driver of the sync task: a steady timer on an executor that server/ owns, so no thread
// is created here. Before each sync it has every worker hand its deltas over on its own thread.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <memory>
#include <vector>

#include "waitroom/room/engine.hpp"
#include "waitroom/state/sync_task.hpp"
#include "waitroom/util/clock.hpp"

namespace waitroom::server {

// A worker's counters, and the executor of the one thread that may touch them.
struct worker_counters {
    boost::asio::any_io_executor ex;
    room::worker_state* counters = nullptr;
};

// Runs state::sync_task::run_once every interval on `ex` (the control thread's executor). Each
// sync first has every worker flush its deltas, so that it reports every check-in made before it:
// a check-in left in a worker past a sync could be missed by the store until after the session
// it renewed had ended there, and that place leased to someone else (overshoot). A worker that
// has not flushed within `flush_wait` is not waited for: its deltas go with the next sync.
class sync_timer {
  public:
    sync_timer(boost::asio::any_io_executor ex, state::sync_task& task, const util::clock& clock,
               std::chrono::milliseconds interval, std::vector<worker_counters> workers = {});
    ~sync_timer();
    void start();  // first sync immediately (after the workers' flush)
    void stop();   // on the executor's thread (or posted there)

  private:
    struct impl;
    std::shared_ptr<impl> impl_;
};

}  // namespace waitroom::server

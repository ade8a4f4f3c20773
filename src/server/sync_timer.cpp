#include "sync_timer.hpp"

#include <boost/asio/post.hpp>

#include <algorithm>

namespace waitroom::server {

namespace asio = boost::asio;

struct sync_timer::impl : std::enable_shared_from_this<sync_timer::impl> {
    impl(asio::any_io_executor ex, state::sync_task& t, const util::clock& c,
         std::chrono::milliseconds i, std::vector<worker_counters> w)
        : timer(ex),
          deadline(ex),
          task(t),
          clock(c),
          interval(i),
          flush_wait(std::clamp<std::chrono::milliseconds>(i / 4, std::chrono::milliseconds{1},
                                                           std::chrono::milliseconds{250})),
          workers(std::move(w)) {}

    // Every worker flushes on its own thread; the last to answer (or the deadline) syncs. A
    // worker whose last flush has not answered yet is not asked again (one flush waits in its
    // queue at most). Counts, flags and rounds are touched only on this executor's thread.
    void tick() {
        if (stopped) {
            return;
        }
        started = std::chrono::steady_clock::now();
        if (workers.empty()) {
            sync();
            return;
        }
        const std::uint64_t r = ++round;
        waiting = 0;
        auto home = timer.get_executor();
        for (std::size_t i = 0; i < workers.size(); ++i) {
            if (asked[i]) {
                continue;
            }
            asked[i] = true;
            ++waiting;
            asio::post(workers[i].ex,
                       [self = shared_from_this(), counters = workers[i].counters, home, r, i] {
                           counters->flush();
                           asio::post(home, [self, r, i] {
                               self->asked[i] = false;
                               if (r == self->round && --self->waiting == 0) {
                                   self->sync();
                               }
                           });
                       });
        }
        // (Every worker still busy with its last flush: the deadline syncs without them.)
        deadline.expires_after(flush_wait);
        deadline.async_wait([self = shared_from_this(), r](const boost::system::error_code& ec) {
            if (!ec && r == self->round) {
                self->sync();  // a busy worker's deltas go with the next sync
            }
        });
    }

    void sync() {
        ++round;  // late flushes of this round change nothing
        deadline.cancel();
        if (stopped) {
            return;
        }
        task.run_once(util::unix_ms(clock.now()));
        // The period counts from the round's start: waiting for the workers does not stretch it.
        timer.expires_at(started + interval);
        timer.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
            if (ec) {
                return;  // cancelled by stop()
            }
            self->tick();
        });
    }

    asio::steady_timer timer;
    asio::steady_timer deadline;
    state::sync_task& task;
    const util::clock& clock;
    std::chrono::milliseconds interval;
    std::chrono::milliseconds flush_wait;
    std::vector<worker_counters> workers;
    std::vector<bool> asked = std::vector<bool>(workers.size(), false);  // a flush not answered
    std::chrono::steady_clock::time_point started;
    std::uint64_t round = 0;
    std::size_t waiting = 0;
    bool stopped = false;
};

sync_timer::sync_timer(asio::any_io_executor ex, state::sync_task& task, const util::clock& clock,
                       std::chrono::milliseconds interval, std::vector<worker_counters> workers)
    : impl_(std::make_shared<impl>(std::move(ex), task, clock, interval, std::move(workers))) {}

sync_timer::~sync_timer() {
    stop();
}

void sync_timer::start() {
    asio::post(impl_->timer.get_executor(), [self = impl_] { self->tick(); });
}

void sync_timer::stop() {
    impl_->stopped = true;
    impl_->timer.cancel();
    impl_->deadline.cancel();
}

}  // namespace waitroom::server

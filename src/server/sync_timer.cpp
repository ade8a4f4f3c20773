#include "sync_timer.hpp"

#include <boost/asio/post.hpp>

namespace waitroom::server {

namespace asio = boost::asio;

struct sync_timer::impl : std::enable_shared_from_this<sync_timer::impl> {
    impl(asio::any_io_executor ex, state::sync_task& t, const util::clock& c, std::chrono::milliseconds i)
        : timer(ex), task(t), clock(c), interval(i) {}

    void tick() {
        if (stopped) {
            return;
        }
        task.run_once(util::unix_ms(clock.now()));
        timer.expires_after(interval);
        timer.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
            if (ec) {
                return;  // cancelled by stop()
            }
            self->tick();
        });
    }

    asio::steady_timer timer;
    state::sync_task& task;
    const util::clock& clock;
    std::chrono::milliseconds interval;
    bool stopped = false;
};

sync_timer::sync_timer(asio::any_io_executor ex, state::sync_task& task, const util::clock& clock,
                       std::chrono::milliseconds interval)
    : impl_(std::make_shared<impl>(std::move(ex), task, clock, interval)) {}

sync_timer::~sync_timer() {
    impl_->stopped = true;
    impl_->timer.cancel();
}

void sync_timer::start() {
    asio::post(impl_->timer.get_executor(), [self = impl_] { self->tick(); });
}

void sync_timer::stop() {
    impl_->stopped = true;
    impl_->timer.cancel();
}

struct flush_timer::impl : std::enable_shared_from_this<flush_timer::impl> {
    impl(asio::any_io_executor ex, room::worker_state& w, std::chrono::milliseconds i)
        : timer(ex), ws(w), interval(i) {}

    void arm() {
        timer.expires_after(interval);
        timer.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
            if (ec || self->stopped) {
                return;
            }
            self->ws.flush();
            self->arm();
        });
    }

    asio::steady_timer timer;
    room::worker_state& ws;
    std::chrono::milliseconds interval;
    bool stopped = false;
};

flush_timer::flush_timer(asio::any_io_executor ex, room::worker_state& ws,
                         std::chrono::milliseconds interval)
    : impl_(std::make_shared<impl>(std::move(ex), ws, interval)) {}

flush_timer::~flush_timer() {
    impl_->stopped = true;
    impl_->timer.cancel();
}

void flush_timer::start() {
    impl_->arm();
}

void flush_timer::stop() {
    impl_->stopped = true;
    impl_->timer.cancel();
}

}  // namespace waitroom::server

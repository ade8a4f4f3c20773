// A graceful shutdown: drain the open connections up to limits.drain_timeout, then close
// whatever is left and stop the control loop.
#include "server_impl.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/post.hpp>

namespace waitroom::server {

using namespace std::chrono_literals;

namespace {

// How often the control loop looks at the workers' open connections while draining.
constexpr auto drain_poll_interval = 20ms;

}  // namespace

void server::impl::begin_shutdown(const char* why) {
    if (finishing_) {
        return;
    }
    if (draining_) {
        spdlog::warn("{} received again: closing every connection now", why);
        finish_shutdown();
        return;
    }
    draining_ = true;
    if (admin_backend_) {
        admin_backend_->set_draining();
    }
    auto timeout = ctx_->config()->limits.drain_timeout;
    drain_deadline_ = std::chrono::steady_clock::now() + timeout;
    spdlog::info("{} received: draining (up to {} ms for in-flight requests)", why,
                 timeout.count());
    on_every_worker([](gateway::worker& w) { w.drain(); }, [this] { poll_drain(); });
}

void server::impl::poll_drain() {
    if (finishing_) {
        return;
    }
    std::size_t open = 0;
    for (const auto& w : workers_) {
        open += w->open_connections();
    }
    if (open == 0) {
        spdlog::info("drained: no connection left open");
        finish_shutdown();
        return;
    }
    if (std::chrono::steady_clock::now() >= drain_deadline_) {
        spdlog::warn("drain timeout: closing {} connection(s) still open", open);
        finish_shutdown();
        return;
    }
    drain_timer_.expires_after(drain_poll_interval);
    drain_timer_.async_wait([this](const boost::system::error_code& ec) {
        if (!ec) {
            poll_drain();
        }
    });
}

void server::impl::finish_shutdown() {
    finishing_ = true;
    drain_timer_.cancel();
    if (admin_) {
        admin_->stop();
    }
    if (origin_monitor_) {
        origin_monitor_->stop();
    }
    on_every_worker([](gateway::worker& w) { w.close_all(); },
                    [this] {
                        signals_.cancel();
                        control_.stop();
                    });
}

void server::impl::on_every_worker(std::function<void(gateway::worker&)> fn,
                                   std::function<void()> done) {
    auto remaining = std::make_shared<std::size_t>(workers_.size());
    auto shared_done = std::make_shared<std::function<void()>>(std::move(done));
    for (std::size_t i = 0; i < workers_.size(); ++i) {
        asio::post(*iocs_[i], [this, i, fn, remaining, shared_done] {
            fn(*workers_[i]);
            // The count is touched only on the control thread.
            asio::post(control_, [remaining, shared_done] {
                if (--*remaining == 0) {
                    (*shared_done)();
                }
            });
        });
    }
    if (workers_.empty()) {
        asio::post(control_, [shared_done] { (*shared_done)(); });
    }
}

}  // namespace waitroom::server

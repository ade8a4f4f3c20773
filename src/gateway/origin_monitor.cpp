#include "waitroom/gateway/origin_monitor.hpp"

#include <boost/asio/post.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

#include <algorithm>

#include "origin_connection.hpp"
#include "origin_pool.hpp"

namespace waitroom::gateway {

namespace {

// The probes of one server: one at a time, every interval, each bounded by the check's timeout.
class prober : public std::enable_shared_from_this<prober> {
  public:
    using verdict = std::function<void()>;

    // `m` is a member of `group`.
    prober(executor_type ex, std::shared_ptr<const origin_group> group,
           const origin_group::member& m, const config::origin& o, verdict changed)
        : group_(std::move(group)),
          member_(m),
          checks_(o.health_check),
          pool_(std::make_shared<origin_pool>(ex)),
          timer_(ex),
          changed_(std::move(changed)) {
        auto settings = config::for_server(o, m.server);
        settings.connect_timeout = std::min(settings.connect_timeout, checks_.timeout);
        pool_->configure(settings);
    }

    void start() { probe(); }
    void stop() {
        stopped_ = true;
        timer_.cancel();
        if (conn_) {
            conn_->close();
        }
    }

  private:
    void probe() {
        if (stopped_) {
            return;
        }
        deadline_ = std::chrono::steady_clock::now() + checks_.timeout;
        pool_->acquire(
            [self = shared_from_this()](error_code ec, std::shared_ptr<origin_connection> c) {
                self->on_connected(ec, std::move(c));
            },
            true);
    }

    void on_connected(error_code ec, std::shared_ptr<origin_connection> c) {
        if (ec || stopped_) {
            return finish(false);
        }
        conn_ = std::move(c);
        request_ = {http::verb::get, checks_.path, 11};
        request_.set(http::field::host, pool_->host_header());
        request_.set(http::field::user_agent, "waitroomd-health-check");
        request_.set(http::field::connection, "close");
        conn_->lowest().expires_at(deadline_);
        conn_->visit([&](auto& stream) {
            http::async_write(stream, request_,
                              [self = shared_from_this()](error_code wec, std::size_t) {
                                  self->on_written(wec);
                              });
        });
    }

    void on_written(error_code ec) {
        if (ec || stopped_) {
            return finish(false);
        }
        parser_.emplace();
        parser_->skip(true);  // the status is the verdict; the body is not read
        conn_->visit([&](auto& stream) {
            http::async_read_header(
                stream, conn_->buffer(), *parser_,
                [self = shared_from_this()](error_code rec, std::size_t) { self->on_head(rec); });
        });
    }

    void on_head(error_code ec) {
        const unsigned status = ec ? 0 : parser_->get().result_int();
        finish(status >= 200 && status < 400);
    }

    // Counts the probe's outcome; the verdict flips after `healthy` passes or `unhealthy`
    // failures in a row. The next probe starts one interval after this one started.
    void finish(bool passed) {
        if (conn_) {
            pool_->release(std::move(conn_), false);
        }
        if (stopped_) {
            return;
        }
        auto& health = *member_.health;
        passes_ = passed ? passes_ + 1 : 0;
        failures_ = passed ? 0 : failures_ + 1;
        const bool up = health.checks_pass();
        if (up && failures_ >= checks_.unhealthy) {
            spdlog::warn("origin server {}: health check failed {} times in a row: out",
                         member_.server.url, failures_);
            health.set_checks_pass(false);
            changed_();
        } else if (!up && passes_ >= checks_.healthy) {
            spdlog::info("origin server {}: health check passed {} times in a row: back",
                         member_.server.url, passes_);
            health.set_checks_pass(true);
            changed_();
        }
        timer_.expires_at(deadline_ - checks_.timeout + checks_.interval);
        timer_.async_wait([self = shared_from_this()](error_code tec) {
            if (!tec) {
                self->probe();
            }
        });
    }

    std::shared_ptr<const origin_group> group_;  // keeps member_
    const origin_group::member& member_;
    config::health_check checks_;
    std::shared_ptr<origin_pool> pool_;
    steady_timer timer_;
    verdict changed_;
    std::shared_ptr<origin_connection> conn_;
    http::request<http::empty_body> request_;
    std::optional<http::response_parser<http::empty_body>> parser_;
    std::chrono::steady_clock::time_point deadline_;
    unsigned passes_ = 0;
    unsigned failures_ = 0;
    bool stopped_ = false;
};

}  // namespace

struct origin_monitor::impl : std::enable_shared_from_this<impl> {
    impl(boost::asio::io_context::executor_type ex, metrics::metric_set* m, unsigned slot)
        : ex_(std::move(ex)), metrics_(m), slot_(slot), expiry_(ex_) {}

    // The gate, the health gauges, and a timer for the next end of an ejection.
    void evaluate() {
        if (!group_) {
            return;
        }
        const auto now = health_clock::now();
        const bool open = group_->refresh_gate(now);
        if (open != open_) {
            open_ = open;
            if (open) {
                spdlog::info("origin: a server takes requests again: rooms admit new visitors");
            } else {
                spdlog::warn(
                    "origin: no server takes requests: rooms admit nobody new (admitted "
                    "visitors keep their places) until one is back");
            }
        }
        auto next = health_clock::time_point::max();
        for (const auto& m : group_->members()) {
            if (m.metrics != nullptr) {
                m.metrics->healthy.set(slot_, m.health->available(now) ? 1 : 0);
            }
            if (m.health->ejected(now)) {
                next = std::min(next, m.health->ejected_until());
            }
        }
        expiry_.cancel();
        if (next != health_clock::time_point::max()) {
            expiry_.expires_at(next);
            expiry_.async_wait([weak = weak_from_this()](error_code ec) {
                if (auto self = weak.lock(); self && !ec) {
                    self->evaluate();
                }
            });
        }
    }

    void stop_probes() {
        for (auto& p : probers_) {
            p->stop();
        }
        probers_.clear();
    }

    boost::asio::io_context::executor_type ex_;
    metrics::metric_set* metrics_;
    unsigned slot_;
    steady_timer expiry_;
    std::shared_ptr<const origin_group> group_;
    std::vector<std::shared_ptr<prober>> probers_;
    bool open_ = true;
};

origin_monitor::origin_monitor(boost::asio::io_context::executor_type ex, metrics::metric_set* m,
                               unsigned slot)
    : impl_(std::make_shared<impl>(std::move(ex), m, slot)) {}

origin_monitor::~origin_monitor() {
    impl_->stop_probes();
    impl_->expiry_.cancel();
}

void origin_monitor::watch(std::shared_ptr<const origin_group> group, const config::origin& o) {
    impl_->stop_probes();
    impl_->group_ = std::move(group);
    const auto& members = impl_->group_->members();
    if (!o.health_check.enabled) {
        for (const auto& m : members) {
            m.health->set_checks_pass(true);  // checks turned off: their verdict no longer holds
        }
    } else {
        for (const auto& m : members) {
            auto p = std::make_shared<prober>(impl_->ex_, impl_->group_, m, o,
                                              [weak = std::weak_ptr(impl_)] {
                                                  if (auto self = weak.lock()) {
                                                      self->evaluate();
                                                  }
                                              });
            p->start();
            impl_->probers_.push_back(std::move(p));
        }
    }
    impl_->evaluate();
}

void origin_monitor::wake() {
    boost::asio::post(impl_->ex_, [weak = std::weak_ptr(impl_)] {
        if (auto self = weak.lock()) {
            self->evaluate();
        }
    });
}

void origin_monitor::stop() {
    impl_->stop_probes();
    impl_->expiry_.cancel();
    impl_->group_.reset();
}

}  // namespace waitroom::gateway

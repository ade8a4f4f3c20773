#include "origin_pool.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/beast/core/bind_handler.hpp>

#include <openssl/ssl.h>

#include <algorithm>

namespace waitroom::gateway {

// Resolve → connect → TLS handshake for one new connection, bounded by connect_timeout.
class origin_pool::connector : public std::enable_shared_from_this<connector> {
  public:
    connector(std::shared_ptr<origin_pool> pool, std::shared_ptr<origin_connection> c, handler h)
        : pool_(std::move(pool)),
          conn_(std::move(c)),
          handler_(std::move(h)),
          resolver_(pool_->ex_) {}

    void run() {
        const auto& o = pool_->origin_;
        deadline_ = std::chrono::steady_clock::now() + o.connect_timeout;
        resolver_.async_resolve(
            o.host, std::to_string(o.port),
            beast::bind_front_handler(&connector::on_resolve, shared_from_this()));
    }

  private:
    void on_resolve(error_code ec, tcp::resolver::results_type results) {
        if (ec) {
            return finish(ec);
        }
        conn_->lowest().expires_at(deadline_);
        conn_->lowest().async_connect(
            results, beast::bind_front_handler(&connector::on_connect, shared_from_this()));
    }

    void on_connect(error_code ec, const tcp::endpoint&) {
        if (ec) {
            return finish(ec);
        }
        conn_->lowest().socket().set_option(tcp::no_delay(true), ec);
        auto* tls = conn_->tls_stream();
        if (tls == nullptr) {
            // Plain TCP: the session writes inline while the socket takes it (write_now).
            conn_->lowest().socket().non_blocking(true, ec);
            return finish({});
        }
        const auto& o = pool_->origin_;
        const std::string& name = o.server_name.empty() ? o.host : o.server_name;
        if (!SSL_set_tlsext_host_name(tls->native_handle(), name.c_str())) {
            return finish(
                error_code(static_cast<int>(::ERR_get_error()), asio::error::get_ssl_category()));
        }
        if (o.verify_tls) {
            tls->set_verify_mode(ssl::verify_peer);
            tls->set_verify_callback(ssl::host_name_verification(name));
        } else {
            tls->set_verify_mode(ssl::verify_none);
        }
        tls->async_handshake(
            ssl::stream_base::client,
            beast::bind_front_handler(&connector::on_handshake, shared_from_this()));
    }

    void on_handshake(error_code ec) { finish(ec); }

    void finish(error_code ec) {
        conn_->lowest().expires_never();
        pool_->on_connected(ec, std::move(conn_), std::move(handler_));
    }

    std::shared_ptr<origin_pool> pool_;
    std::shared_ptr<origin_connection> conn_;
    handler handler_;
    tcp::resolver resolver_;
    std::chrono::steady_clock::time_point deadline_;
};

namespace {

class pool_category : public boost::system::error_category {
  public:
    const char* name() const noexcept override { return "waitroom.origin_pool"; }
    std::string message(int) const override {
        return "no origin connection free in time (origin.max_connections in use)";
    }
};

}  // namespace

error_code origin_pool::busy() {
    static const pool_category category;
    return {1, category};
}

origin_pool::origin_pool(executor_type ex, metrics::metric_set* metrics, unsigned slot)
    : ex_(std::move(ex)), waiters_timer_(ex_), metrics_(metrics), slot_(slot) {}

void origin_pool::discard(origin_connection& c) {
    c.close();
    --total_;
    if (c.counted) {
        c.counted = false;
        if (metrics_ != nullptr) {
            metrics_->origin_connections().sub(slot_, 1);
        }
    }
}

std::shared_ptr<origin_connection> origin_pool::take_idle(bool retryable) {
    const auto now =
        idle_.empty() ? std::chrono::steady_clock::time_point{} : std::chrono::steady_clock::now();
    while (!idle_.empty()) {
        auto c = std::move(idle_.back());
        idle_.pop_back();
        const bool peek = !retryable || now - c->idle_since >= peek_after;
        if (c->looks_dead(peek)) {
            discard(*c);
            continue;
        }
        return c;
    }
    return nullptr;
}

bool origin_pool::serves(const config::origin& o) const {
    return configured_ && o.url == origin_.url && o.verify_tls == origin_.verify_tls &&
           o.ca_file == origin_.ca_file && o.server_name == origin_.server_name &&
           o.tls == origin_.tls && o.host == origin_.host && o.port == origin_.port;
}

void origin_pool::configure(const config::origin& o) {
    if (serves(o)) {
        origin_.connect_timeout = o.connect_timeout;
        origin_.timeout = o.timeout;
        origin_.max_connections = o.max_connections;
        origin_.idle_timeout = o.idle_timeout;
        origin_.pool_wait_timeout = o.pool_wait_timeout;
        origin_.max_pool_waiters = o.max_pool_waiters;
        return;
    }
    close_idle();
    ++generation_;
    origin_ = o;
    configured_ = true;
    const bool default_port = (o.tls && o.port == 443) || (!o.tls && o.port == 80);
    const bool v6 = o.host.find(':') != std::string::npos;
    host_header_ = v6 ? "[" + o.host + "]" : o.host;
    if (!default_port) {
        host_header_ += ":" + std::to_string(o.port);
    }
    tls_.reset();
    if (o.tls) {
        tls_ = std::make_unique<ssl::context>(ssl::context::tls_client);
        error_code ec;
        if (!o.ca_file.empty()) {
            tls_->load_verify_file(o.ca_file, ec);
        } else {
            tls_->set_default_verify_paths(ec);
        }
        if (ec) {
            spdlog::error("gateway: origin CA certificates ({}): {}",
                          o.ca_file.empty() ? "system store" : o.ca_file, ec.message());
        }
    }
}

void origin_pool::acquire(handler h, bool fresh, bool retryable) {
    if (!fresh) {
        if (auto c = take_idle(retryable)) {
            asio::post(ex_,
                       [h = std::move(h), c = std::move(c)]() mutable { h({}, std::move(c)); });
            return;
        }
    }
    if (fresh && !idle_.empty() && total_ >= std::max<std::size_t>(origin_.max_connections, 1)) {
        // Make room for the fresh connection by dropping the oldest idle one.
        auto oldest = std::move(idle_.front());
        idle_.erase(idle_.begin());
        discard(*oldest);
    }
    if (total_ < std::max<std::size_t>(origin_.max_connections, 1)) {
        ++total_;
        connect(std::move(h));
        return;
    }
    if (waiters_.size() >= origin_.max_pool_waiters) {
        asio::post(ex_, [h = std::move(h)] { h(busy(), nullptr); });
        return;
    }
    waiters_.push_back(
        {std::move(h), std::chrono::steady_clock::now() + origin_.pool_wait_timeout});
    watch_waiters();
}

// One timer for all waiters, armed for the first one's deadline; when it fires, every waiter
// past its deadline gets busy() and the timer is armed for the next.
void origin_pool::watch_waiters() {
    if (waiters_timer_armed_ || waiters_.empty()) {
        return;
    }
    waiters_timer_armed_ = true;
    waiters_timer_.expires_at(waiters_.front().deadline);
    waiters_timer_.async_wait(
        beast::bind_front_handler(&origin_pool::on_waiters_timer, shared_from_this()));
}

void origin_pool::on_waiters_timer(error_code ec) {
    waiters_timer_armed_ = false;
    if (ec == asio::error::operation_aborted) {
        return;
    }
    const auto now = std::chrono::steady_clock::now();
    // Deadlines ascend but for waiters that came before a reload changed the timeout: those are
    // found when they reach the front.
    while (!waiters_.empty() && waiters_.front().deadline <= now) {
        auto h = std::move(waiters_.front().h);
        waiters_.pop_front();
        asio::post(ex_, [h = std::move(h)] { h(busy(), nullptr); });
    }
    watch_waiters();
}

void origin_pool::connect(handler h) {
    auto c = std::make_shared<origin_connection>(ex_, tls_.get());
    c->pool_generation = generation_;
    c->home = weak_from_this();
    std::make_shared<connector>(shared_from_this(), std::move(c), std::move(h))->run();
}

void origin_pool::on_connected(error_code ec, std::shared_ptr<origin_connection> c, handler h) {
    if (ec) {
        fail(ec, "origin connect");
        discard(*c);
        h(ec, nullptr);
        serve_waiter();
        return;
    }
    c->counted = true;
    if (metrics_ != nullptr) {
        metrics_->origin_connections().add(slot_, 1);
    }
    h({}, std::move(c));
}

void origin_pool::release(std::shared_ptr<origin_connection> c, bool reusable) {
    ++c->requests_served;
    if (!reusable || c->pool_generation != generation_) {
        discard(*c);
        serve_waiter();
        return;
    }
    if (!waiters_.empty()) {
        auto h = std::move(waiters_.front().h);
        waiters_.pop_front();
        asio::post(ex_, [h = std::move(h), c = std::move(c)]() mutable { h({}, std::move(c)); });
        return;
    }
    c->idle_since = std::chrono::steady_clock::now();
    if (!c->idle_watched) {
        watch_idle(c);
    }
    idle_.push_back(std::move(c));
}

void origin_pool::serve_waiter() {
    if (!waiters_.empty() && total_ < std::max<std::size_t>(origin_.max_connections, 1)) {
        auto h = std::move(waiters_.front().h);
        waiters_.pop_front();
        ++total_;
        connect(std::move(h));
    }
}

// One timer per connection, armed lazily: a connection reused again and again keeps the timer
// it already has instead of re-arming it on every release; when it fires, a connection that
// was used meanwhile is simply watched again from its latest release.
void origin_pool::watch_idle(const std::shared_ptr<origin_connection>& c) {
    c->idle_watched = true;
    c->idle_timer.expires_at(c->idle_since + origin_.idle_timeout);
    c->idle_timer.async_wait([self = shared_from_this(), weak = std::weak_ptr(c)](error_code ec) {
        auto conn = weak.lock();
        if (!conn) {
            return;
        }
        conn->idle_watched = false;
        if (ec) {
            return;
        }
        auto it = std::find(self->idle_.begin(), self->idle_.end(), conn);
        if (it == self->idle_.end()) {
            return;  // in use: watched again when it comes back
        }
        if (std::chrono::steady_clock::now() - conn->idle_since < self->origin_.idle_timeout) {
            return self->watch_idle(conn);
        }
        self->idle_.erase(it);
        self->discard(*conn);
    });
}

void origin_pool::close_idle() {
    for (auto& c : idle_) {
        discard(*c);
    }
    idle_.clear();
}

}  // namespace waitroom::gateway

#include "listener.hpp"

#include <sys/socket.h>

#include "client_session.hpp"
#include "worker_context.hpp"

namespace waitroom::gateway {

void worker_context::session_closed(session_base* s) {
    sessions.erase(s);
    open.fetch_sub(1, std::memory_order_relaxed);
    for (auto& l : listeners) {
        l->resume();
    }
}

void worker_context::want_sweep(const std::shared_ptr<worker_context>& self) {
    if (self->sweep_armed) {
        return;
    }
    self->sweep_armed = true;
    self->sweep_timer.expires_after(sweep_interval);
    self->sweep_timer.async_wait([weak = std::weak_ptr<worker_context>(self)](error_code ec) {
        auto st = weak.lock();
        if (ec || !st) {
            return;
        }
        st->sweep_armed = false;
        const auto cutoff = std::chrono::steady_clock::now() - sweep_interval;
        bool again = false;
        std::vector<session_base*> sessions(st->sessions.begin(), st->sessions.end());
        for (auto* s : sessions) {
            again = s->sweep(cutoff) || again;
        }
        if (again) {
            want_sweep(st);
        }
    });
}

listener::listener(std::shared_ptr<worker_context> state, const tcp::endpoint& ep,
                   const config::listener& cfg, std::shared_ptr<const listener_tls> tls)
    : state_(std::move(state)),
      acceptor_(state_->ioc),
      retry_timer_(state_->ioc),
      tls_(std::move(tls)) {
    proxy_protocol_ = cfg.proxy_protocol;
    h2c_ = cfg.h2c;
    acceptor_.open(ep.protocol());
    acceptor_.set_option(asio::socket_base::reuse_address(true));
    int one = 1;
    if (::setsockopt(acceptor_.native_handle(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0) {
        throw std::system_error(errno, std::generic_category(), "SO_REUSEPORT");
    }
    acceptor_.bind(ep);
    acceptor_.listen(asio::socket_base::max_listen_connections);
}

tcp::endpoint listener::local_endpoint() const {
    error_code ec;
    return acceptor_.local_endpoint(ec);
}

void listener::run() {
    do_accept();
}

void listener::stop() {
    stopped_ = true;
    error_code ignored;
    acceptor_.close(ignored);
    retry_timer_.cancel();
}

void listener::resume() {
    if (paused_ && !stopped_ &&
        state_->open.load(std::memory_order_relaxed) <
            state_->ctx->config()->limits.max_connections) {
        paused_ = false;
        do_accept();
    }
}

void listener::do_accept() {
    acceptor_.async_accept(state_->ioc,
                           beast::bind_front_handler(&listener::on_accept, shared_from_this()));
}

void listener::on_accept(error_code ec, tcp_socket socket) {
    if (stopped_) {
        return;
    }
    if (ec) {
        fail(ec, "accept");
        // Out of descriptors and the like: try again shortly rather than spin.
        retry_timer_.expires_after(std::chrono::milliseconds(50));
        retry_timer_.async_wait([self = shared_from_this()](error_code e) {
            if (!e && !self->stopped_) {
                self->do_accept();
            }
        });
        return;
    }
    socket.set_option(tcp::no_delay(true), ec);
    // The certificates current now serve a TLS connection for its whole life.
    std::make_shared<client_session>(state_, std::move(socket), tls_ ? tls_->current() : nullptr,
                                     proxy_protocol_, h2c_)
        ->run();
    // The config is read here only, once per accepted connection.
    if (state_->open.load(std::memory_order_relaxed) >=
        state_->ctx->config()->limits.max_connections) {
        paused_ = true;
        return;
    }
    do_accept();
}

}  // namespace waitroom::gateway

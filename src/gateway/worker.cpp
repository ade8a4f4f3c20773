// worker: the listeners, sessions and origin pool of one io_context.
#include "waitroom/gateway/worker.hpp"

#include "listener.hpp"
#include "worker_context.hpp"

namespace waitroom::gateway {

struct worker::impl {
    std::shared_ptr<worker_context> state;
};

worker::worker(asio::io_context& ioc, std::shared_ptr<shared_context> ctx, unsigned index)
    : impl_(std::make_unique<impl>()) {
    impl_->state = std::make_shared<worker_context>(ioc, std::move(ctx), index);
}

worker::~worker() {
    for (auto& l : impl_->state->listeners) {
        l->stop();
    }
    // Listeners hold the state; break the cycle so it goes with the last session.
    impl_->state->listeners.clear();
}

void worker::start(const std::vector<tcp::endpoint>& endpoints,
                   const std::vector<config::listener>& listeners,
                   const std::vector<std::shared_ptr<listener_tls>>& tls) {
    for (std::size_t i = 0; i < endpoints.size(); ++i) {
        config::listener cfg = i < listeners.size() ? listeners[i] : config::listener{};
        std::shared_ptr<const listener_tls> certs = i < tls.size() ? tls[i] : nullptr;
        if (cfg.tls && !certs) {
            certs = std::make_shared<listener_tls>(cfg);
        }
        auto l = std::make_shared<listener>(impl_->state, endpoints[i], cfg, std::move(certs));
        impl_->state->listeners.push_back(l);
    }
    for (auto& l : impl_->state->listeners) {
        l->run();
    }
}

std::vector<tcp::endpoint> worker::local_endpoints() const {
    std::vector<tcp::endpoint> out;
    for (const auto& l : impl_->state->listeners) {
        out.push_back(l->local_endpoint());
    }
    return out;
}

void worker::drain() {
    auto& st = *impl_->state;
    st.draining = true;
    for (auto& l : st.listeners) {
        l->stop();
    }
    st.stop_sweep();
    std::vector<session_base*> sessions(st.sessions.begin(), st.sessions.end());
    for (auto* s : sessions) {
        s->drain();
    }
    st.pool->close_idle();
}

void worker::close_all() {
    auto& st = *impl_->state;
    for (auto& l : st.listeners) {
        l->stop();
    }
    st.stop_sweep();
    std::vector<session_base*> sessions(st.sessions.begin(), st.sessions.end());
    for (auto* s : sessions) {
        s->close();
    }
    st.pool->close_idle();
}

std::size_t worker::open_connections() const {
    return impl_->state->open.load(std::memory_order_relaxed);
}

}  // namespace waitroom::gateway

#include "waitroom/admin/admin_server.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include "admin_session.hpp"
#include "admin_shared.hpp"
#include "waitroom/net/common.hpp"

namespace waitroom::admin {

using namespace waitroom::net;

// The acceptor lives on its own strand so that stop() may come from any thread.
struct admin_server::impl : std::enable_shared_from_this<admin_server::impl> {
    impl(asio::io_context& ioc, std::shared_ptr<admin_backend> backend, admin_options opts)
        : ioc_(ioc),
          strand_(asio::make_strand(ioc)),
          acceptor_(strand_),
          retry_(strand_),
          shared_(std::make_shared<admin_shared>(std::move(backend), opts)) {}

    void do_accept() {
        acceptor_.async_accept(asio::make_strand(ioc_),
                               [self = shared_from_this()](error_code ec, tcp::socket socket) {
                                   self->on_accept(ec, std::move(socket));
                               });
    }

    void on_accept(error_code ec, tcp::socket socket) {
        if (stopped_) {
            return;
        }
        if (ec) {
            fail(ec, "admin accept");
            // Out of descriptors and the like: try again shortly rather than spin.
            retry_.expires_after(std::chrono::milliseconds(50));
            retry_.async_wait([self = shared_from_this()](error_code e) {
                if (!e && !self->stopped_) {
                    self->do_accept();
                }
            });
            return;
        }
        if (shared_->open() >= shared_->options.max_connections) {
            spdlog::warn("admin: {} connections open; closing a new one",
                         shared_->options.max_connections);
            error_code ignored;
            socket.close(ignored);
        } else {
            std::make_shared<admin_session>(shared_, std::move(socket))->run();
        }
        do_accept();
    }

    void stop() {
        stopped_ = true;
        error_code ignored;
        acceptor_.close(ignored);
        retry_.cancel();
        for (auto& s : shared_->all()) {
            s->close();
        }
    }

    asio::io_context& ioc_;
    asio::strand<asio::io_context::executor_type> strand_;
    tcp::acceptor acceptor_;
    asio::steady_timer retry_;
    std::shared_ptr<admin_shared> shared_;
    bool stopped_ = false;
};

admin_server::admin_server(asio::io_context& ioc, std::shared_ptr<admin_backend> backend,
                           admin_options options)
    : impl_(std::make_shared<impl>(ioc, std::move(backend), options)) {}

admin_server::~admin_server() {
    stop();
}

void admin_server::start(const tcp::endpoint& endpoint) {
    auto& a = impl_->acceptor_;
    a.open(endpoint.protocol());
    a.set_option(asio::socket_base::reuse_address(true));
    a.bind(endpoint);
    a.listen(asio::socket_base::max_listen_connections);
    asio::post(impl_->strand_, [self = impl_] { self->do_accept(); });
}

void admin_server::stop() {
    asio::post(impl_->strand_, [self = impl_] {
        if (!self->stopped_) {
            self->stop();
        }
    });
}

tcp::endpoint admin_server::local_endpoint() const {
    error_code ec;
    return impl_->acceptor_.local_endpoint(ec);
}

void admin_server::set_token(std::optional<std::string> token,
                             std::vector<std::string> allowed_hosts) {
    auto access = std::make_shared<admin_access>();
    if (token) {
        access->token.emplace(*token);
    }
    access->allowed_hosts = std::move(allowed_hosts);
    impl_->shared_->access.store(std::move(access), std::memory_order_release);
}

void admin_server::follow_access(access_source source) {
    impl_->shared_->access_source = std::move(source);
}

}  // namespace waitroom::admin

#include "admin_session.hpp"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

#include "admin_shared.hpp"
#include "waitroom/net/common.hpp"

namespace waitroom::admin {

using namespace waitroom::net;

admin_session::admin_session(std::shared_ptr<admin_shared> shared, tcp::socket socket)
    : shared_(std::move(shared)), stream_(std::move(socket)) {}

admin_session::~admin_session() {
    shared_->forget(this);
}

void admin_session::run() {
    shared_->remember(this, weak_from_this());
    // Start on the session's strand: everything after runs there.
    asio::dispatch(stream_.get_executor(),
                   beast::bind_front_handler(&admin_session::do_read, shared_from_this()));
}

void admin_session::close() {
    asio::post(stream_.get_executor(), [self = shared_from_this()] { self->do_close(); });
}

void admin_session::do_read() {
    parser_.emplace();
    parser_->body_limit(shared_->options.body_limit);
    parser_->header_limit(static_cast<std::uint32_t>(shared_->options.header_limit));
    // A keep-alive connection may wait idle for its next request; once bytes arrive, the
    // request must be complete within read_timeout.
    stream_.expires_after(buffer_.size() > 0 ? shared_->options.read_timeout
                                             : shared_->options.idle_timeout);
    http::async_read(stream_, buffer_, *parser_,
                     beast::bind_front_handler(&admin_session::on_read, shared_from_this()));
}

void admin_session::on_read(error_code ec, std::size_t) {
    if (ec == http::error::end_of_stream) {
        return do_close();
    }
    if (ec == http::error::body_limit) {
        keep_alive_ = false;
        linger_ = true;
        return on_reply(admin_routes::error(
            413,
            "request body larger than " + std::to_string(shared_->options.body_limit) + " bytes"));
    }
    if (ec == http::error::header_limit) {
        keep_alive_ = false;
        linger_ = true;
        return on_reply(admin_routes::error(431, "request header too large"));
    }
    if (ec && is_expected_noise(ec)) {
        return fail(ec, "admin read");
    }
    if (ec) {
        // A parse error: answer it, then close (the stream position is lost).
        fail(ec, "admin read");
        keep_alive_ = false;
        linger_ = true;
        return on_reply(admin_routes::error(400, "malformed HTTP request"));
    }
    // Everything needed after the reply is copied now: the parser is reset for the next one.
    const auto& req = parser_->get();
    version_ = req.version();
    keep_alive_ = req.keep_alive();
    // Stop the read timer while the backend works; the write sets its own.
    stream_.expires_never();

    auto access = shared_->current_access();
    auto self = shared_from_this();
    auto ex = stream_.get_executor();
    shared_->routes.handle(req, *access, [self, ex](admin_reply reply) {
        // A PATCH may complete on a store thread: come back to the session's strand.
        asio::dispatch(
            ex, [self, reply = std::move(reply)]() mutable { self->on_reply(std::move(reply)); });
    });
}

void admin_session::on_reply(admin_reply reply) {
    http::response<http::string_body> res{static_cast<http::status>(reply.status), version_};
    res.set(http::field::server, "waitroomd-admin");
    res.set(http::field::content_type, reply.content_type);
    res.set(http::field::cache_control, "no-store");
    res.set("X-Content-Type-Options", "nosniff");
    for (auto& [name, value] : reply.headers) {
        res.set(name, value);
    }
    res.keep_alive(keep_alive_);
    res.body() = std::move(reply.body);
    res.prepare_payload();
    do_write(std::move(res));
}

void admin_session::do_write(http::response<http::string_body> res) {
    auto sp = std::make_shared<http::response<http::string_body>>(std::move(res));
    res_ = sp;
    bool keep_alive = sp->keep_alive();
    stream_.expires_after(shared_->options.write_timeout);
    http::async_write(
        stream_, *sp,
        beast::bind_front_handler(&admin_session::on_write, shared_from_this(), keep_alive));
}

void admin_session::on_write(bool keep_alive, error_code ec, std::size_t) {
    res_.reset();
    if (ec) {
        return fail(ec, "admin write");
    }
    if (!keep_alive) {
        return linger_ ? do_linger() : do_close();
    }
    do_read();
}

// After refusing a request whose rest is still unread, close gracefully: closing with unread
// bytes would send a reset, which may destroy the answer before the client has read it.
void admin_session::do_linger() {
    error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    // One bound for the whole drain, so a client that keeps sending cannot hold the socket.
    stream_.expires_after(std::chrono::seconds{1});
    do_discard();
}

void admin_session::do_discard() {
    discard_.consume(discard_.size());
    stream_.async_read_some(discard_.prepare(16 * 1024),
                            [self = shared_from_this()](error_code e, std::size_t n) {
                                self->discard_.commit(n);
                                if (e) {
                                    return self->do_close();
                                }
                                self->do_discard();
                            });
}

void admin_session::do_close() {
    error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    stream_.socket().close(ec);
}

}  // namespace waitroom::admin

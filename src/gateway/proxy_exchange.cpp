#include "proxy_exchange.hpp"

#include <boost/asio/write.hpp>
#include <boost/beast/core/read_size.hpp>
#include <boost/beast/core/string.hpp>

#include "client_session.hpp"
#include "forward_headers.hpp"
#include "origin_connection.hpp"
#include "origin_pool.hpp"
#include "read_steps.hpp"

namespace waitroom::gateway {

namespace {

constexpr std::size_t piece_size = relay_buffer::piece_size;

bool is_idempotent(http::verb v) {
    switch (v) {
        case http::verb::get:
        case http::verb::head:
        case http::verb::options:
        case http::verb::put:
        case http::verb::delete_:
        case http::verb::trace:
            return true;
        default:
            return false;
    }
}

// The metric label of a failed origin exchange (`connecting`: no connection was made).
metrics::origin_error origin_error_kind(const error_code& ec, bool connecting) {
    if (ec == beast::error::timeout) {
        return metrics::origin_error::timeout;
    }
    if (ec.category() == asio::error::get_ssl_category() ||
        ec.category() == asio::ssl::error::get_stream_category()) {
        return metrics::origin_error::tls;
    }
    if (connecting) {
        return metrics::origin_error::connect;
    }
    if (ec == http::error::end_of_stream || ec == http::error::partial_message) {
        return metrics::origin_error::reset;
    }
    if (ec.category() == http::make_error_code(http::error::bad_target).category()) {
        return metrics::origin_error::protocol;
    }
    if (ec == asio::error::connection_refused || ec == asio::error::host_unreachable ||
        ec == asio::error::network_unreachable || ec == asio::error::host_not_found) {
        return metrics::origin_error::connect;
    }
    return metrics::origin_error::reset;
}

}  // namespace

template <class Stream>
proxy_exchange<Stream>::proxy_exchange(client_session<Stream>& session, worker_context& worker)
    : session_(session), worker_(worker), relay_(worker), claim_(worker) {}

template <class Stream>
void proxy_exchange<Stream>::on_deadline(std::chrono::steady_clock::time_point now) {
    if (origin_waiting_ && origin_) {
        if (now < origin_deadline_) {
            return session_.arm_timer(origin_deadline_);
        }
        origin_timed_out_ = true;
        error_code ignored;
        origin_->lowest().socket().cancel(ignored);
    } else if (body_waiting_) {
        if (now < body_deadline_) {
            return session_.arm_timer(body_deadline_);
        }
        body_timed_out_ = true;
        error_code ignored;
        session_.lowest().socket().cancel(ignored);
    }
}

template <class Stream>
void proxy_exchange<Stream>::close() {
    if (origin_) {
        origin_->close();
    }
}

template <class Stream>
void proxy_exchange<Stream>::release() {
    if (origin_) {
        worker_.pool->release(std::move(origin_), false);
    }
    claim_.give_back();
    relay_.give_back();
}

// ---- the request, to the origin -------------------------------------------------------------

template <class Stream>
void proxy_exchange<Stream>::start() {
    auto& s = session_;
    const auto& req = s.parser_->get();
    head_ = req.method() == http::verb::head;
    websocket_ = is_websocket_upgrade(req);
    request_has_body_ = !s.parser_->is_done();
    retried_ = false;
    interim_seen_ = false;
    // Build the origin's request head once; a retry sends it again.
    const auto& cfg = *s.cfg_;
    forward_info fi;
    fi.client_ip = s.info_.client_ip;
    fi.tls = s.info_.tls;
    // HTTP/1.0 without Host: the origin still needs one (HTTP/1.1 is sent).
    fi.origin_host =
        cfg.origin.host_header == config::host_header_mode::client && s.canonical_.host.valid
            ? s.canonical_.host.authority
            : std::string_view{worker_.pool->host_header()};
    fi.base_path = cfg.origin.base_path;
    fi.path = s.canonical_.target.form == util::target_form::asterisk ? std::string_view{"*"}
                                                                      : s.canonical_.target.path;
    fi.query = s.canonical_.target.query;
    fi.forwarded_host = s.canonical_.host.authority;
    fi.peer_ip = s.identity_.peer_ip();
    fi.pass_client_fields = cfg.forwarded_headers == config::forwarded_mode::append;
    fi.keep_forwarded = s.identity_.peer_trusted() || fi.pass_client_fields;
    fi.drop_fields = s.filter_.drop_fields.get();
    write_origin_request(req, to_origin_.head(s.parser_->chunked()), fi);
    if (!request_has_body_) {
        return do_forward(false);
    }
    // Read the body before touching the origin, all of it up to limits.request_buffer (as nginx
    // buffers requests): a trickled small body then holds no origin connection, a malformed
    // one is refused without the origin seeing anything, and the head and the body (or its
    // first piece) go out together.
    // An HTTP/1.0 client's expectation is ignored (RFC 9110 §10.1.1): it sends its body anyway.
    if (req.version() >= 11 && beast::iequals(req[http::field::expect], "100-continue")) {
        // The client waits for this before sending the body; the origin never sees Expect.
        static constexpr std::string_view continue_100 = "HTTP/1.1 100 Continue\r\n\r\n";
        s.lowest().expires_after(cfg.limits.body_timeout);
        return asio::async_write(
            s.stream_, asio::buffer(continue_100.data(), continue_100.size()),
            [this, self = owner()](error_code ec, std::size_t n) { on_write_continue(ec, n); });
    }
    do_read_body();
}

template <class Stream>
void proxy_exchange<Stream>::do_forward(bool fresh) {
    auto& s = session_;
    // Idempotent and bodiless: a stale pooled connection is retried, so reuse needs no peek.
    const bool retryable = !request_has_body_ && is_idempotent(s.parser_->get().method());
    if (pool_moved()) {
        return origin_moved();
    }
    if (websocket_ && !claim_.take_tunnel(s.cfg_->origin)) {
        return s.send_error(503, "too many WebSocket tunnels",
                            request_has_body_ && !s.parser_->is_done(), "5",
                            origin_error_headers());
    }
    if (!claim_.take_slot(s.cfg_->origin, s.info_.client_ip_bytes)) {
        // Not a wait in the pool's queue: that queue would fill with this one client's requests.
        claim_.give_back();  // the tunnel's place, if one was taken
        return s.send_error(503, "too many origin connections for this client",
                            request_has_body_ && !s.parser_->is_done(), "1",
                            origin_error_headers());
    }
    if (!fresh) {
        // The common case, a warm idle connection, goes on inline: no handler, no post.
        if (auto c = worker_.pool->take_idle(retryable)) {
            return on_origin({}, std::move(c));
        }
    }
    worker_.pool->acquire(
        [this, self = owner()](error_code ec, std::shared_ptr<origin_connection> c) {
            on_origin(ec, std::move(c));
        },
        fresh, retryable);
}

// A reload moved this worker's pool to another origin after the request was decided under the
// previous file: it is not sent to an origin whose rooms never saw it. Rare (only requests in
// flight across such a reload); the client retries at once.
template <class Stream>
bool proxy_exchange<Stream>::pool_moved() const {
    // The usual case costs one pointer compare: the pool follows the worker's runtime, and the
    // request was decided under that same one. Only across a reload are the origins compared.
    return session_.runtime_ != worker_.runtime && !worker_.pool->serves(session_.cfg_->origin);
}

template <class Stream>
void proxy_exchange<Stream>::origin_moved() {
    auto& s = session_;
    s.send_error(503, "the origin changed with a reload", request_has_body_ && !s.parser_->is_done(),
                 "1", origin_error_headers());
}

template <class Stream>
void proxy_exchange<Stream>::on_origin(error_code ec, std::shared_ptr<origin_connection> c) {
    auto& s = session_;
    if (s.closed_) {
        if (c) {
            worker_.pool->release(std::move(c), false);
        }
        return claim_.give_back();
    }
    if (ec) {
        claim_.give_back();
    }
    if (ec == origin_pool::busy()) {
        // Every origin connection stayed in use (not an origin error): try again shortly.
        const auto wait = std::chrono::ceil<std::chrono::seconds>(s.cfg_->origin.pool_wait_timeout);
        return s.send_error(503, "origin busy", request_has_body_ && !s.parser_->is_done(),
                            std::to_string(std::max<std::int64_t>(wait.count(), 1)),
                            origin_error_headers());
    }
    auto* m = worker_.ctx->metrics();
    if (ec) {
        if (m != nullptr) {
            m->origin_errors(origin_error_kind(ec, true)).inc(worker_.index);
        }
        return s.send_error(502, "origin unreachable", request_has_body_, {},
                            origin_error_headers());
    }
    if (pool_moved()) {  // a reload moved the pool while this waited
        worker_.pool->release(std::move(c), false);
        claim_.give_back();
        return origin_moved();
    }
    if (m != nullptr) {
        (c->requests_served > 0 ? m->origin_reused() : m->origin_opened()).inc(worker_.index);
    }
    origin_ = std::move(c);
    // The head (again, on a retry) with the body's first piece, or the whole bodiless request.
    to_origin_.resend_head();
    if (request_has_body_) {
        to_origin_.queue(relay_.get(), pending_, s.parser_->is_done());
        stream_start_ = std::chrono::steady_clock::now();  // body_min_rate counts from here
        streamed_ = 0;
    } else {
        to_origin_.queue(nullptr, 0, true);
    }
    if (!request_has_body_ && !origin_->is_tls()) {
        error_code wec;
        if (write_now(origin_->lowest().socket(), to_origin_, wec)) {
            if (wec) {
                return origin_failed(wec, true);
            }
            // The answer cannot be there yet: socket_reader queues the read without a system
            // call when the connection's last read found it empty.
            return do_read_response_header();
        }
    }
    write_origin();
}

// Sends what to_origin_ holds: inline while a plain socket takes it, else asynchronously.
template <class Stream>
void proxy_exchange<Stream>::write_origin() {
    if (!origin_->is_tls()) {
        error_code ec;
        if (write_now(origin_->lowest().socket(), to_origin_, ec)) {
            return on_origin_write_body(ec, 0);
        }
    }
    origin_->lowest().expires_after(request_has_body_ ? session_.cfg_->limits.body_timeout
                                                      : session_.cfg_->origin.timeout);
    origin_->visit([&](auto& os) {
        asio::async_write(os, to_origin_.buffers(),
                          [this, self = owner()](error_code ec, std::size_t n) {
                              to_origin_.sent();
                              on_origin_write_body(ec, n);
                          });
    });
}

template <class Stream>
void proxy_exchange<Stream>::on_write_continue(error_code ec, std::size_t) {
    if (ec) {
        fail(ec, "write 100");
        return session_.do_close();
    }
    do_read_body();
}

// Reads the next piece of the request body: before the origin connection is taken, as much as
// limits.request_buffer holds, all of it within one body_timeout; while an origin connection is
// held, a piece of the same size with no pause longer than body_timeout and, over the whole
// stream, no slower than limits.body_min_rate. The whole body within limits.body_deadline of
// its head.
template <class Stream>
void proxy_exchange<Stream>::do_read_body() {
    auto& s = session_;
    const auto& limits = s.cfg_->limits;
    body_room_ = std::max(limits.request_buffer, piece_size);
    if (const auto left = s.parser_->content_length_remaining(); left && *left < body_room_) {
        // A known small rest needs no bigger buffer than that (or than a relay piece).
        body_room_ = std::max(static_cast<std::size_t>(*left), piece_size);
    }
    body_room_ = relay_.room_for(body_room_, limits.request_buffer_budget);
    auto& body = s.parser_->body();
    body.data = relay_.get(body_room_);
    body.size = body_room_;
    const auto now = std::chrono::steady_clock::now();
    body_deadline_ = now + limits.body_timeout;
    if (origin_ && limits.body_min_rate > 0) {
        body_deadline_ = std::min(body_deadline_, stream_start_ + rate_time(streamed_ + body_room_,
                                                                            limits.body_min_rate));
    }
    if (limits.body_deadline.count() > 0) {
        body_deadline_ = std::min(body_deadline_, s.started_ + limits.body_deadline);
    }
    body_timed_out_ = false;
    fill_request_piece();
}

// Parses the buffered bytes into the piece, and reads more while the piece is neither full nor
// the end of the body. Only a chunk-size line or trailers wait in the client's buffer between
// reads, and those are bounded (chunk_wait_problem): it never grows past them plus one read.
template <class Stream>
void proxy_exchange<Stream>::fill_request_piece() {
    auto& s = session_;
    error_code ec;
    if (parse_piece(*s.parser_, s.buffer_, s.cfg_->limits.max_header_bytes, ec)) {
        return on_read_body(ec, 0);
    }
    if (body_timed_out_) {
        return on_read_body(beast::error::timeout, 0);  // the timer is spent
    }
    const auto into = s.buffer_.prepare(beast::read_size(s.buffer_, 65536));
    if constexpr (is_tls) {
        s.lowest().expires_at(body_deadline_);
        s.stream_.async_read_some(into, [this, self = owner()](error_code ec, std::size_t n) {
            on_client_body_bytes(ec, n);
        });
    } else {
        // As for the header: the session's timer bounds the wait, socket_reader reads the socket.
        body_waiting_ = true;
        s.arm_timer(body_deadline_);
        s.client_read_.template start<&proxy_exchange::on_client_body_bytes>(
            s.lowest().socket(), into, socket_reader::kind::more, this, owner());
    }
}

template <class Stream>
void proxy_exchange<Stream>::on_client_body_bytes(error_code ec, std::size_t n) {
    body_waiting_ = false;
    if (body_timed_out_) {
        return on_read_body(beast::error::timeout, 0);
    }
    if (ec == asio::error::eof) {
        ec = http::error::partial_message;  // the body has a length or chunks: cut short
    }
    if (ec) {
        return on_read_body(ec, 0);
    }
    session_.buffer_.commit(n);
    fill_request_piece();
}

template <class Stream>
void proxy_exchange<Stream>::on_read_body(error_code ec, std::size_t) {
    auto& s = session_;
    if (ec == beast::error::timeout || ec == http::error::body_limit || is_parse_error(ec)) {
        // The origin saw at most part of this request: its connection is not reused.
        if (origin_) {
            release_origin(false);
        }
        // The room may have admitted (and counted) this visitor already: the answer carries
        // the cookie, as an origin error's does, so the place is not held by nobody.
        if (ec == beast::error::timeout) {
            return s.send_error(408, "request body too slow", true, {}, origin_error_headers());
        }
        if (ec == http::error::body_limit) {
            return s.send_error(413, "request body too large", true, {}, origin_error_headers());
        }
        if (ec == http::error::header_limit) {
            return s.send_error(400, "request trailers too large", true, {},
                                origin_error_headers());
        }
        if (ec == http::error::bad_chunk_extension) {
            return s.send_error(400, "chunk line too long or malformed", true, {},
                                origin_error_headers());
        }
        return s.send_error(400, "malformed request body", true, {}, origin_error_headers());
    }
    if (ec) {
        fail(ec, "read body");
        return s.do_close();
    }
    pending_ = body_room_ - s.parser_->body().size;
    if (!origin_) {
        return do_forward(false);  // all of a small body, or a large one's first piece
    }
    streamed_ += pending_;
    to_origin_.queue(pending_ > 0 ? relay_.get() : nullptr, pending_, s.parser_->is_done());
    write_origin();
}

template <class Stream>
void proxy_exchange<Stream>::on_origin_write_body(error_code ec, std::size_t) {
    if (ec) {
        // A bodiless request may be retried (a stale pooled connection); a body is gone.
        return origin_failed(ec, !request_has_body_);
    }
    if (!request_has_body_ || session_.parser_->is_done()) {
        return do_read_response_header();
    }
    do_read_body();
}

template <class Stream>
void proxy_exchange<Stream>::origin_failed(error_code ec, bool before_response) {
    auto& s = session_;
    fail(ec, "origin");
    const bool from_pool = origin_ && origin_->requests_served > 0;
    release_origin(false);
    // A pooled connection the origin had already closed fails before any response byte; an
    // idempotent request without a body is safe to send again, once, on a new connection.
    if (before_response && from_pool && !retried_ && !request_has_body_ &&
        is_idempotent(s.parser_->get().method()) && ec != beast::error::timeout) {
        retried_ = true;
        return do_forward(true);
    }
    if (auto* m = worker_.ctx->metrics()) {
        m->origin_errors(origin_error_kind(ec, false)).inc(worker_.index);
    }
    if (ec == beast::error::timeout && before_response) {
        return s.send_error(504, "origin timed out", request_has_body_ && !s.parser_->is_done(), {},
                            origin_error_headers());
    }
    s.send_error(502, "origin connection failed", request_has_body_ && !s.parser_->is_done(), {},
                 origin_error_headers());
}

template <class Stream>
header_list proxy_exchange<Stream>::origin_error_headers() {
    header_list extra;
    worker_.ctx->filter().on_origin_error(extra, session_.filter_.context);
    return extra;
}

template <class Stream>
void proxy_exchange<Stream>::release_origin(bool reusable) {
    worker_.pool->release(std::move(origin_), reusable);
    claim_.give_back();
}

// With the members defined here; the response's are instantiated in proxy_exchange_response.cpp.
template class proxy_exchange<tcp_stream>;
template class proxy_exchange<ssl::stream<tcp_stream>>;

}  // namespace waitroom::gateway

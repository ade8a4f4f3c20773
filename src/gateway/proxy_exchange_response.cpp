// The origin's response to a forwarded request, relayed to the client: the head (an interim 1xx
// read past, a 101 to a WebSocket request turned into a tunnel), then the body piece by piece.
// The members of proxy_exchange (proxy_exchange.hpp) that do it; proxy_exchange.cpp has the
// request's.
#include <boost/asio/post.hpp>
#include <boost/beast/core/read_size.hpp>
#include <boost/beast/http/read.hpp>

#include "forward_headers.hpp"
#include "origin_connection.hpp"
#include "origin_pool.hpp"
#include "proxy_exchange.hpp"
#include "read_steps.hpp"

namespace waitroom::gateway {

namespace {

constexpr std::size_t piece_size = relay_buffer::piece_size;
constexpr std::size_t origin_header_limit = 64 * 1024;

// How much to read from the origin at once: at least a head and a whole body piece, so that a
// response of up to a piece arrives in one read (a short one: see socket_reader).
std::size_t origin_read_size(beast::flat_buffer& buffer) {
    return std::max(beast::read_size(buffer, 65536), piece_size + 4096);
}

}  // namespace

// ---- the response, to the client -----------------------------------------------------------

void proxy_exchange::do_read_response_header() {
    res_parser_.emplace(response_);
    res_parser_->body_limit(boost::none);
    res_parser_->header_limit(origin_header_limit);
    if (head_) {
        res_parser_->skip(true);
    }
    if (!origin_->is_tls()) {
        // The session's deadline timer bounds the wait (no timer operation per request, see
        // arm_timer) and the socket is read directly, as for the client's header.
        origin_timed_out_ = false;
        origin_waiting_ = true;
        origin_deadline_ = std::chrono::steady_clock::now() + cfg().origin.timeout;
        client_.arm_timer(origin_deadline_);
        return read_origin_head();
    }
    origin_->lowest().expires_after(cfg().origin.timeout);
    origin_->visit([&](auto& os) {
        http::async_read_header(os, origin_->buffer(), *res_parser_,
                                [this, self = owner()](error_code ec, std::size_t n) {
                                    on_read_response_header(ec, n);
                                });
    });
}

void proxy_exchange::read_origin_head() {
    auto& buf = origin_->buffer();
    error_code ec;
    if (parse_head(*res_parser_, buf, ec)) {
        return on_read_response_header(ec, 0);
    }
    if (origin_timed_out_) {
        // The timer fired while bytes were already on their way (its cancel found no read
        // queued): it is spent, so the wait ends here.
        return on_read_response_header(asio::error::operation_aborted, 0);
    }
    // The first read of the answer waits for epoll if the connection's last read found it empty.
    // Not after an interim response (the origin may have closed right behind it), and a 101
    // leaves the socket to be tried: the tunnel reads it with Asio's own reads from then on.
    const auto k = res_parser_->got_some() || interim_seen_ ? socket_reader::kind::more
                   : websocket_                             ? socket_reader::kind::any
                                                            : socket_reader::kind::answer;
    origin_read_.start<&proxy_exchange::on_origin_bytes>(
        origin_->lowest().socket(), buf.prepare(origin_read_size(buf)), k, this, owner());
}

void proxy_exchange::on_origin_bytes(error_code ec, std::size_t n) {
    if (ec) {
        return on_read_response_header(head_read_error(*res_parser_, ec), 0);
    }
    origin_->buffer().commit(n);
    read_origin_head();
}

void proxy_exchange::on_read_response_header(error_code ec, std::size_t) {
    origin_waiting_ = false;
    if (ec == asio::error::operation_aborted && origin_timed_out_) {
        ec = beast::error::timeout;  // what the stream's own timeout reports (→ 504)
    }
    if (ec) {
        return origin_failed(ec, true);
    }
    const unsigned status = res_parser_->get().result_int();
    if (status >= 200 || status == 101) {
        server_answered(status);
    }
    if (status == 101) {
        if (!websocket_) {
            spdlog::warn("gateway: origin answered 101 to a request that asked no upgrade");
            release_origin(false);
            return client_.send_error(502, "origin switched protocols unasked", true, {},
                                      origin_error_headers());
        }
        return start_tunnel();
    }
    if (status >= 100 && status < 200) {
        // Interim (103 Early Hints…): not relayed. Posted: an origin sending many at once must
        // not deepen the stack by one exchange each.
        interim_seen_ = true;
        return client_.post([this, self = owner()] { do_read_response_header(); });
    }
    send_response_head();
}

// The filter sees (and may change) the origin's header without its hop-by-hop fields; what is
// left of it goes out, with the body's bytes that are already here, or alone.
void proxy_exchange::send_response_head() {
    auto& res = res_parser_->get();
    strip_hop_by_hop(res);
    worker_.ctx->filter().on_response(res, req().filter->context);
    const unsigned status = res.result_int();
    const bool bodyless = head_ || status == 204 || status == 304;
    std::optional<std::uint64_t> length;
    if (const auto declared = res_parser_->content_length(); declared && !bodyless) {
        length = *declared;
    }
    client_.send_head(res, length, bodyless);
    if (bodyless) {
        return send_piece(nullptr, 0, true);
    }
    if (res_parser_->is_done() || origin_->buffer().size() > 0) {
        // Body bytes are already here: the head goes out with them in one write.
        return do_read_response_body();
    }
    send_piece(nullptr, 0, false);  // the head alone, while the body is on its way
}

void proxy_exchange::do_read_response_body() {
    if (res_parser_->is_done()) {
        // Finish the framing (the last chunk) with an empty final piece.
        return send_piece(nullptr, 0, true);
    }
    auto& body = res_parser_->body();
    body.data = relay_.get();
    body.size = piece_size;
    fill_response_piece();
}

// Parses the origin's buffered bytes into the piece, and reads more while the piece is neither
// full nor the end of the body.
void proxy_exchange::fill_response_piece() {
    auto& buf = origin_->buffer();
    if (buf.size() > 0) {
        // Bytes already read from the origin are parsed here and now; only a body that is not
        // all here yet takes an asynchronous read (which goes on from where this stops).
        // A piece that is neither full nor the end is not sent yet: the read below goes on
        // filling it, so a 16 KiB body still leaves in one write with its head.
        res_parser_->eager(true);
        error_code ec;
        if (parse_piece(*res_parser_, buf, origin_header_limit, ec)) {
            return on_read_response_body(ec, 0);
        }
    }
    if (!origin_->is_tls()) {
        // As for the head: the session's timer bounds the wait, socket_reader reads the socket.
        origin_timed_out_ = false;
        origin_waiting_ = true;
        origin_deadline_ = std::chrono::steady_clock::now() + cfg().limits.body_timeout;
        client_.arm_timer(origin_deadline_);
        return origin_read_.start<&proxy_exchange::on_origin_body_bytes>(
            origin_->lowest().socket(), buf.prepare(origin_read_size(buf)),
            socket_reader::kind::more, this, owner());
    }
    origin_->lowest().expires_after(cfg().limits.body_timeout);
    origin_->visit([&](auto& os) {
        http::async_read(
            os, buf, *res_parser_,
            [this, self = owner()](error_code ec, std::size_t n) { on_read_response_body(ec, n); });
    });
}

void proxy_exchange::on_origin_body_bytes(error_code ec, std::size_t n) {
    origin_waiting_ = false;
    if (origin_timed_out_) {
        return on_read_response_body(beast::error::timeout, 0);  // the timer is spent
    }
    if (ec == asio::error::eof) {
        // Ends a body delimited by the close; one with a length or chunks is cut short.
        ec = {};
        res_parser_->put_eof(ec);
        return on_read_response_body(ec, 0);
    }
    if (ec) {
        return on_read_response_body(ec, 0);
    }
    origin_->buffer().commit(n);
    fill_response_piece();
}

void proxy_exchange::on_read_response_body(error_code ec, std::size_t) {
    if (ec == http::error::need_buffer) {
        ec = {};
    }
    if (ec) {
        // The response has started: the only honest signal left is to cut the connection.
        fail(ec, "read response body");
        release_origin(false);
        return client_.abort();
    }
    const std::size_t n = piece_size - res_parser_->body().size;
    const bool more = !res_parser_->is_done();
    if (n == 0 && more) {
        return do_read_response_body();
    }
    send_piece(n > 0 ? relay_.get() : nullptr, n, !more);
}

void proxy_exchange::on_write_response_body(error_code ec) {
    if (ec) {
        fail(ec, "write response");
        release_origin(false);
        return client_.abort();
    }
    if (!response_ended_) {
        return do_read_response_body();
    }
    finish_exchange();
}

void proxy_exchange::send_piece(const char* data, std::size_t size, bool last) {
    response_ended_ = last;
    client_.send_body(data, size, last);
}

void proxy_exchange::finish_exchange() {
    const bool reusable = res_parser_->is_done() && res_parser_->keep_alive();
    release_origin(reusable);
    client_.finished();
}

// The origin's 101 to a WebSocket request: its connection, and the places held for it, go to the
// tunnel the client opens.
void proxy_exchange::start_tunnel() {
    auto& res = res_parser_->get();
    strip_hop_by_hop(res);
    worker_.ctx->filter().on_response(res, req().filter->context);
    leave_server();
    client_.open_tunnel(res, std::move(origin_));
}

}  // namespace waitroom::gateway

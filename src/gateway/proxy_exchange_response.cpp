// The origin's response to a forwarded request, relayed to the client: the head (an interim 1xx
// read past, a 101 to a WebSocket request turned into a tunnel), then the body piece by piece.
// The members of proxy_exchange (proxy_exchange.hpp) that do it; proxy_exchange.cpp has the
// request's.
#include <boost/asio/post.hpp>
#include <boost/beast/core/read_size.hpp>
#include <boost/beast/http/read.hpp>

#include "client_session.hpp"
#include "forward_headers.hpp"
#include "origin_connection.hpp"
#include "origin_pool.hpp"
#include "proxy_exchange.hpp"
#include "read_steps.hpp"
#include "tunnel.hpp"

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

template <class Stream>
void proxy_exchange<Stream>::do_read_response_header() {
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
        origin_deadline_ = std::chrono::steady_clock::now() + session_.cfg_->origin.timeout;
        session_.arm_timer(origin_deadline_);
        return read_origin_head();
    }
    origin_->lowest().expires_after(session_.cfg_->origin.timeout);
    origin_->visit([&](auto& os) {
        http::async_read_header(os, origin_->buffer(), *res_parser_,
                                [this, self = owner()](error_code ec, std::size_t n) {
                                    on_read_response_header(ec, n);
                                });
    });
}

template <class Stream>
void proxy_exchange<Stream>::read_origin_head() {
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

template <class Stream>
void proxy_exchange<Stream>::on_origin_bytes(error_code ec, std::size_t n) {
    if (ec) {
        return on_read_response_header(head_read_error(*res_parser_, ec), 0);
    }
    origin_->buffer().commit(n);
    read_origin_head();
}

template <class Stream>
void proxy_exchange<Stream>::on_read_response_header(error_code ec, std::size_t) {
    auto& s = session_;
    origin_waiting_ = false;
    if (ec == asio::error::operation_aborted && origin_timed_out_) {
        ec = beast::error::timeout;  // what the stream's own timeout reports (→ 504)
    }
    if (ec) {
        return origin_failed(ec, true);
    }
    auto& res = res_parser_->get();
    const unsigned status = res.result_int();
    if (status == 101) {
        if (!websocket_) {
            spdlog::warn("gateway: origin answered 101 to a request that asked no upgrade");
            release_origin(false);
            return s.send_error(502, "origin switched protocols unasked", true, {},
                                origin_error_headers());
        }
        return start_tunnel();
    }
    if (status >= 100 && status < 200) {
        // Interim (103 Early Hints…): not relayed. Posted: an origin sending many at once must
        // not deepen the stack by one exchange each.
        interim_seen_ = true;
        return asio::post(s.lowest().get_executor(),
                          [this, self = owner()] { do_read_response_header(); });
    }
    // The filter sees (and may change) the origin's header without its hop-by-hop fields;
    // what is left of it goes out.
    strip_hop_by_hop(res);
    worker_.ctx->filter().on_response(res, s.filter_.context);
    client_framing how;
    how.version = s.parser_->get().version();
    how.extra = &s.filter_.headers;
    const bool bodyless = head_ || status == 204 || status == 304;
    bool keep = s.client_keep_alive_ && !s.draining_;
    if (bodyless) {
        how.kind = client_framing::body::as_origin;
    } else if (auto len = res_parser_->content_length()) {
        how.kind = client_framing::body::length;
        how.length = *len;
    } else if (how.version >= 11) {
        how.kind = client_framing::body::chunked;
    } else {
        how.kind = client_framing::body::until_close;
        keep = false;  // HTTP/1.0 client, unknown length: the close ends the body
    }
    s.client_keep_alive_ = keep;
    how.keep_alive = keep;
    s.status_ = status;
    s.relay_wait_ = {};
    write_client_response(res, s.to_client_.head(how.kind == client_framing::body::chunked), how);

    if (bodyless) {
        s.to_client_.queue(nullptr, 0, true);
        return write_response_piece();
    }
    if (res_parser_->is_done() || origin_->buffer().size() > 0) {
        // Body bytes are already here: the head goes out with them in one write.
        return do_read_response_body();
    }
    s.to_client_.queue(nullptr, 0, false);  // the head alone, while the body is on its way
    write_response_piece();
}

template <class Stream>
void proxy_exchange<Stream>::do_read_response_body() {
    if (res_parser_->is_done()) {
        // Finish the framing (the last chunk) with an empty final piece.
        session_.to_client_.queue(nullptr, 0, true);
        return write_response_piece();
    }
    auto& body = res_parser_->body();
    body.data = relay_.get();
    body.size = piece_size;
    fill_response_piece();
}

// Parses the origin's buffered bytes into the piece, and reads more while the piece is neither
// full nor the end of the body.
template <class Stream>
void proxy_exchange<Stream>::fill_response_piece() {
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
        origin_deadline_ = std::chrono::steady_clock::now() + session_.cfg_->limits.body_timeout;
        session_.arm_timer(origin_deadline_);
        return origin_read_.start<&proxy_exchange::on_origin_body_bytes>(
            origin_->lowest().socket(), buf.prepare(origin_read_size(buf)),
            socket_reader::kind::more, this, owner());
    }
    origin_->lowest().expires_after(session_.cfg_->limits.body_timeout);
    origin_->visit([&](auto& os) {
        http::async_read(
            os, buf, *res_parser_,
            [this, self = owner()](error_code ec, std::size_t n) { on_read_response_body(ec, n); });
    });
}

template <class Stream>
void proxy_exchange<Stream>::on_origin_body_bytes(error_code ec, std::size_t n) {
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

template <class Stream>
void proxy_exchange<Stream>::on_read_response_body(error_code ec, std::size_t) {
    if (ec == http::error::need_buffer) {
        ec = {};
    }
    if (ec) {
        // The response has started: the only honest signal left is to cut the connection.
        fail(ec, "read response body");
        return session_.close();
    }
    const std::size_t n = piece_size - res_parser_->body().size;
    const bool more = !res_parser_->is_done();
    if (n == 0 && more) {
        return do_read_response_body();
    }
    session_.bytes_sent_ += n;
    session_.to_client_.queue(n > 0 ? relay_.get() : nullptr, n, !more);
    write_response_piece();
}

template <class Stream>
void proxy_exchange<Stream>::write_response_piece() {
    session_.write_client(true);
}

template <class Stream>
void proxy_exchange<Stream>::on_write_response_body(error_code ec, std::size_t) {
    if (ec) {
        fail(ec, "write response");
        return session_.close();
    }
    if (!session_.to_client_.done()) {
        return do_read_response_body();
    }
    finish_exchange();
}

template <class Stream>
void proxy_exchange<Stream>::finish_exchange() {
    session_.log_request();
    const bool reusable = res_parser_->is_done() && res_parser_->keep_alive();
    release_origin(reusable);
    if (!session_.client_keep_alive_) {
        return session_.do_close();
    }
    session_.next_request();
}

template <class Stream>
void proxy_exchange<Stream>::start_tunnel() {
    auto& s = session_;
    auto& res = res_parser_->get();
    strip_hop_by_hop(res);
    worker_.ctx->filter().on_response(res, s.filter_.context);
    client_framing how;
    how.websocket_101 = true;
    how.extra = &s.filter_.headers;
    s.status_ = 101;
    write_client_response(res, s.to_client_.head(false), how);
    s.to_client_.queue(nullptr, 0, true);
    s.lowest().expires_after(s.cfg_->limits.body_timeout);
    asio::async_write(s.stream_, s.to_client_.buffers(),
                      [this, self = owner()](error_code ec, std::size_t) {
                          self->to_client_.sent();
                          if (ec) {
                              fail(ec, "write 101");
                              return self->close();
                          }
                          auto conn = std::move(origin_);
                          conn->visit([&](auto& os) {
                              using origin_stream = std::decay_t<decltype(os)>;
                              std::make_shared<tunnel<Stream, origin_stream>>(
                                  self, self->stream_, self->buffer_, conn, os, worker_.pool,
                                  self->cfg_->limits.tunnel_idle_timeout)
                                  ->run();
                          });
                      });
}

// The response's entry points from outside this file, for both streams: the members they lead to
// are instantiated with them (proxy_exchange.cpp instantiates the class with the request's).
template void proxy_exchange<tcp_stream>::do_read_response_header();
template void proxy_exchange<tcp_stream>::on_write_response_body(error_code, std::size_t);
template void proxy_exchange<ssl::stream<tcp_stream>>::do_read_response_header();
template void proxy_exchange<ssl::stream<tcp_stream>>::on_write_response_body(error_code,
                                                                              std::size_t);

}  // namespace waitroom::gateway

#include "client_session.hpp"

#include <cstring>

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/core/read_size.hpp>
#include <boost/beast/core/string.hpp>

#include "forward_headers.hpp"
#include "h2_connection.hpp"
#include "origin_connection.hpp"
#include "origin_pool.hpp"
#include "proxy_protocol.hpp"
#include "read_steps.hpp"
#include "request_intake.hpp"
#include "tunnel.hpp"

namespace waitroom::gateway {

namespace {

constexpr auto linger_time = std::chrono::seconds(2);

client_stream make_stream(tcp_socket&& socket, const certificate_set* tls) {
    if (tls == nullptr) {
        return client_stream(std::move(socket));
    }
    return client_stream(std::move(socket), tls->default_context());
}

}  // namespace

client_session::client_session(std::shared_ptr<worker_context> state, tcp_socket&& socket,
                               std::shared_ptr<const certificate_set> tls, bool proxy_protocol,
                               bool h2c)
    : state_(std::move(state)),
      runtime_(state_->current()),
      cfg_(runtime_->cfg.get()),
      tls_(std::move(tls)),
      stream_(make_stream(std::move(socket), tls_.get())),
      phase_(session_phase::accepted),
      deadline_timer_(state_->ioc),
      proxy_protocol_(proxy_protocol),
      h2c_(h2c && !tls_),
      exchange_(*this, *state_) {
    error_code ec;
    auto remote = lowest().socket().remote_endpoint(ec);
    if (!ec) {
        identity_.from_socket(remote.address(), info_);
    }
    if (!is_tls()) {
        lowest().socket().non_blocking(true, ec);  // for write_now (inline writes)
    }
    info_.tls = is_tls();
    info_.worker = state_->index;
    info_.runtime = runtime_;
    state_->session_opened(this);
    if (auto* m = state_->ctx->metrics()) {
        m->client_connections().add(state_->index, 1);
    }
}

client_session::~client_session() {
    exchange_.release();  // also a tunnel's: the session lives as long as its tunnel
    state_->session_closed(this);
    if (auto* m = state_->ctx->metrics()) {
        m->client_connections().sub(state_->index, 1);
    }
}

void client_session::run() {
    if (proxy_protocol_) {
        // The PROXY header and the TLS handshake after it share one header_timeout.
        enter(session_phase::proxy_header);
        lowest().expires_after(cfg_->limits.header_timeout);
        return read_proxy_header();
    }
    start();
}

void client_session::start() {
    if (!is_tls()) {
        return do_read_header(true);
    }
    if (!proxy_protocol_) {
        lowest().expires_after(cfg_->limits.header_timeout);
    }
    enter(session_phase::handshake);
    // Bytes read past a PROXY header are the start of the ClientHello.
    stream_.async_handshake(buffer_.data(), [self = self()](error_code ec) {
        self->buffer_.consume(self->buffer_.size());
        self->on_handshake(ec);
    });
}

// Every change of phase passes here. A step that may not follow the phase the session is in is
// the session's own error, never the client's: logged, and stopped at in a debug build.
void client_session::enter(session_phase next) {
    if (!may_follow(phase_, next)) [[unlikely]] {
        spdlog::error("gateway: client session phase {} cannot follow {}", static_cast<int>(next),
                      static_cast<int>(phase_));
        BOOST_ASSERT_MSG(false, "client_session: a phase out of order");
    }
    phase_ = next;
}

void client_session::read_proxy_header() {
    auto r =
        proxy_protocol::parse({static_cast<const char*>(buffer_.data().data()), buffer_.size()});
    if (r.what == proxy_protocol::status::need_more) {
        lowest().async_read_some(
            buffer_.prepare(proxy_protocol::max_v2_size),
            beast::bind_front_handler(&client_session::on_proxy_bytes, self()));
        return;
    }
    if (r.what == proxy_protocol::status::invalid) {
        spdlog::debug("gateway: malformed PROXY header from {}", identity_.peer_ip());
        return close();
    }
    buffer_.consume(r.size);
    if (r.has_source) {
        identity_.from_proxy_header(r.source, info_);
    }
    start();
}

void client_session::on_proxy_bytes(error_code ec, std::size_t n) {
    if (ec) {
        fail(ec, "proxy header");
        return close();
    }
    buffer_.commit(n);
    read_proxy_header();
}

void client_session::on_handshake(error_code ec) {
    if (ec) {
        return fail(ec, "tls handshake");
    }
    if (stream_.alpn() == "h2") {
        return hand_to_h2();
    }
    do_read_header(true);
}

// ALPN chose h2, or an h2c client sent the preface: the connection goes on as an
// h2_connection (with the bytes read so far), and this session ends here.
void client_session::hand_to_h2() {
    enter(session_phase::handed_over);
    deadline_timer_.cancel();
    lowest().expires_never();
    std::make_shared<h2_connection>(state_, std::move(stream_), identity_, info_,
                                    std::move(buffer_))
        ->run();
}

// How the first bytes of an h2c connection compare with HTTP/2's preface (RFC 9113 §3.4): all of
// it, a part of it so far, or not it (HTTP/1.1, which Beast's parser refuses as "HTTP/2.0" would
// be: it is never parsed as a request).
client_session::preface client_session::h2c_preface() const {
    static constexpr std::string_view whole = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    if (!h2c_ || phase_ != session_phase::first_head) {
        return preface::none;
    }
    const std::string_view got(static_cast<const char*>(buffer_.cdata().data()), buffer_.size());
    const auto n = std::min(got.size(), whole.size());
    if (got.substr(0, n) != whole.substr(0, n)) {
        return preface::none;
    }
    return got.size() >= whole.size() ? preface::whole : preface::partial;
}

void client_session::drain() {
    draining_ = true;
    if (waits_for_request(phase_)) {
        // Waiting for a request: cancel the read; its completion closes.
        deadline_timer_.cancel();
        cancel_read();
    }
}

void client_session::close() {
    if (phase_ == session_phase::handed_over) {
        return;  // the stream is the h2_connection's
    }
    enter(session_phase::closed);
    deadline_timer_.cancel();
    stream_.close();
    exchange_.close();
}

// Ends the read of the client under way with operation_aborted (for a timeout, a retry or a
// drain: the member that says which is set first).
void client_session::cancel_read() {
    error_code ignored;
    lowest().socket().cancel(ignored);
}

// ---- the request's head -------------------------------------------------------------------

void client_session::do_read_header(bool first) {
    exchange_.reset();
    if (draining_ || gone()) {
        return do_close();
    }
    // The wait for the next head follows the latest reload (its limits and timeouts)...
    follow(state_->current());
    parser_.emplace(request_);
    parser_->header_limit(static_cast<std::uint32_t>(cfg_->limits.max_header_bytes));
    if (cfg_->limits.max_body_bytes > 0) {
        parser_->body_limit(cfg_->limits.max_body_bytes);
    } else {
        parser_->body_limit(boost::none);
    }
    // A first request or a started one must arrive within header_timeout (else 408); an idle
    // keep-alive connection is simply closed after keepalive_timeout.
    using enum session_phase;
    enter(first ? first_head : buffer_.size() > 0 ? next_head : idle);
    wait_timed_out_ = false;
    client_wait_since_ = std::chrono::steady_clock::now();
    header_deadline_ = client_wait_since_ + (phase_ == idle ? cfg_->limits.keepalive_timeout
                                                            : cfg_->limits.header_timeout);
    // Back-to-back keep-alive requests cost no timer operation at all (see arm_timer).
    arm_timer(header_deadline_);
    // deadline_timer_ bounds this read (client_stream::read_some leaves the stream's own timeout
    // machinery, an operation layer and a timer wait per read, out of it).
    read_client_head();
}

// Parses what is buffered, then reads the socket until the head is complete.
void client_session::read_client_head(bool try_first) {
    const auto h2c = h2c_preface();
    if (h2c == preface::whole) {
        return hand_to_h2();
    }
    error_code ec;
    if (h2c == preface::none && parse_head(*parser_, buffer_, ec)) {
        return on_read_header(ec, 0);
    }
    if (wait_timed_out_) {
        return on_read_header(asio::error::operation_aborted, 0);  // as for the origin's head
    }
    note_head_begun();
    // The next request on a kept-alive connection is waited for without a try when the last
    // read found the socket empty; the worker's sweep tries it once later (see worker_context).
    // A head under way, or a retry of the sweep, is tried first; a connection's first read is
    // tried by the reactor (a new socket was never found empty). TLS reads take no such hint.
    const bool first = phase_ == session_phase::first_head;
    const bool next = !first && !parser_->got_some() && !try_first;
    read_ = next && !is_tls() ? client_read::untried : client_read::tried;
    if (read_ == client_read::untried) {
        worker_context::want_sweep(state_);
    }
    const bool fresh = first && !parser_->got_some();
    stream_.read_some<&client_session::on_client_bytes>(
        buffer_.prepare(beast::read_size(buffer_, 65536)),
        next || fresh ? socket_reader::kind::answer : socket_reader::kind::more, self());
}

// The first byte of a kept-alive connection's next request: from now on the request must
// arrive within header_timeout, not keepalive_timeout.
void client_session::note_head_begun() {
    if (phase_ != session_phase::idle || (buffer_.size() == 0 && !parser_->got_some())) {
        return;
    }
    enter(session_phase::next_head);
    header_deadline_ = std::chrono::steady_clock::now() + cfg_->limits.header_timeout;
    arm_timer(header_deadline_);
}

bool client_session::sweep(std::chrono::steady_clock::time_point cutoff) {
    if (read_ != client_read::untried || !stream_.reading()) {
        return false;
    }
    if (client_wait_since_ > cutoff) {
        return true;  // too recent: the next sweep
    }
    read_ = client_read::retry;
    cancel_read();  // on_client_bytes starts the read again, trying first
    return false;
}

void client_session::on_client_bytes(error_code ec, std::size_t n) {
    const bool retry = std::exchange(read_, client_read::none) == client_read::retry;
    if (ec == asio::error::operation_aborted && retry && !wait_timed_out_ && !draining_ &&
        !gone()) {
        return read_client_head(true);
    }
    if (ec) {
        return on_read_header(head_read_error(*parser_, ec), 0);
    }
    buffer_.commit(n);
    read_client_head();
}

// One timer bounds the waits of every request, never two at once: for the client's header and,
// with the exchange, for the request body and a plain origin's response (head, then body). It is
// re-armed only when a wait's deadline is earlier than the armed one; a later deadline is picked
// up when it fires.
void client_session::arm_timer(std::chrono::steady_clock::time_point deadline) {
    if (timer_armed_ && deadline_timer_.expiry() <= deadline) {
        return;
    }
    timer_armed_ = true;
    deadline_timer_.expires_at(deadline);  // a pending wait ends as a stale generation
    // A weak owner: the timer may stay armed while the session is busy or gone.
    deadline_timer_.async_wait(
        [weak = this->weak_from_this(), generation = ++timer_generation_](error_code ec) {
            if (auto s = weak.lock()) {
                s->on_timer(generation, ec);
            }
        });
}

void client_session::on_timer(std::uint64_t generation, error_code ec) {
    if (generation != timer_generation_) {
        return;  // superseded by a re-arm
    }
    timer_armed_ = false;
    if (ec || gone()) {
        return;  // cancelled: the next wait arms it again
    }
    const auto now = std::chrono::steady_clock::now();
    if (phase_ == session_phase::exchanging && read_ != client_read::none) {
        return on_body_deadline(now);
    }
    if (!reads_head(phase_)) {
        return exchange_.on_deadline(now);
    }
    if (now < header_deadline_) {
        return arm_timer(header_deadline_);  // armed for an older, earlier deadline
    }
    wait_timed_out_ = true;
    cancel_read();
}

void client_session::on_body_deadline(std::chrono::steady_clock::time_point now) {
    if (now < body_deadline_) {
        return arm_timer(body_deadline_);
    }
    wait_timed_out_ = true;
    cancel_read();
}

void client_session::follow(const std::shared_ptr<const node_runtime>& rt) {
    if (rt != runtime_) {
        runtime_ = rt;
        cfg_ = rt->cfg.get();
        info_.runtime = rt;  // the filter decides under the same runtime
    }
}

void client_session::on_read_header(error_code ec, std::size_t) {
    if (ec || gone()) {
        return on_head_failed(ec);
    }
    // ...and so does the request, once its head has arrived: a keep-alive connection that
    // waited across a reload is served wholly under the new runtime, as its worker's origin
    // pool is. (The head and body limits in force stay those its read began with.)
    follow(state_->current());
    enter(session_phase::filtering);
    answer_.started = std::chrono::steady_clock::now();
    answer_.bytes_sent = 0;
    filter_ = {};  // the access log must not show the previous request's room
    const auto& req = parser_->get();
    if (const auto refusal =
            take_in(req, req.version() >= 11, canonical_, target_buffers_, info_.client_ip);
        refusal.status != 0) {
        return send_error(refusal.status, refusal.text, true);
    }
    info_.request = &canonical_;
    keep_alive_ = parser_->keep_alive();
    identity_.resolve(req, *cfg_, runtime_->generation, is_tls(), info_);
    state_->ctx->filter().on_request(
        req, info_, [self = self()](filter_result r) { self->on_filter(std::move(r)); });
}

// The head did not arrive whole: the gateway's answer where the client may read one, else the
// connection's end.
void client_session::on_head_failed(error_code ec) {
    if (ec == asio::error::operation_aborted && wait_timed_out_) {
        if (phase_ != session_phase::idle) {  // a first request, or bytes of a next one
            return send_error(408, "request header timed out", true);
        }
        return do_close();
    }
    if (ec == http::error::header_limit) {
        return send_error(431, "request header too large", true);
    }
    if (ec == http::error::body_limit) {
        return send_error(413, "request body too large", true);
    }
    if (ec == http::error::end_of_stream || ec == asio::error::operation_aborted || gone()) {
        return do_close();
    }
    if (is_parse_error(ec)) {
        // Any other parse error: malformed request line, bad field, bad Content-Length…
        fail(ec, "request header");
        return send_error(400, "malformed request", true);
    }
    fail(ec, "read header");
    do_close();
}

void client_session::on_filter(filter_result r) {
    filter_ = std::move(r);
    if (filter_.what == filter_result::action::respond) {
        // The origin never sees this request; an unread body forces a close.
        return send_response(filter_.status, filter_.headers, std::move(filter_.body),
                             std::move(filter_.shared_body), !parser_->is_done(), filter_.fields);
    }
    const auto& req = parser_->get();
    exchange_request_ = {.head = &req,
                         .canonical = &canonical_,
                         .info = &info_,
                         .identity = &identity_,
                         .cfg = cfg_,
                         .runtime = runtime_.get(),
                         .filter = &filter_,
                         .started = answer_.started,
                         .body = !parser_->is_done(),
                         .chunked = parser_->chunked()};
    // An HTTP/1.0 client's expectation is ignored (RFC 9110 §10.1.1): it sends its body anyway.
    continue_pending_ = exchange_request_.body && req.version() >= 11 &&
                        beast::iequals(req[http::field::expect], "100-continue");
    enter(session_phase::exchanging);
    exchange_.start();
}

// ---- the request body, for the exchange ---------------------------------------------------

std::optional<std::uint64_t> client_session::body_left() const {
    if (const auto left = parser_->content_length_remaining()) {
        return *left;
    }
    return std::nullopt;
}

void client_session::read_body(char* into, std::size_t room,
                               std::chrono::steady_clock::time_point deadline) {
    auto& body = parser_->body();
    body.data = into;
    body.size = room;
    body_room_ = room;
    body_deadline_ = deadline;
    wait_timed_out_ = false;
    if (std::exchange(continue_pending_, false)) {
        return write_continue();
    }
    fill_request_piece();
}

// The client waits for this before sending the body; the origin never sees Expect.
void client_session::write_continue() {
    static constexpr std::string_view continue_100 = "HTTP/1.1 100 Continue\r\n\r\n";
    lowest().expires_after(cfg_->limits.body_timeout);
    asio::async_write(stream_, asio::buffer(continue_100.data(), continue_100.size()),
                      [self = self()](error_code ec, std::size_t) {
                          if (ec) {
                              fail(ec, "write 100");
                              return self->do_close();
                          }
                          self->fill_request_piece();
                      });
}

// Parses the buffered bytes into the piece, and reads more while the piece is neither full nor
// the end of the body. Only a chunk-size line or trailers wait in the client's buffer between
// reads, and those are bounded (chunk_wait_problem): it never grows past them plus one read.
void client_session::fill_request_piece() {
    error_code ec;
    if (parse_piece(*parser_, buffer_, cfg_->limits.max_header_bytes, ec)) {
        return body_read(ec);
    }
    if (wait_timed_out_) {
        return body_read(beast::error::timeout);  // the timer is spent
    }
    // As for the head: the session's timer bounds the wait.
    read_ = client_read::tried;
    arm_timer(body_deadline_);
    stream_.read_some<&client_session::on_client_body_bytes>(
        buffer_.prepare(beast::read_size(buffer_, 65536)), socket_reader::kind::more, self());
}

void client_session::on_client_body_bytes(error_code ec, std::size_t n) {
    read_ = client_read::none;
    if (wait_timed_out_) {
        return body_read(beast::error::timeout);
    }
    if (ec == asio::error::eof) {
        ec = http::error::partial_message;  // the body has a length or chunks: cut short
    }
    if (ec) {
        return body_read(ec);
    }
    buffer_.commit(n);
    fill_request_piece();
}

void client_session::body_read(error_code ec) {
    exchange_.on_read_body(ec, ec ? 0 : body_room_ - parser_->body().size);
}

// The client's next request: read at once, unless it is already buffered (pipelined): then it
// waits its turn behind other connections' work instead of recursing through a whole exchange.
void client_session::next_request() {
    if (buffer_.size() == 0) {
        return do_read_header();
    }
    asio::post(lowest().get_executor(), [self = self()] { self->do_read_header(); });
}

// ---- writing to the client, answers from memory ---------------------------------------------

// Inline while a plain socket takes it (no timer, no operation allocated, no completion posted),
// else asynchronously.
void client_session::write_client(bool relay) {
    if (!is_tls()) {
        error_code ec;
        if (write_now(lowest().socket(), to_client_, ec)) {
            return on_client_written(relay, ec);
        }
    }
    // A write may take body_timeout. While an origin connection is held for the response, the
    // time spent waiting for the client over the whole relay is also bounded by
    // limits.response_min_rate: a slow reader cannot hold the origin connection at its pace.
    const auto now = std::chrono::steady_clock::now();
    auto deadline = now + cfg_->limits.body_timeout;
    if (const auto rate = cfg_->limits.response_min_rate; relay && rate > 0) {
        const auto allowed = rate_time(answer_.bytes_sent, rate) - relay_wait_;
        deadline = std::min(deadline, now + std::max(allowed, decltype(allowed){}));
    }
    lowest().expires_at(deadline);
    asio::async_write(stream_, to_client_.buffers(),
                      [self = self(), relay, since = now](error_code ec, std::size_t) {
                          self->to_client_.sent();
                          self->relay_wait_ += std::chrono::steady_clock::now() - since;
                          self->on_client_written(relay, ec);
                      });
}

void client_session::on_client_written(bool relay, error_code ec) {
    if (relay) {
        return exchange_.on_write_response_body(ec);
    }
    on_write_memory_response(ec);
}

// ---- the origin's response, for the exchange ------------------------------------------------

void client_session::send_head(const response_head& res, std::optional<std::uint64_t> length,
                               bool bodyless) {
    client_framing how;
    how.version = parser_->get().version();
    how.extra = &filter_.headers;
    bool keep = keep_alive_ && !draining_;
    if (bodyless) {
        how.kind = client_framing::body::as_origin;
    } else if (length) {
        how.kind = client_framing::body::length;
        how.length = *length;
    } else if (how.version >= 11) {
        how.kind = client_framing::body::chunked;
    } else {
        how.kind = client_framing::body::until_close;
        keep = false;  // HTTP/1.0 client, unknown length: the close ends the body
    }
    keep_alive_ = keep;
    how.keep_alive = keep;
    answer_.status = res.result_int();
    relay_wait_ = {};
    write_client_response(res, to_client_.head(how.kind == client_framing::body::chunked), how);
}

void client_session::send_body(const char* data, std::size_t size, bool last) {
    answer_.bytes_sent += size;
    to_client_.queue(data, size, last);
    write_client(true);
}

void client_session::finished() {
    log_request();
    if (!keep_alive_) {
        return do_close();
    }
    next_request();
}

void client_session::post(std::function<void()> f) {
    asio::post(lowest().get_executor(), std::move(f));
}

void client_session::open_tunnel(const response_head& res,
                                 std::shared_ptr<origin_connection> origin) {
    client_framing how;
    how.websocket_101 = true;
    how.extra = &filter_.headers;
    answer_.status = 101;
    write_client_response(res, to_client_.head(false), how);
    to_client_.queue(nullptr, 0, true);
    lowest().expires_after(cfg_->limits.body_timeout);
    asio::async_write(stream_, to_client_.buffers(),
                      [self = self(), conn = std::move(origin)](error_code ec, std::size_t) {
                          self->to_client_.sent();
                          if (ec) {
                              fail(ec, "write 101");
                              self->state_->pool->release(std::move(conn), false);
                              return self->close();
                          }
                          self->run_tunnel(conn);
                      });
}

void client_session::run_tunnel(const std::shared_ptr<origin_connection>& conn) {
    if (gone()) {
        return state_->pool->release(conn, false);  // closed while the 101 went out
    }
    enter(session_phase::tunnel);
    conn->visit([&](auto& os) {
        using origin_stream = std::decay_t<decltype(os)>;
        std::make_shared<tunnel<origin_stream>>(self(), stream_, buffer_, conn, os, state_->pool,
                                                cfg_->limits.tunnel_idle_timeout)
            ->run();
    });
}

void client_session::send_response(unsigned status, const header_list& headers, std::string body,
                                   std::shared_ptr<const std::string> shared_body, bool close,
                                   std::string_view written) {
    if (gone()) {
        return;  // nothing more is written to this client
    }
    // The body is either our own text or a page the render cache shares with us (no copy);
    // either way it stays alive in a member until the write completes.
    memory_body_ = std::move(body);
    memory_shared_ = std::move(shared_body);
    const std::string& text = memory_shared_ ? *memory_shared_ : memory_body_;
    const bool head = parser_ && parser_->get().method() == http::verb::head;
    close = close || draining_ || !parser_ || !parser_->is_header_done() || !parser_->keep_alive();
    answer_.status = status;
    write_local_head(to_client_.head(false), parser_ ? parser_->get().version() : 11, status,
                     written, headers, text.size(), !close);
    to_client_.queue(text.data(), head ? 0 : text.size(), true);
    answer_.bytes_sent = head ? 0 : text.size();
    keep_alive_ = !close;
    enter(session_phase::answering);
    // A queue page goes out as a proxied response does: inline while the socket takes it.
    write_client(false);
}

void client_session::send_error(unsigned status, std::string_view text, bool close,
                                std::string_view retry_after, header_list extra) {
    add_error_fields(extra, status, retry_after);
    send_response(status, extra, error_body(status, text), nullptr, close);
}

void client_session::on_write_memory_response(error_code ec) {
    if (ec) {
        fail(ec, "write");
        return do_close();
    }
    log_request();
    memory_shared_.reset();
    if (!keep_alive_) {
        return do_close();
    }
    next_request();
}

void client_session::log_request() {
    const request_head* head = parser_ ? &parser_->get() : nullptr;
    record_answer(*state_, head, http1_protocol(head ? head->version() : 11), info_.client_ip,
                  answer_, filter_);
}

// ---- closing ------------------------------------------------------------------------------

void client_session::do_close() {
    if (has_ended(phase_)) {
        return;
    }
    enter(session_phase::closing);
    deadline_timer_.cancel();
    linger_deadline_ = std::chrono::steady_clock::now() + linger_time;
    stream_.async_shutdown(linger_time,
                           beast::bind_front_handler(&client_session::on_shutdown, self()));
}

// A TLS connection ends with its close_notify; after a plain connection's FIN, lingering reads
// and drops what the client still sends for a moment (linger_time in all, however the bytes
// come), so that a response such as 413 is not destroyed by a reset when we close with unread
// bytes pending.
void client_session::on_shutdown(error_code ec) {
    if (!is_tls()) {
        return do_linger();
    }
    fail(ec, "tls shutdown");
    enter(session_phase::closed);
    error_code ignored;
    lowest().socket().close(ignored);
}

void client_session::do_linger() {
    lowest().expires_at(linger_deadline_);
    lowest().async_read_some(asio::buffer(exchange_.scratch(), relay_buffer::piece_size),
                             beast::bind_front_handler(&client_session::on_linger, self()));
}

void client_session::on_linger(error_code ec, std::size_t) {
    if (ec) {
        enter(session_phase::closed);
        error_code ignored;
        lowest().socket().close(ignored);
        return;
    }
    do_linger();
}

}  // namespace waitroom::gateway

#include "client_session.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/core/read_size.hpp>
#include <boost/beast/core/string.hpp>

#include "forward_headers.hpp"
#include "proxy_protocol.hpp"
#include "read_steps.hpp"

namespace waitroom::gateway {

namespace {

constexpr auto linger_time = std::chrono::seconds(2);

template <class Stream>
Stream make_stream(tcp_socket&& socket, const certificate_set* tls) {
    if constexpr (std::is_same_v<Stream, tcp_stream>) {
        (void)tls;
        return Stream(std::move(socket));
    } else {
        return Stream(std::move(socket), tls->default_context());
    }
}

const char* reason_text(unsigned status) {
    switch (status) {
        case 400:
            return "Bad Request";
        case 405:
            return "Method Not Allowed";
        case 408:
            return "Request Timeout";
        case 413:
            return "Content Too Large";
        case 431:
            return "Request Header Fields Too Large";
        case 502:
            return "Bad Gateway";
        case 503:
            return "Service Unavailable";
        case 504:
            return "Gateway Timeout";
        default:
            return "Error";
    }
}

}  // namespace

template <class Stream>
client_session<Stream>::client_session(std::shared_ptr<worker_context> state, tcp_socket&& socket,
                                       std::shared_ptr<const certificate_set> tls,
                                       bool proxy_protocol)
    : state_(std::move(state)),
      runtime_(state_->current()),
      cfg_(runtime_->cfg.get()),
      tls_(std::move(tls)),
      stream_(make_stream<Stream>(std::move(socket), tls_.get())),
      proxy_protocol_(proxy_protocol),
      deadline_timer_(state_->ioc),
      exchange_(*this, *state_) {
    error_code ec;
    auto remote = lowest().socket().remote_endpoint(ec);
    if (!ec) {
        identity_.from_socket(remote.address(), info_);
    }
    if constexpr (!is_tls) {
        lowest().socket().non_blocking(true, ec);  // for write_now (inline writes)
    }
    info_.tls = is_tls;
    info_.worker = state_->index;
    info_.runtime = runtime_;
    state_->session_opened(this);
    if (auto* m = state_->ctx->metrics()) {
        m->client_connections().add(state_->index, 1);
    }
}

template <class Stream>
client_session<Stream>::~client_session() {
    exchange_.release();  // also a tunnel's: the session lives as long as its tunnel
    state_->session_closed(this);
    if (auto* m = state_->ctx->metrics()) {
        m->client_connections().sub(state_->index, 1);
    }
}

template <class Stream>
void client_session<Stream>::run() {
    if (proxy_protocol_) {
        // The PROXY header and the TLS handshake after it share one header_timeout.
        lowest().expires_after(cfg_->limits.header_timeout);
        return read_proxy_header();
    }
    start();
}

template <class Stream>
void client_session<Stream>::start() {
    if constexpr (is_tls) {
        if (!proxy_protocol_) {
            lowest().expires_after(cfg_->limits.header_timeout);
        }
        // Bytes read past a PROXY header are the start of the ClientHello.
        stream_.async_handshake(ssl::stream_base::server, buffer_.data(),
                                [self = self()](error_code ec, std::size_t) {
                                    self->buffer_.consume(self->buffer_.size());
                                    self->on_handshake(ec);
                                });
    } else {
        do_read_header();
    }
}

template <class Stream>
void client_session<Stream>::read_proxy_header() {
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

template <class Stream>
void client_session<Stream>::on_proxy_bytes(error_code ec, std::size_t n) {
    if (ec) {
        fail(ec, "proxy header");
        return close();
    }
    buffer_.commit(n);
    read_proxy_header();
}

template <class Stream>
void client_session<Stream>::on_handshake(error_code ec) {
    if (ec) {
        return fail(ec, "tls handshake");
    }
    do_read_header();
}

template <class Stream>
void client_session<Stream>::drain() {
    draining_ = true;
    if (!busy_) {
        // Waiting for a request: cancel the read; on_read_header closes.
        header_waiting_ = false;
        deadline_timer_.cancel();
        error_code ignored;
        lowest().socket().cancel(ignored);
    }
}

template <class Stream>
void client_session<Stream>::close() {
    closed_ = true;
    error_code ignored;
    deadline_timer_.cancel();
    lowest().socket().shutdown(asio::socket_base::shutdown_both, ignored);
    lowest().socket().close(ignored);
    exchange_.close();
}

// ---- the request's head -------------------------------------------------------------------

template <class Stream>
void client_session<Stream>::do_read_header() {
    busy_ = false;
    exchange_.reset();
    if (draining_ || closed_) {
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
    const bool started = first_request_ || buffer_.size() > 0;
    header_started_ = started;
    header_timed_out_ = false;
    client_wait_since_ = std::chrono::steady_clock::now();
    header_deadline_ = client_wait_since_ +
                       (started ? cfg_->limits.header_timeout : cfg_->limits.keepalive_timeout);
    header_waiting_ = true;
    // Back-to-back keep-alive requests cost no timer operation at all (see arm_timer).
    arm_timer(header_deadline_);
    lowest().expires_never();
    // deadline_timer_ bounds this read, so the stream's own timeout machinery (an operation
    // layer and a timer wait per read) has nothing to add.
    read_client_head();
}

// Parses what is buffered, then reads the socket until the head is complete: plain TCP with
// socket_reader (one operation, no Beast layers), TLS with the stream's reads.
template <class Stream>
void client_session<Stream>::read_client_head(bool try_first) {
    error_code ec;
    if (parse_head(*parser_, buffer_, ec)) {
        return on_read_header(ec, 0);
    }
    if (header_timed_out_) {
        return on_read_header(asio::error::operation_aborted, 0);  // as for the origin's head
    }
    if (!header_started_ && (buffer_.size() > 0 || parser_->got_some())) {
        // The first byte of a kept-alive connection's next request: from now on the request
        // must arrive within header_timeout, not keepalive_timeout.
        header_started_ = true;
        header_deadline_ = std::chrono::steady_clock::now() + cfg_->limits.header_timeout;
        arm_timer(header_deadline_);
    }
    if constexpr (is_tls) {
        (void)try_first;
        stream_.async_read_some(
            buffer_.prepare(beast::read_size(buffer_, 65536)),
            beast::bind_front_handler(&client_session::on_client_bytes, self()));
    } else {
        // The next request on a kept-alive connection is waited for without a try when the last
        // read found the socket empty; the worker's sweep tries it once later (see
        // worker_context). A head under way, or a retry of the sweep, is tried first; a
        // connection's first read is tried by the reactor (a new socket was never found empty).
        const bool next = !first_request_ && !parser_->got_some() && !try_first;
        if (next) {
            client_untried_ = true;
            worker_context::want_sweep(state_);
        }
        const bool fresh = first_request_ && !parser_->got_some();
        client_read_.start<&client_session::on_client_bytes>(
            lowest().socket(), buffer_.prepare(beast::read_size(buffer_, 65536)),
            next || fresh ? socket_reader::kind::answer : socket_reader::kind::more, self());
    }
}

template <class Stream>
bool client_session<Stream>::sweep(std::chrono::steady_clock::time_point cutoff) {
    if (!client_untried_ || !client_read_.pending()) {
        client_untried_ = false;
        return false;
    }
    if (client_wait_since_ > cutoff) {
        return true;  // too recent: the next sweep
    }
    client_untried_ = false;
    client_retry_ = true;
    error_code ignored;
    lowest().socket().cancel(ignored);  // on_client_bytes starts the read again, trying first
    return false;
}

template <class Stream>
void client_session<Stream>::on_client_bytes(error_code ec, std::size_t n) {
    client_untried_ = false;
    const bool retry = std::exchange(client_retry_, false);
    if (ec == asio::error::operation_aborted && retry && !header_timed_out_ && !draining_ &&
        !closed_) {
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
template <class Stream>
void client_session<Stream>::arm_timer(std::chrono::steady_clock::time_point deadline) {
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

template <class Stream>
void client_session<Stream>::on_timer(std::uint64_t generation, error_code ec) {
    if (generation != timer_generation_) {
        return;  // superseded by a re-arm
    }
    timer_armed_ = false;
    if (ec || closed_) {
        return;  // cancelled: the next wait arms it again
    }
    const auto now = std::chrono::steady_clock::now();
    if (!header_waiting_) {
        return exchange_.on_deadline(now);
    }
    if (now < header_deadline_) {
        return arm_timer(header_deadline_);  // armed for an older, earlier deadline
    }
    header_timed_out_ = true;
    error_code ignored;
    lowest().socket().cancel(ignored);
}

template <class Stream>
void client_session<Stream>::follow(const std::shared_ptr<const node_runtime>& rt) {
    if (rt != runtime_) {
        runtime_ = rt;
        cfg_ = rt->cfg.get();
        info_.runtime = rt;  // the filter decides under the same runtime
    }
}

template <class Stream>
void client_session<Stream>::on_read_header(error_code ec, std::size_t) {
    header_waiting_ = false;
    if (ec == asio::error::operation_aborted && header_timed_out_) {
        if (header_started_) {  // a first request, or bytes of a next one
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
    if (ec == http::error::end_of_stream || ec == asio::error::operation_aborted || closed_) {
        return do_close();
    }
    if (is_parse_error(ec)) {
        // Any other parse error: malformed request line, bad field, bad Content-Length…
        fail(ec, "request header");
        return send_error(400, "malformed request", true);
    }
    if (ec) {
        fail(ec, "read header");
        return do_close();
    }
    // ...and so does the request, once its head has arrived: a keep-alive connection that
    // waited across a reload is served wholly under the new runtime, as its worker's origin
    // pool is. (The head and body limits in force stay those its read began with.)
    follow(state_->current());
    first_request_ = false;
    busy_ = true;
    started_ = std::chrono::steady_clock::now();
    bytes_sent_ = 0;
    filter_ = {};  // the access log must not show the previous request's room
    const auto& req = parser_->get();
    if (auto problem = request_problem(req); !problem.empty()) {
        spdlog::debug("gateway: 400 from {}: {}", info_.client_ip, problem);
        return send_error(400, "ambiguous or malformed request framing", true);
    }
    // The target and Host are read here, once: the room routes on this reading and the origin
    // is sent it.
    auto host = req.find(http::field::host);
    std::string_view host_value;
    if (host != req.end()) {
        host_value = host->value();
    }
    canonical_ = util::canonicalize_request(req.method_string(), req.target(),
                                            host != req.end() ? &host_value : nullptr,
                                            req.version() >= 11, target_buffers_);
    if (canonical_.status != util::target_status::ok) {
        spdlog::debug("gateway: refused request from {}: {}", info_.client_ip, canonical_.problem);
        return send_error(canonical_.status == util::target_status::method_not_allowed ? 405 : 400,
                          canonical_.problem, true);
    }
    info_.request = &canonical_;
    client_keep_alive_ = parser_->keep_alive();
    identity_.resolve(req, *cfg_, runtime_->generation, is_tls, info_);
    state_->ctx->filter().on_request(
        req, info_, [self = self()](filter_result r) { self->on_filter(std::move(r)); });
}

template <class Stream>
void client_session<Stream>::on_filter(filter_result r) {
    filter_ = std::move(r);
    if (filter_.what == filter_result::action::respond) {
        // The origin never sees this request; an unread body forces a close.
        return send_response(filter_.status, filter_.headers, std::move(filter_.body),
                             std::move(filter_.shared_body), !parser_->is_done(), filter_.fields,
                             &filter_.patch);
    }
    exchange_.start();
}

// The client's next request: read at once, unless it is already buffered (pipelined): then it
// waits its turn behind other connections' work instead of recursing through a whole exchange.
template <class Stream>
void client_session<Stream>::next_request() {
    if (buffer_.size() == 0) {
        return do_read_header();
    }
    asio::post(lowest().get_executor(), [self = self()] { self->do_read_header(); });
}

// ---- writing to the client, answers from memory ---------------------------------------------

// Inline while a plain socket takes it (no timer, no operation allocated, no completion posted),
// else asynchronously.
template <class Stream>
void client_session<Stream>::write_client(bool relay) {
    if constexpr (!is_tls) {
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
        const auto allowed = rate_time(bytes_sent_, rate) - relay_wait_;
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

template <class Stream>
void client_session<Stream>::on_client_written(bool relay, error_code ec) {
    if (relay) {
        return exchange_.on_write_response_body(ec, 0);
    }
    on_write_memory_response(ec);
}

template <class Stream>
void client_session<Stream>::send_response(unsigned status, const header_list& headers,
                                           std::string body,
                                           std::shared_ptr<const std::string> shared_body,
                                           bool close, std::string_view written,
                                           const filter_result::body_patch* patch) {
    // The body is either our own text or a page the render cache shares with us (no copy);
    // either way it stays alive in a member until the write completes.
    memory_body_ = std::move(body);
    memory_shared_ = std::move(shared_body);
    const std::string& text = memory_shared_ ? *memory_shared_ : memory_body_;
    const bool head = parser_ && parser_->get().method() == http::verb::head;
    close = close || draining_ || !parser_ || !parser_->is_header_done() || !parser_->keep_alive();
    status_ = status;
    write_local_head(to_client_.head(false), parser_ ? parser_->get().version() : 11, status,
                     written, headers, text.size(), !close);
    if (!head && memory_shared_ && patch != nullptr && patch->size > 0 &&
        patch->size <= patch->bytes.size() && patch->at <= text.size() &&
        patch->size <= text.size() - patch->at) {
        // The shared page with the visitor's bytes in place: three buffers, no copy of the page.
        const std::string_view whole = text;
        const std::string_view parts[] = {whole.substr(0, patch->at),
                                          {patch->bytes.data(), patch->size},
                                          whole.substr(patch->at + patch->size)};
        to_client_.queue_whole(parts);
    } else {
        to_client_.queue(text.data(), head ? 0 : text.size(), true);
    }
    bytes_sent_ = head ? 0 : text.size();
    answer_close_ = close;
    // A queue page goes out as a proxied response does: inline while the socket takes it.
    write_client(false);
}

template <class Stream>
void client_session<Stream>::send_error(unsigned status, std::string_view text, bool close,
                                        std::string_view retry_after, header_list extra) {
    std::string body =
        std::to_string(status) + " " + reason_text(status) + "\n" + std::string(text) + "\n";
    extra.insert(extra.begin(),
                 {{"Content-Type", "text/plain; charset=utf-8"}, {"Cache-Control", "no-store"}});
    if (!retry_after.empty()) {
        extra.emplace_back("Retry-After", std::string(retry_after));
    }
    if (status == 405) {
        // Only CONNECT is refused so (RFC 9110 §15.5.6 wants the methods that are allowed).
        extra.emplace_back("Allow", "GET, HEAD, POST, PUT, DELETE, OPTIONS, PATCH, TRACE");
    }
    send_response(status, extra, std::move(body), nullptr, close);
}

template <class Stream>
void client_session<Stream>::on_write_memory_response(error_code ec) {
    if (ec) {
        fail(ec, "write");
        return do_close();
    }
    log_request();
    memory_shared_.reset();
    if (answer_close_) {
        return do_close();
    }
    next_request();
}

template <class Stream>
void client_session<Stream>::log_request() {
    const unsigned status = status_;
    if (auto* m = state_->ctx->metrics()) {
        m->requests(metrics::status_class_of(status)).inc(state_->index);
        m->request_latency().observe(
            state_->index,
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count());
    }
    const auto* log = state_->ctx->access_log();
    if (log == nullptr || !parser_) {
        return;
    }
    const auto& req = parser_->get();
    util::access_record r;
    r.remote = info_.client_ip;
    r.method = req.method_string();
    r.target = req.target();
    r.host = req[http::field::host];
    r.status = status;
    r.bytes_sent = bytes_sent_;
    r.duration = std::chrono::duration_cast<std::chrono::microseconds>(
        std::chrono::steady_clock::now() - started_);
    r.unix_ms = util::unix_ms(state_->ctx->clock().now());
    r.room = filter_.room;
    r.decision = filter_.decision;
    log->write(r);
}

// ---- closing ------------------------------------------------------------------------------

template <class Stream>
void client_session<Stream>::do_close() {
    if (closed_) {
        return;
    }
    closed_ = true;
    deadline_timer_.cancel();
    linger_deadline_ = std::chrono::steady_clock::now() + linger_time;
    if constexpr (is_tls) {
        lowest().expires_after(std::chrono::seconds(2));
        stream_.async_shutdown(beast::bind_front_handler(&client_session::on_shutdown, self()));
    } else {
        error_code ignored;
        lowest().socket().shutdown(asio::socket_base::shutdown_send, ignored);
        do_linger();
    }
}

// After our FIN, read and drop what the client still sends for a moment (linger_time in all,
// however the bytes come), so that a response such as 413 is not destroyed by a reset when we
// close with unread bytes pending.
template <class Stream>
void client_session<Stream>::do_linger() {
    lowest().expires_at(linger_deadline_);
    lowest().async_read_some(asio::buffer(exchange_.scratch(), relay_buffer::piece_size),
                             beast::bind_front_handler(&client_session::on_linger, self()));
}

template <class Stream>
void client_session<Stream>::on_linger(error_code ec, std::size_t) {
    if (ec) {
        error_code ignored;
        lowest().socket().close(ignored);
        return;
    }
    do_linger();
}

template <class Stream>
void client_session<Stream>::on_shutdown(error_code ec) {
    fail(ec, "tls shutdown");
    error_code ignored;
    lowest().socket().close(ignored);
}

template class client_session<tcp_stream>;
template class client_session<ssl::stream<tcp_stream>>;

}  // namespace waitroom::gateway

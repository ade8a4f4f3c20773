#include "http_session.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/core/read_size.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/read.hpp>

#include "client_ip.hpp"
#include "forward_headers.hpp"
#include "origin_connection.hpp"
#include "origin_pool.hpp"
#include "proxy_protocol.hpp"
#include "tunnel.hpp"
#include "waitroom/room/router.hpp"

namespace waitroom::gateway {

namespace {

constexpr std::size_t piece_size = 16 * 1024;
constexpr std::size_t origin_header_limit = 64 * 1024;
constexpr auto linger_time = std::chrono::seconds(2);
// Slack on the schedules of body_min_rate and response_min_rate, for the first bytes of a stream.
constexpr auto rate_slack = std::chrono::seconds(1);

// How long `bytes` take at `rate` bytes per second, plus rate_slack.
std::chrono::steady_clock::duration rate_time(std::uint64_t bytes, std::uint64_t rate) {
    return rate_slack + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(static_cast<double>(bytes) /
                                                          static_cast<double>(rate)));
}

template <class Stream>
Stream make_stream(tcp_socket&& socket, ssl::context* tls) {
    if constexpr (std::is_same_v<Stream, tcp_stream>) {
        (void)tls;
        return Stream(std::move(socket));
    } else {
        return Stream(std::move(socket), *tls);
    }
}

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

// Beast's parser errors (as opposed to network errors): the request is malformed.
bool is_parse_error(const error_code& ec) {
    return ec.category() == http::make_error_code(http::error::bad_target).category() &&
           ec != http::error::end_of_stream && ec != http::error::partial_message &&
           ec != http::error::need_buffer;
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

// How much to read from the origin at once: at least a head and a whole body piece, so that a
// response of up to a piece arrives in one read (a short one: see socket_reader).
std::size_t origin_read_size(beast::flat_buffer& buffer) {
    return std::max(beast::read_size(buffer, 65536), piece_size + 4096);
}

// Parses what `buffer` holds into `parser` up to the end of the head, as Beast's
// async_read_header does between reads. True when the head is complete or the bytes are
// malformed (`ec` says which), false when more bytes are needed.
template <class Parser>
bool parse_head(Parser& parser, beast::flat_buffer& buffer, error_code& ec) {
    ec = {};
    while (!parser.is_header_done()) {
        if (buffer.size() == 0) {
            return false;
        }
        const std::size_t n = parser.put(buffer.data(), ec);
        buffer.consume(n);
        if (ec == http::error::need_more) {
            ec = {};
            return false;
        }
        if (ec) {
            return true;
        }
    }
    return true;
}

// The error a failed read of a head reports, as Beast's would: at the end of the stream, no
// message at all (end_of_stream) or one cut short (partial_message); else the read's own.
template <class Parser>
error_code head_read_error(Parser& parser, error_code ec) {
    if (ec != asio::error::eof) {
        return ec;
    }
    if (!parser.got_some()) {
        return http::error::end_of_stream;
    }
    ec = {};
    parser.put_eof(ec);
    return ec ? ec : error_code(http::error::partial_message);
}

// Parses what `buffer` holds into the body piece `parser` fills, as Beast's async_read does
// between reads. True when the reading stops here: the piece is full, the body is done, or `ec`
// says what is wrong (such as a chunk-size line or trailers past their bounds, see
// chunk_wait_problem); false when more bytes are needed.
template <class Parser>
bool parse_piece(Parser& parser, beast::flat_buffer& buffer, std::size_t trailer_limit,
                 error_code& ec) {
    ec = {};
    while (buffer.size() > 0 && !parser.is_done()) {
        const std::size_t n = parser.put(buffer.data(), ec);
        buffer.consume(n);
        if (ec == http::error::need_buffer) {
            ec = {};
            return true;
        }
        if (ec == http::error::need_more) {
            ec = {};
            break;
        }
        if (ec) {
            return true;
        }
        if (n == 0) {
            break;
        }
    }
    if (parser.is_done()) {
        return true;
    }
    const auto pending = buffer.cdata();
    ec = chunk_wait_problem({static_cast<const char*>(pending.data()), pending.size()},
                            trailer_limit);
    return static_cast<bool>(ec);
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
http_session<Stream>::http_session(std::shared_ptr<worker_context> state, tcp_socket&& socket,
                                   ssl::context* tls, bool proxy_protocol)
    : state_(std::move(state)),
      runtime_(state_->current()),
      cfg_(runtime_->cfg.get()),
      stream_(make_stream<Stream>(std::move(socket), tls)),
      deadline_timer_(state_->ioc) {
    error_code ec;
    auto remote = lowest().socket().remote_endpoint(ec);
    if (!ec) {
        auto addr = remote.address();
        if (addr.is_v6() && addr.to_v6().is_v4_mapped()) {
            addr = asio::ip::make_address_v4(asio::ip::v4_mapped, addr.to_v6());
        } else if (addr.is_v6() && addr.to_v6().scope_id() != 0) {
            // A link-local peer's zone (fe80::1%eth0) names our interface, not the client: it
            // is dropped, so that the address parses for the client caps and the IP rules.
            auto v6 = addr.to_v6();
            v6.scope_id(0);
            addr = v6;
        }
        info_.client_ip = addr.to_string();
        info_.client_ip_bytes = room::parse_ip(info_.client_ip);
        peer_ip_ = info_.client_ip;
        peer_bytes_ = info_.client_ip_bytes;
    }
    proxy_protocol_ = proxy_protocol;
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
http_session<Stream>::~http_session() {
    if (origin_) {
        state_->pool->release(std::move(origin_), false);
    }
    give_slot();  // also a tunnel's: the session lives as long as its tunnel
    free_body_buffer();
    state_->session_closed(this);
    if (auto* m = state_->ctx->metrics()) {
        m->client_connections().sub(state_->index, 1);
    }
}

template <class Stream>
char* http_session<Stream>::piece(std::size_t room) {
    if (piece_capacity_ < room) {
        // Once per connection (again only if a reload raised limits.request_buffer). Not
        // zero-filled: a page is committed only when bytes land in it, so a connection that
        // announces a body and sends little holds little memory.
        piece_ = std::make_unique_for_overwrite<char[]>(room);
        piece_capacity_ = room;
    }
    return piece_.get();
}

template <class Stream>
void http_session<Stream>::run() {
    if (proxy_protocol_) {
        // The PROXY header and the TLS handshake after it share one header_timeout.
        lowest().expires_after(cfg_->limits.header_timeout);
        return read_proxy_header();
    }
    start();
}

template <class Stream>
void http_session<Stream>::start() {
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
void http_session<Stream>::read_proxy_header() {
    auto r =
        proxy_protocol::parse({static_cast<const char*>(buffer_.data().data()), buffer_.size()});
    if (r.what == proxy_protocol::status::need_more) {
        lowest().async_read_some(buffer_.prepare(proxy_protocol::max_v2_size),
                                 beast::bind_front_handler(&http_session::on_proxy_bytes, self()));
        return;
    }
    if (r.what == proxy_protocol::status::invalid) {
        spdlog::debug("gateway: malformed PROXY header from {}", peer_ip_);
        return close();
    }
    buffer_.consume(r.size);
    if (r.has_source) {
        peer_bytes_ = r.source;
        format_ip(r.source, peer_ip_);
        info_.client_ip = peer_ip_;
        info_.client_ip_bytes = peer_bytes_;
    }
    start();
}

template <class Stream>
void http_session<Stream>::on_proxy_bytes(error_code ec, std::size_t n) {
    if (ec) {
        fail(ec, "proxy header");
        return close();
    }
    buffer_.commit(n);
    read_proxy_header();
}

// Who the client is for this request: the peer, unless the peer is a trusted proxy; then the
// X-Forwarded-For pick, and the scheme its X-Forwarded-Proto names.
template <class Stream>
void http_session<Stream>::resolve_client(const request_head& req) {
    if (trust_cfg_ != cfg_) {
        trust_cfg_ = cfg_;
        peer_trusted_ = peer_bytes_ && is_trusted(cfg_->trusted_proxies, *peer_bytes_);
        info_.client_ip = peer_ip_;
        info_.client_ip_bytes = peer_bytes_;
        info_.tls = is_tls;
    }
    if (!peer_trusted_) {
        return;
    }
    // The last fields count (a chain is read right to left); past 16, the first ones are cut.
    std::array<std::string_view, 16> chain;
    std::size_t n = 0;
    std::string_view proto;
    for (const auto& f : req) {
        if (f.name() != http::field::unknown) {
            continue;
        }
        if (beast::iequals(f.name_string(), "x-forwarded-for")) {
            if (n == chain.size()) {
                std::move(chain.begin() + 1, chain.end(), chain.begin());
                --n;
            }
            chain[n++] = f.value();
        } else if (proto.empty() && beast::iequals(f.name_string(), "x-forwarded-proto")) {
            proto = f.value();
        }
    }
    if (auto client = select_client({chain.data(), n}, cfg_->trusted_proxies)) {
        info_.client_ip_bytes = client;
        format_ip(*client, info_.client_ip);
    } else {
        info_.client_ip = peer_ip_;
        info_.client_ip_bytes = peer_bytes_;
    }
    // The first proxy's word: "https, http" is what the visitor used, then a hop inside.
    proto = trim_ows(proto.substr(0, proto.find(',')));
    info_.tls = beast::iequals(proto, "https") || (!beast::iequals(proto, "http") && is_tls);
}

template <class Stream>
void http_session<Stream>::on_handshake(error_code ec) {
    if (ec) {
        return fail(ec, "tls handshake");
    }
    do_read_header();
}

template <class Stream>
void http_session<Stream>::drain() {
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
void http_session<Stream>::close() {
    closed_ = true;
    error_code ignored;
    deadline_timer_.cancel();
    lowest().socket().shutdown(asio::socket_base::shutdown_both, ignored);
    lowest().socket().close(ignored);
    if (origin_) {
        origin_->close();
    }
}

// ---- client request header --------------------------------------------------------------

template <class Stream>
void http_session<Stream>::do_read_header() {
    busy_ = false;
    free_body_buffer();
    if (draining_ || closed_) {
        return do_close();
    }
    // The wait for the next head follows the latest reload (its limits and timeouts)...
    follow(state_->current());
    res_parser_.reset();
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
void http_session<Stream>::read_client_head(bool try_first) {
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
        stream_.async_read_some(buffer_.prepare(beast::read_size(buffer_, 65536)),
                                beast::bind_front_handler(&http_session::on_client_bytes, self()));
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
        client_read_.start<&http_session::on_client_bytes>(
            lowest().socket(), buffer_.prepare(beast::read_size(buffer_, 65536)),
            next || fresh ? socket_reader::kind::answer : socket_reader::kind::more, self());
    }
}

template <class Stream>
bool http_session<Stream>::sweep(std::chrono::steady_clock::time_point cutoff) {
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
void http_session<Stream>::on_client_bytes(error_code ec, std::size_t n) {
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
// on a plain origin, for the origin's response (head, then body). It is re-armed only when a wait's
// deadline is earlier than the armed one; a later deadline is picked up when it fires.
template <class Stream>
void http_session<Stream>::arm_timer(std::chrono::steady_clock::time_point deadline) {
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
void http_session<Stream>::on_timer(std::uint64_t generation, error_code ec) {
    if (generation != timer_generation_) {
        return;  // superseded by a re-arm
    }
    timer_armed_ = false;
    if (ec || closed_) {
        return;  // cancelled: the next wait arms it again
    }
    const auto now = std::chrono::steady_clock::now();
    if (header_waiting_) {
        if (now < header_deadline_) {
            return arm_timer(header_deadline_);  // armed for an older, earlier deadline
        }
        header_timed_out_ = true;
        error_code ignored;
        lowest().socket().cancel(ignored);
    } else if (origin_waiting_ && origin_) {
        if (now < origin_deadline_) {
            return arm_timer(origin_deadline_);
        }
        origin_timed_out_ = true;
        error_code ignored;
        origin_->lowest().socket().cancel(ignored);
    } else if (body_waiting_) {
        if (now < body_deadline_) {
            return arm_timer(body_deadline_);
        }
        body_timed_out_ = true;
        error_code ignored;
        lowest().socket().cancel(ignored);
    }
}

template <class Stream>
void http_session<Stream>::follow(const std::shared_ptr<const node_runtime>& rt) {
    if (rt != runtime_) {
        runtime_ = rt;
        cfg_ = rt->cfg.get();
        info_.runtime = rt;  // the filter decides under the same runtime
    }
}

template <class Stream>
void http_session<Stream>::on_read_header(error_code ec, std::size_t) {
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
    head_ = req.method() == http::verb::head;
    websocket_ = is_websocket_upgrade(req);
    request_has_body_ = !parser_->is_done();
    client_keep_alive_ = parser_->keep_alive();
    retried_ = false;
    interim_seen_ = false;
    resolve_client(req);
    state_->ctx->filter().on_request(
        req, info_, [self = self()](filter_result r) { self->on_filter(std::move(r)); });
}

template <class Stream>
void http_session<Stream>::on_filter(filter_result r) {
    filter_ = std::move(r);
    if (filter_.what == filter_result::action::respond) {
        // The origin never sees this request; an unread body forces a close.
        return send_response(filter_.status, filter_.headers, std::move(filter_.body),
                             std::move(filter_.shared_body), request_has_body_);
    }
    // Build the origin's request head once; a retry sends it again.
    forward_info fi;
    fi.client_ip = info_.client_ip;
    fi.tls = info_.tls;
    // HTTP/1.0 without Host: the origin still needs one (HTTP/1.1 is sent).
    fi.origin_host =
        cfg_->origin.host_header == config::host_header_mode::client && canonical_.host.valid
            ? canonical_.host.authority
            : std::string_view{state_->pool->host_header()};
    fi.base_path = cfg_->origin.base_path;
    fi.path = canonical_.target.form == util::target_form::asterisk ? std::string_view{"*"}
                                                                    : canonical_.target.path;
    fi.query = canonical_.target.query;
    fi.forwarded_host = canonical_.host.authority;
    fi.peer_ip = peer_ip_;
    fi.pass_client_fields = cfg_->forwarded_headers == config::forwarded_mode::append;
    fi.keep_forwarded = peer_trusted_ || fi.pass_client_fields;
    fi.drop_fields = filter_.drop_fields.get();
    const auto& req = parser_->get();
    write_origin_request(req, to_origin_.head(parser_->chunked()), fi);
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
        lowest().expires_after(cfg_->limits.body_timeout);
        return asio::async_write(
            stream_, asio::buffer(continue_100.data(), continue_100.size()),
            beast::bind_front_handler(&http_session::on_write_continue, self()));
    }
    do_read_body();
}

// ---- forwarding the request ---------------------------------------------------------------

template <class Stream>
void http_session<Stream>::do_forward(bool fresh) {
    // Idempotent and bodiless: a stale pooled connection is retried, so reuse needs no peek.
    const bool retryable = !request_has_body_ && is_idempotent(parser_->get().method());
    if (!take_tunnel()) {
        // A tunnel holds its origin connection for as long as it lasts: a few clients' tunnels
        // must not take the pool that every other visitor's requests need.
        return send_error(503, "too many WebSocket tunnels",
                          request_has_body_ && !parser_->is_done(), "5", origin_error_headers());
    }
    if (!take_slot()) {
        // Not a wait in the pool's queue: that queue would fill with this one client's requests.
        give_slot();  // the tunnel's place, if one was taken
        return send_error(503, "too many origin connections for this client",
                          request_has_body_ && !parser_->is_done(), "1", origin_error_headers());
    }
    if (!fresh) {
        // The common case, a warm idle connection, goes on inline: no handler, no post.
        if (auto c = state_->pool->take_idle(retryable)) {
            return on_origin({}, std::move(c));
        }
    }
    state_->pool->acquire(beast::bind_front_handler(&http_session::on_origin, self()), fresh,
                          retryable);
}

template <class Stream>
void http_session<Stream>::on_origin(error_code ec, std::shared_ptr<origin_connection> c) {
    if (closed_) {
        if (c) {
            state_->pool->release(std::move(c), false);
        }
        return give_slot();
    }
    if (ec) {
        give_slot();
    }
    if (ec == origin_pool::busy()) {
        // Every origin connection stayed in use (not an origin error): try again shortly.
        const auto wait = std::chrono::ceil<std::chrono::seconds>(cfg_->origin.pool_wait_timeout);
        return send_error(503, "origin busy", request_has_body_ && !parser_->is_done(),
                          std::to_string(std::max<std::int64_t>(wait.count(), 1)),
                          origin_error_headers());
    }
    auto* m = state_->ctx->metrics();
    if (ec) {
        if (m != nullptr) {
            m->origin_errors(origin_error_kind(ec, true)).inc(state_->index);
        }
        return send_error(502, "origin unreachable", request_has_body_, {}, origin_error_headers());
    }
    if (m != nullptr) {
        (c->requests_served > 0 ? m->origin_reused() : m->origin_opened()).inc(state_->index);
    }
    origin_ = std::move(c);
    // The head (again, on a retry) with the body's first piece, or the whole bodiless request.
    to_origin_.resend_head();
    if (request_has_body_) {
        to_origin_.queue(piece(), pending_, parser_->is_done());
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
            // The answer cannot be there yet: socket_reader queues the read without a system call
            // when the connection's last read found it empty.
            return do_read_response_header();
        }
    }
    write_origin();
}

// Sends what to_origin_ holds: inline while a plain socket takes it, else asynchronously.
template <class Stream>
void http_session<Stream>::write_origin() {
    if (!origin_->is_tls()) {
        error_code ec;
        if (write_now(origin_->lowest().socket(), to_origin_, ec)) {
            return on_origin_write_body(ec, 0);
        }
    }
    origin_->lowest().expires_after(request_has_body_ ? cfg_->limits.body_timeout
                                                      : cfg_->origin.timeout);
    origin_->visit([&](auto& s) {
        asio::async_write(s, to_origin_.buffers(), [self = self()](error_code ec, std::size_t n) {
            self->to_origin_.sent();
            self->on_origin_write_body(ec, n);
        });
    });
}

template <class Stream>
void http_session<Stream>::on_write_continue(error_code ec, std::size_t) {
    if (ec) {
        fail(ec, "write 100");
        return do_close();
    }
    do_read_body();
}

// Reads the next piece of the request body: before the origin connection is taken, as much as
// limits.request_buffer holds, all of it within one body_timeout; while an origin connection is
// held, a piece of the same size with no pause longer than body_timeout and, over the whole
// stream, no slower than limits.body_min_rate. The whole body within limits.body_deadline of
// its head.
template <class Stream>
void http_session<Stream>::do_read_body() {
    const auto& limits = cfg_->limits;
    body_room_ = std::max(limits.request_buffer, piece_size);
    if (const auto left = parser_->content_length_remaining(); left && *left < body_room_) {
        // A known small rest needs no bigger buffer than that (or than a relay piece).
        body_room_ = std::max(static_cast<std::size_t>(*left), piece_size);
    }
    body_room_ = body_buffer_room(body_room_);
    auto& body = parser_->body();
    body.data = piece(body_room_);
    body.size = body_room_;
    const auto now = std::chrono::steady_clock::now();
    body_deadline_ = now + limits.body_timeout;
    if (origin_ && limits.body_min_rate > 0) {
        body_deadline_ = std::min(body_deadline_, stream_start_ + rate_time(streamed_ + body_room_,
                                                                            limits.body_min_rate));
    }
    if (limits.body_deadline.count() > 0) {
        body_deadline_ = std::min(body_deadline_, started_ + limits.body_deadline);
    }
    body_timed_out_ = false;
    fill_request_piece();
}

// Parses the buffered bytes into the piece, and reads more while the piece is neither full nor
// the end of the body. Only a chunk-size line or trailers wait in buffer_ between reads, and
// those are bounded (chunk_wait_problem): buffer_ never grows past them plus one read.
template <class Stream>
void http_session<Stream>::fill_request_piece() {
    error_code ec;
    if (parse_piece(*parser_, buffer_, cfg_->limits.max_header_bytes, ec)) {
        return on_read_body(ec, 0);
    }
    if (body_timed_out_) {
        return on_read_body(beast::error::timeout, 0);  // the timer is spent
    }
    const auto into = buffer_.prepare(beast::read_size(buffer_, 65536));
    if constexpr (is_tls) {
        lowest().expires_at(body_deadline_);
        stream_.async_read_some(
            into, beast::bind_front_handler(&http_session::on_client_body_bytes, self()));
    } else {
        // As for the header: the session's timer bounds the wait, socket_reader reads the socket.
        body_waiting_ = true;
        arm_timer(body_deadline_);
        client_read_.start<&http_session::on_client_body_bytes>(lowest().socket(), into,
                                                                socket_reader::kind::more, self());
    }
}

template <class Stream>
void http_session<Stream>::on_client_body_bytes(error_code ec, std::size_t n) {
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
    buffer_.commit(n);
    fill_request_piece();
}

template <class Stream>
void http_session<Stream>::on_read_body(error_code ec, std::size_t) {
    if (ec == beast::error::timeout || ec == http::error::body_limit || is_parse_error(ec)) {
        // The origin saw at most part of this request: its connection is not reused.
        if (origin_) {
            release_origin(false);
        }
        // The room may have admitted (and counted) this visitor already: the answer carries
        // the cookie, as an origin error's does, so the place is not held by nobody.
        if (ec == beast::error::timeout) {
            return send_error(408, "request body too slow", true, {}, origin_error_headers());
        }
        if (ec == http::error::body_limit) {
            return send_error(413, "request body too large", true, {}, origin_error_headers());
        }
        if (ec == http::error::header_limit) {
            return send_error(400, "request trailers too large", true, {}, origin_error_headers());
        }
        if (ec == http::error::bad_chunk_extension) {
            return send_error(400, "chunk line too long or malformed", true, {},
                              origin_error_headers());
        }
        return send_error(400, "malformed request body", true, {}, origin_error_headers());
    }
    if (ec) {
        fail(ec, "read body");
        return do_close();
    }
    pending_ = body_room_ - parser_->body().size;
    if (!origin_) {
        return do_forward(false);  // all of a small body, or a large one's first piece
    }
    streamed_ += pending_;
    to_origin_.queue(pending_ > 0 ? piece() : nullptr, pending_, parser_->is_done());
    write_origin();
}

template <class Stream>
void http_session<Stream>::on_origin_write_body(error_code ec, std::size_t) {
    if (ec) {
        // A bodiless request may be retried (a stale pooled connection); a body is gone.
        return origin_failed(ec, !request_has_body_);
    }
    if (!request_has_body_ || parser_->is_done()) {
        return do_read_response_header();
    }
    do_read_body();
}

// ---- the origin's response ----------------------------------------------------------------

template <class Stream>
void http_session<Stream>::do_read_response_header() {
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
        origin_deadline_ = std::chrono::steady_clock::now() + cfg_->origin.timeout;
        arm_timer(origin_deadline_);
        return read_origin_head();
    }
    origin_->lowest().expires_after(cfg_->origin.timeout);
    origin_->visit([&](auto& s) {
        http::async_read_header(
            s, origin_->buffer(), *res_parser_,
            beast::bind_front_handler(&http_session::on_read_response_header, self()));
    });
}

template <class Stream>
void http_session<Stream>::read_origin_head() {
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
    origin_read_.start<&http_session::on_origin_bytes>(
        origin_->lowest().socket(), buf.prepare(origin_read_size(buf)), k, self());
}

template <class Stream>
void http_session<Stream>::on_origin_bytes(error_code ec, std::size_t n) {
    if (ec) {
        return on_read_response_header(head_read_error(*res_parser_, ec), 0);
    }
    origin_->buffer().commit(n);
    read_origin_head();
}

template <class Stream>
void http_session<Stream>::on_read_response_header(error_code ec, std::size_t) {
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
            return send_error(502, "origin switched protocols unasked", true, {},
                              origin_error_headers());
        }
        return start_tunnel();
    }
    if (status >= 100 && status < 200) {
        // Interim (103 Early Hints…): not relayed. Posted: an origin sending many at once must
        // not deepen the stack by one exchange each.
        interim_seen_ = true;
        return asio::post(lowest().get_executor(),
                          [self = self()] { self->do_read_response_header(); });
    }
    // The filter sees (and may change) the origin's header without its hop-by-hop fields;
    // what is left of it goes out.
    strip_hop_by_hop(res);
    state_->ctx->filter().on_response(res, filter_.context);
    client_framing how;
    how.version = parser_->get().version();
    how.extra = &filter_.headers;
    const bool bodyless = head_ || status == 204 || status == 304;
    bool keep = client_keep_alive_ && !draining_;
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
    client_keep_alive_ = keep;
    how.keep_alive = keep;
    status_ = status;
    relay_wait_ = {};
    write_client_response(res, to_client_.head(how.kind == client_framing::body::chunked), how);

    if (bodyless) {
        to_client_.queue(nullptr, 0, true);
        return write_response_piece();
    }
    if (res_parser_->is_done() || origin_->buffer().size() > 0) {
        // Body bytes are already here: the head goes out with them in one write.
        return do_read_response_body();
    }
    to_client_.queue(nullptr, 0, false);  // the head alone, while the body is on its way
    write_response_piece();
}

template <class Stream>
void http_session<Stream>::do_read_response_body() {
    if (res_parser_->is_done()) {
        // Finish the framing (the last chunk) with an empty final piece.
        to_client_.queue(nullptr, 0, true);
        return write_response_piece();
    }
    auto& body = res_parser_->body();
    body.data = piece();
    body.size = piece_size;
    fill_response_piece();
}

// Parses the origin's buffered bytes into the piece, and reads more while the piece is neither
// full nor the end of the body.
template <class Stream>
void http_session<Stream>::fill_response_piece() {
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
        origin_deadline_ = std::chrono::steady_clock::now() + cfg_->limits.body_timeout;
        arm_timer(origin_deadline_);
        return origin_read_.start<&http_session::on_origin_body_bytes>(
            origin_->lowest().socket(), buf.prepare(origin_read_size(buf)),
            socket_reader::kind::more, self());
    }
    origin_->lowest().expires_after(cfg_->limits.body_timeout);
    origin_->visit([&](auto& s) {
        http::async_read(s, buf, *res_parser_,
                         beast::bind_front_handler(&http_session::on_read_response_body, self()));
    });
}

template <class Stream>
void http_session<Stream>::on_origin_body_bytes(error_code ec, std::size_t n) {
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
void http_session<Stream>::on_read_response_body(error_code ec, std::size_t) {
    if (ec == http::error::need_buffer) {
        ec = {};
    }
    if (ec) {
        // The response has started: the only honest signal left is to cut the connection.
        fail(ec, "read response body");
        return close();
    }
    const std::size_t n = piece_size - res_parser_->body().size;
    const bool more = !res_parser_->is_done();
    if (n == 0 && more) {
        return do_read_response_body();
    }
    bytes_sent_ += n;
    to_client_.queue(n > 0 ? piece() : nullptr, n, !more);
    write_response_piece();
}

template <class Stream>
void http_session<Stream>::write_response_piece() {
    write_client(beast::bind_front_handler(&http_session::on_write_response_body, self()));
}

// Sends what to_client_ holds, then calls `on_done(ec, n)`: inline while a plain socket takes
// it (no timer, no operation allocated, no completion posted), else asynchronously.
template <class Stream>
template <class Handler>
void http_session<Stream>::write_client(Handler&& on_done) {
    if constexpr (!is_tls) {
        error_code ec;
        if (write_now(lowest().socket(), to_client_, ec)) {
            return on_done(ec, 0);
        }
    }
    // A write may take body_timeout. While an origin connection is held for the response, the
    // time spent waiting for the client over the whole relay is also bounded by
    // limits.response_min_rate: a slow reader cannot hold the origin connection at its pace.
    const auto now = std::chrono::steady_clock::now();
    auto deadline = now + cfg_->limits.body_timeout;
    if (const auto rate = cfg_->limits.response_min_rate; origin_ && rate > 0) {
        const auto allowed = rate_time(bytes_sent_, rate) - relay_wait_;
        deadline = std::min(deadline, now + std::max(allowed, decltype(allowed){}));
    }
    lowest().expires_at(deadline);
    asio::async_write(stream_, to_client_.buffers(),
                      [self = self(), on_done = std::forward<Handler>(on_done), since = now](
                          error_code ec, std::size_t n) mutable {
                          self->to_client_.sent();
                          self->relay_wait_ += std::chrono::steady_clock::now() - since;
                          on_done(ec, n);
                      });
}

template <class Stream>
void http_session<Stream>::on_write_response_body(error_code ec, std::size_t) {
    if (ec) {
        fail(ec, "write response");
        return close();
    }
    if (!to_client_.done()) {
        return do_read_response_body();
    }
    finish_exchange();
}

template <class Stream>
void http_session<Stream>::finish_exchange() {
    log_request();
    const bool reusable = res_parser_->is_done() && res_parser_->keep_alive();
    release_origin(reusable);
    if (!client_keep_alive_) {
        return do_close();
    }
    next_request();
}

// The client's next request: read at once, unless it is already buffered (pipelined): then it
// waits its turn behind other connections' work instead of recursing through a whole exchange.
template <class Stream>
void http_session<Stream>::next_request() {
    if (buffer_.size() == 0) {
        return do_read_header();
    }
    asio::post(lowest().get_executor(), [self = self()] { self->do_read_header(); });
}

template <class Stream>
void http_session<Stream>::start_tunnel() {
    auto& res = res_parser_->get();
    strip_hop_by_hop(res);
    state_->ctx->filter().on_response(res, filter_.context);
    client_framing how;
    how.websocket_101 = true;
    how.extra = &filter_.headers;
    status_ = 101;
    write_client_response(res, to_client_.head(false), how);
    to_client_.queue(nullptr, 0, true);
    lowest().expires_after(cfg_->limits.body_timeout);
    asio::async_write(stream_, to_client_.buffers(), [self = self()](error_code ec, std::size_t) {
        self->to_client_.sent();
        if (ec) {
            fail(ec, "write 101");
            return self->close();
        }
        auto conn = std::move(self->origin_);
        conn->visit([&](auto& os) {
            using origin_stream = std::decay_t<decltype(os)>;
            std::make_shared<tunnel<Stream, origin_stream>>(self, self->stream_, self->buffer_,
                                                            conn, os, self->state_->pool,
                                                            self->cfg_->limits.tunnel_idle_timeout)
                ->run();
        });
    });
}
template <class Stream>
void http_session<Stream>::origin_failed(error_code ec, bool before_response) {
    fail(ec, "origin");
    const bool from_pool = origin_ && origin_->requests_served > 0;
    release_origin(false);
    // A pooled connection the origin had already closed fails before any response byte; an
    // idempotent request without a body is safe to send again, once, on a new connection.
    if (before_response && from_pool && !retried_ && !request_has_body_ &&
        is_idempotent(parser_->get().method()) && ec != beast::error::timeout) {
        retried_ = true;
        return do_forward(true);
    }
    if (auto* m = state_->ctx->metrics()) {
        m->origin_errors(origin_error_kind(ec, false)).inc(state_->index);
    }
    if (ec == beast::error::timeout && before_response) {
        return send_error(504, "origin timed out", request_has_body_ && !parser_->is_done(), {},
                          origin_error_headers());
    }
    send_error(502, "origin connection failed", request_has_body_ && !parser_->is_done(), {},
               origin_error_headers());
}

// What the room filter adds to the gateway's own answer for an origin that did not answer.
template <class Stream>
header_list http_session<Stream>::origin_error_headers() {
    header_list extra;
    state_->ctx->filter().on_origin_error(extra, filter_.context);
    return extra;
}

template <class Stream>
void http_session<Stream>::release_origin(bool reusable) {
    state_->pool->release(std::move(origin_), reusable);
    give_slot();
}

template <class Stream>
bool http_session<Stream>::take_slot() {
    const std::size_t cap = config::client_connection_cap(cfg_->origin);
    if (slot_held_ || cap == 0 || !info_.client_ip_bytes) {
        return true;
    }
    // info_ names the client (the peer, or whom a trusted proxy speaks for) for this request.
    slot_client_ = client_slots::client_of(*info_.client_ip_bytes);
    slot_held_ = state_->slots.take(slot_client_, cap);
    return slot_held_;
}

template <class Stream>
void http_session<Stream>::give_slot() {
    if (std::exchange(slot_held_, false)) {
        state_->slots.give(slot_client_);
    }
    if (std::exchange(tunnel_held_, false)) {
        --state_->tunnels;
    }
}

template <class Stream>
bool http_session<Stream>::take_tunnel() {
    if (!websocket_ || tunnel_held_) {
        return true;
    }
    const std::size_t cap = config::tunnel_cap(cfg_->origin);
    if (cap != 0 && state_->tunnels >= cap) {
        return false;
    }
    ++state_->tunnels;
    tunnel_held_ = true;
    return true;
}

// A body buffer past one relay piece counts in the worker's limits.request_buffer_budget while
// the exchange lasts; past the budget a body gets a relay piece only, and streams.
template <class Stream>
std::size_t http_session<Stream>::body_buffer_room(std::size_t want) {
    if (want <= std::max(piece_capacity_, piece_size)) {
        return want;  // no more than what is held already
    }
    const std::size_t extra = want - piece_size - budget_held_;
    if (state_->buffered_bodies + extra > cfg_->limits.request_buffer_budget) {
        return std::max(piece_capacity_, piece_size);
    }
    state_->buffered_bodies += extra;
    budget_held_ += extra;
    return want;
}

template <class Stream>
void http_session<Stream>::free_body_buffer() {
    if (budget_held_ == 0) {
        return;
    }
    state_->buffered_bodies -= budget_held_;
    budget_held_ = 0;
    piece_.reset();
    piece_capacity_ = 0;
}

// ---- responses from memory and closing ------------------------------------------------------

template <class Stream>
void http_session<Stream>::send_response(unsigned status, const header_list& headers,
                                         std::string body,
                                         std::shared_ptr<const std::string> shared_body,
                                         bool close) {
    // The body is either our own text or a page the render cache shares with us (no copy);
    // either way it stays alive in a member until the write completes.
    memory_body_ = std::move(body);
    memory_shared_ = std::move(shared_body);
    const std::string& text = memory_shared_ ? *memory_shared_ : memory_body_;
    const bool head = parser_ && parser_->get().method() == http::verb::head;
    close = close || draining_ || !parser_ || !parser_->is_header_done() || !parser_->keep_alive();
    status_ = status;
    write_local_head(to_client_.head(false), parser_ ? parser_->get().version() : 11, status,
                     headers, text.size(), !close);
    to_client_.queue(text.data(), head ? 0 : text.size(), true);
    bytes_sent_ = head ? 0 : text.size();
    // A queue page goes out as a proxied response does: inline while the socket takes it.
    write_client(beast::bind_front_handler(&http_session::on_write_memory_response, self(), close));
}

template <class Stream>
void http_session<Stream>::send_error(unsigned status, std::string_view text, bool close,
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
void http_session<Stream>::on_write_memory_response(bool close, error_code ec, std::size_t) {
    if (ec) {
        fail(ec, "write");
        return do_close();
    }
    log_request();
    memory_shared_.reset();
    if (close) {
        return do_close();
    }
    next_request();
}

template <class Stream>
void http_session<Stream>::log_request() {
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

template <class Stream>
void http_session<Stream>::do_close() {
    if (closed_) {
        return;
    }
    closed_ = true;
    deadline_timer_.cancel();
    linger_deadline_ = std::chrono::steady_clock::now() + linger_time;
    if constexpr (is_tls) {
        lowest().expires_after(std::chrono::seconds(2));
        stream_.async_shutdown(beast::bind_front_handler(&http_session::on_shutdown, self()));
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
void http_session<Stream>::do_linger() {
    lowest().expires_at(linger_deadline_);
    lowest().async_read_some(asio::buffer(piece(), piece_size),
                             beast::bind_front_handler(&http_session::on_linger, self()));
}

template <class Stream>
void http_session<Stream>::on_linger(error_code ec, std::size_t) {
    if (ec) {
        error_code ignored;
        lowest().socket().close(ignored);
        return;
    }
    do_linger();
}

template <class Stream>
void http_session<Stream>::on_shutdown(error_code ec) {
    fail(ec, "tls shutdown");
    error_code ignored;
    lowest().socket().close(ignored);
}

template class http_session<tcp_stream>;
template class http_session<ssl::stream<tcp_stream>>;

}  // namespace waitroom::gateway

#include "proxy_exchange.hpp"

#include <boost/asio/write.hpp>
#include <boost/beast/core/string.hpp>

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

proxy_exchange::proxy_exchange(exchange_client& client, worker_context& worker)
    : client_(client), worker_(worker), relay_(worker), claim_(worker) {}

void proxy_exchange::on_deadline(std::chrono::steady_clock::time_point now) {
    if (!origin_waiting_ || !origin_) {
        return;
    }
    if (now < origin_deadline_) {
        return client_.arm_timer(origin_deadline_);
    }
    origin_timed_out_ = true;
    error_code ignored;
    origin_->lowest().socket().cancel(ignored);
}

void proxy_exchange::close() {
    if (origin_) {
        origin_->close();
    }
}

void proxy_exchange::release() {
    if (origin_) {
        worker_.pool->release(std::move(origin_), false);
    }
    leave_server();
    claim_.give_back();
    relay_.give_back();
}

void proxy_exchange::leave_server() {
    if (target_) {
        worker_.pool->done(*target_);
        target_.reset();
    }
}

// ---- the request, to the origin -------------------------------------------------------------

void proxy_exchange::start() {
    const auto& r = req();
    const auto& head = *r.head;
    head_ = head.method() == http::verb::head;
    websocket_ = is_websocket_upgrade(head);
    request_has_body_ = r.body;
    retried_ = false;
    failed_over_.reset();
    interim_seen_ = false;
    pending_ = 0;
    leave_server();
    if (!request_has_body_) {
        return do_forward(false);
    }
    // Read the body before touching the origin, all of it up to limits.request_buffer (as nginx
    // buffers requests): a trickled small body then holds no origin connection, a malformed
    // one is refused without the origin seeing anything, and the head and the body (or its
    // first piece) go out together.
    do_read_body();
}

// The origin's request head for the server just chosen (its Host and base path); a retry on the
// same server sends it again.
void proxy_exchange::write_head() {
    const auto& r = req();
    const auto& c = cfg();
    const auto& canonical = *r.canonical;
    const auto& pool = *target_->pool;
    forward_info fi;
    fi.client_ip = r.info->client_ip;
    fi.tls = r.info->tls;
    // HTTP/1.0 without Host: the origin still needs one (HTTP/1.1 is sent).
    fi.origin_host =
        c.origin.host_header == config::host_header_mode::client && canonical.host.valid
            ? canonical.host.authority
            : std::string_view{pool.host_header()};
    fi.base_path = pool.base_path();
    fi.path = canonical.target.form == util::target_form::asterisk ? std::string_view{"*"}
                                                                   : canonical.target.path;
    fi.query = canonical.target.query;
    fi.forwarded_host = canonical.host.authority;
    fi.peer_ip = r.identity->peer_ip();
    fi.pass_client_fields = c.forwarded_headers == config::forwarded_mode::append;
    fi.keep_forwarded = r.identity->peer_trusted() || fi.pass_client_fields;
    fi.drop_fields = r.filter->drop_fields.get();
    write_origin_request(*r.head, to_origin_.head(r.chunked), fi);
}

void proxy_exchange::do_forward(bool fresh) {
    // Idempotent and bodiless: a stale pooled connection is retried, so reuse needs no peek.
    const bool retryable = !request_has_body_ && is_idempotent(req().head->method());
    if (pool_moved()) {
        return origin_moved();
    }
    if (websocket_ && !claim_.take_tunnel(cfg().origin)) {
        return client_.send_error(503, "too many WebSocket tunnels", body_unread(), "5",
                                  origin_error_headers());
    }
    if (!claim_.take_slot(cfg().origin, req().info->client_ip_bytes)) {
        // Not a wait in the pool's queue: that queue would fill with this one client's requests.
        claim_.give_back();  // the tunnel's place, if one was taken
        return client_.send_error(503, "too many origin connections for this client", body_unread(),
                                  "1", origin_error_headers());
    }
    if (!target_) {
        target_ = worker_.pool->pick(failed_over_.get());
        if (!target_) {
            claim_.give_back();
            return client_.send_error(502, "origin unreachable", body_unread(), {},
                                      origin_error_headers());
        }
        write_head();
    }
    if (!fresh) {
        // The common case, a warm idle connection, goes on inline: no handler, no post.
        if (auto c = target_->pool->take_idle(retryable)) {
            return on_origin({}, std::move(c));
        }
    }
    target_->pool->acquire(
        [this, self = owner()](error_code ec, std::shared_ptr<origin_connection> c) {
            on_origin(ec, std::move(c));
        },
        fresh, retryable);
}

// A reload moved this worker's pool to another origin after the request was decided under the
// previous file: it is not sent to an origin whose rooms never saw it. Rare (only requests in
// flight across such a reload); the client retries at once.
bool proxy_exchange::pool_moved() const {
    // The usual case costs one pointer compare: the pool follows the worker's runtime, and the
    // request was decided under that same one. Only across a reload are the origins compared.
    return req().runtime != worker_.runtime.get() && !worker_.pool->serves(cfg().origin);
}

void proxy_exchange::origin_moved() {
    client_.send_error(503, "the origin changed with a reload", body_unread(), "1",
                       origin_error_headers());
}

void proxy_exchange::on_origin(error_code ec, std::shared_ptr<origin_connection> c) {
    if (client_.gone()) {
        if (c) {
            worker_.pool->release(std::move(c), false);
        }
        leave_server();
        return claim_.give_back();
    }
    if (ec) {
        claim_.give_back();
    }
    if (ec == origin_pool::busy()) {
        leave_server();
        // Every origin connection stayed in use (not an origin error): try again shortly.
        const auto wait = std::chrono::ceil<std::chrono::seconds>(cfg().origin.pool_wait_timeout);
        return client_.send_error(503, "origin busy", body_unread(),
                                  std::to_string(std::max<std::int64_t>(wait.count(), 1)),
                                  origin_error_headers());
    }
    auto* m = worker_.ctx->metrics();
    if (ec) {
        if (m != nullptr) {
            m->origin_errors(origin_error_kind(ec, true)).inc(worker_.index);
        }
        server_failed(server_failure::connect);
        if (may_fail_over()) {
            return fail_over();
        }
        leave_server();
        return client_.send_error(502, "origin unreachable", request_has_body_, {},
                                  origin_error_headers());
    }
    if (pool_moved()) {  // a reload moved the pool while this waited
        worker_.pool->release(std::move(c), false);
        leave_server();
        claim_.give_back();
        return origin_moved();
    }
    if (m != nullptr) {
        (c->requests_served > 0 ? m->origin_reused() : m->origin_opened()).inc(worker_.index);
    }
    origin_ = std::move(c);
    sent_at_ = std::chrono::steady_clock::now();
    // The head (again, on a retry) with the body's first piece, or the whole bodiless request.
    to_origin_.resend_head();
    if (request_has_body_) {
        to_origin_.queue(relay_.get(), pending_, client_.body_done());
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
void proxy_exchange::write_origin() {
    if (!origin_->is_tls()) {
        error_code ec;
        if (write_now(origin_->lowest().socket(), to_origin_, ec)) {
            return on_origin_write_body(ec, 0);
        }
    }
    origin_->lowest().expires_after(request_has_body_ ? cfg().limits.body_timeout
                                                      : cfg().origin.timeout);
    origin_->visit([&](auto& os) {
        asio::async_write(os, to_origin_.buffers(),
                          [this, self = owner()](error_code ec, std::size_t n) {
                              to_origin_.sent();
                              on_origin_write_body(ec, n);
                          });
    });
}

// Reads the next piece of the request body: before the origin connection is taken, as much as
// limits.request_buffer holds, all of it within one body_timeout; while an origin connection is
// held, a piece of the same size with no pause longer than body_timeout and, over the whole
// stream, no slower than limits.body_min_rate. The whole body within limits.body_deadline of
// its head.
void proxy_exchange::do_read_body() {
    const auto& limits = cfg().limits;
    body_room_ = std::max(limits.request_buffer, piece_size);
    if (const auto left = client_.body_left(); left && *left < body_room_) {
        // A known small rest needs no bigger buffer than that (or than a relay piece).
        body_room_ = std::max(static_cast<std::size_t>(*left), piece_size);
    }
    body_room_ = relay_.room_for(body_room_, limits.request_buffer_budget);
    const auto now = std::chrono::steady_clock::now();
    auto deadline = now + limits.body_timeout;
    if (origin_ && limits.body_min_rate > 0) {
        deadline = std::min(
            deadline, stream_start_ + rate_time(streamed_ + body_room_, limits.body_min_rate));
    }
    if (limits.body_deadline.count() > 0) {
        deadline = std::min(deadline, req().started + limits.body_deadline);
    }
    client_.read_body(relay_.get(body_room_), body_room_, deadline);
}

void proxy_exchange::on_read_body(error_code ec, std::size_t bytes) {
    if (ec == beast::error::timeout || ec == http::error::body_limit || is_parse_error(ec)) {
        return body_refused(ec);
    }
    if (ec) {
        fail(ec, "read body");
        if (origin_) {
            release_origin(false);
        }
        return client_.abort();
    }
    pending_ = bytes;
    if (!origin_) {
        return do_forward(false);  // all of a small body, or a large one's first piece
    }
    streamed_ += pending_;
    to_origin_.queue(pending_ > 0 ? relay_.get() : nullptr, pending_, client_.body_done());
    write_origin();
}

// The body is too slow, too large or malformed: the gateway answers.
void proxy_exchange::body_refused(error_code ec) {
    // The origin saw at most part of this request: its connection is not reused.
    if (origin_) {
        release_origin(false);
    }
    // The room may have admitted (and counted) this visitor already: the answer carries
    // the cookie, as an origin error's does, so the place is not held by nobody.
    if (ec == beast::error::timeout) {
        return client_.send_error(408, "request body too slow", true, {}, origin_error_headers());
    }
    if (ec == http::error::body_limit) {
        return client_.send_error(413, "request body too large", true, {}, origin_error_headers());
    }
    if (ec == http::error::header_limit) {
        return client_.send_error(400, "request trailers too large", true, {},
                                  origin_error_headers());
    }
    if (ec == http::error::bad_chunk_extension) {
        return client_.send_error(400, "chunk line too long or malformed", true, {},
                                  origin_error_headers());
    }
    client_.send_error(400, "malformed request body", true, {}, origin_error_headers());
}

void proxy_exchange::on_origin_write_body(error_code ec, std::size_t) {
    if (ec) {
        // A bodiless request may be retried (a stale pooled connection); a body is gone.
        return origin_failed(ec, !request_has_body_);
    }
    if (!request_has_body_ || client_.body_done()) {
        return do_read_response_header();
    }
    do_read_body();
}

void proxy_exchange::origin_failed(error_code ec, bool before_response) {
    fail(ec, "origin");
    const bool from_pool = origin_ && origin_->requests_served > 0;
    if (ec == beast::error::timeout && before_response) {
        server_failed(server_failure::timeout);
    }
    release_origin(false);
    // A pooled connection the origin had already closed fails before any response byte; an
    // idempotent request without a body is safe to send again, once, on a new connection.
    if (before_response && from_pool && !retried_ && !request_has_body_ &&
        is_idempotent(req().head->method()) && ec != beast::error::timeout) {
        retried_ = true;
        return do_forward(true);
    }
    if (auto* m = worker_.ctx->metrics()) {
        m->origin_errors(origin_error_kind(ec, false)).inc(worker_.index);
    }
    if (ec == beast::error::timeout && before_response) {
        return client_.send_error(504, "origin timed out", body_unread(), {},
                                  origin_error_headers());
    }
    client_.send_error(502, "origin connection failed", body_unread(), {}, origin_error_headers());
}

header_list proxy_exchange::origin_error_headers() {
    header_list extra;
    worker_.ctx->filter().on_origin_error(extra, req().filter->context);
    return extra;
}

void proxy_exchange::release_origin(bool reusable) {
    worker_.pool->release(std::move(origin_), reusable);
    leave_server();
    claim_.give_back();
}

// ---- the server's health ----------------------------------------------------------------------

void proxy_exchange::server_failed(server_failure f) {
    const auto& member = *target_->member;
    if (member.metrics != nullptr) {
        if (f != server_failure::server_error) {
            member.metrics->requests.inc(worker_.index);  // an answer was counted with its time
        }
        member.metrics->errors.inc(worker_.index);
    }
    if (target_->group->record_failure(member, f, health_clock::now())) {
        spdlog::warn(
            "gateway: origin server {} ejected after {} failures in a row (or one more "
            "after it came back)",
            member.server.url, target_->group->rules().eject_after);
        if (member.metrics != nullptr) {
            member.metrics->ejections.inc(worker_.index);
        }
    }
}

// The response head came: the server's answer time, and a 5xx as a failure of its health.
void proxy_exchange::server_answered(unsigned status) {
    const auto& member = *target_->member;
    if (member.metrics != nullptr) {
        const auto took = std::chrono::steady_clock::now() - sent_at_;
        member.metrics->requests.inc(worker_.index);
        member.metrics->response.observe(worker_.index,
                                         std::chrono::duration<double>(took).count());
    }
    if (status >= 500) {
        return server_failed(server_failure::server_error);
    }
    target_->group->record_success(member);
}

// Nothing was sent to a server that could not be reached: an idempotent request without a body
// (the requests today's retry rules resend) goes once to another server.
bool proxy_exchange::may_fail_over() const {
    return !failed_over_ && !request_has_body_ && is_idempotent(req().head->method()) &&
           worker_.pool->size() > 1;
}

void proxy_exchange::fail_over() {
    failed_over_ = std::move(target_);
    worker_.pool->done(*failed_over_);
    do_forward(false);
}

}  // namespace waitroom::gateway

#include "h2_stream.hpp"

#include <boost/asio/post.hpp>
#include <boost/beast/core/string.hpp>

#include <algorithm>
#include <cstring>

#include "forward_headers.hpp"
#include "h2_codec.hpp"
#include "origin_pool.hpp"
#include "read_steps.hpp"
#include "request_intake.hpp"

namespace waitroom::gateway {

namespace {

// "Name: value\r\n" lines (filter_result::fields) as pairs over the same text.
void pair_lines(std::string_view lines,
                std::vector<std::pair<std::string_view, std::string_view>>& out) {
    while (!lines.empty()) {
        const auto eol = lines.find("\r\n");
        const auto line = lines.substr(0, eol);
        lines.remove_prefix(eol == std::string_view::npos ? lines.size() : eol + 2);
        const auto colon = line.find(':');
        if (colon == std::string_view::npos) {
            continue;
        }
        out.emplace_back(line.substr(0, colon), trim_ows(line.substr(colon + 1)));
    }
}

}  // namespace

h2_stream::h2_stream(std::shared_ptr<worker_context> worker, std::shared_ptr<h2_link> link,
                     std::int32_t id, request_head&& head, std::optional<std::uint64_t> length,
                     bool end_stream, const client_identity& identity, const request_info& info)
    : worker_(std::move(worker)),
      link_(std::move(link)),
      // Taken with the stream, not at start(): DATA read with the HEADERS reaches on_data first.
      runtime_(worker_->current()),
      id_(id),
      head_(std::move(head)),
      identity_(identity),
      info_(info),
      length_(length),
      body_end_(end_stream),
      timer_(worker_->ioc),
      exchange_(*this, *worker_) {}

h2_stream::~h2_stream() {
    exchange_.release();
}

// ---- the request --------------------------------------------------------------------------

void h2_stream::start() {
    if (gone_) {
        return;
    }
    answer_.started = std::chrono::steady_clock::now();
    info_.runtime = runtime_;
    if (!body_end_ && !length_) {
        // A body of unknown length reaches the HTTP/1.1 origin chunked.
        head_.insert(http::field::transfer_encoding, "chunked");
    }
    const auto refusal = take_in(head_, true, canonical_, target_buffers_, info_.client_ip);
    if (refusal.status != 0) {
        return send_error(refusal.status, refusal.text, true);
    }
    info_.request = &canonical_;
    identity_.resolve(head_, cfg(), runtime_->generation, true, info_);
    worker_->ctx->filter().on_request(head_, info_, [self = shared_from_this()](filter_result r) {
        self->on_filter(std::move(r));
    });
}

void h2_stream::on_filter(filter_result r) {
    if (gone_) {
        return;
    }
    filter_ = std::move(r);
    if (filter_.what == filter_result::action::respond) {
        field_pairs fields;
        pair_lines(filter_.fields, fields);
        for (const auto& [name, value] : filter_.headers) {
            fields.emplace_back(name, value);
        }
        shared_body_ = std::move(filter_.shared_body);
        own_body_ = std::move(filter_.body);
        const std::string_view body = shared_body_ ? std::string_view(*shared_body_) : own_body_;
        return answer(filter_.status, std::move(fields), body);
    }
    exchange_request_ = {.head = &head_,
                         .canonical = &canonical_,
                         .info = &info_,
                         .identity = &identity_,
                         .cfg = runtime_->cfg.get(),
                         .runtime = runtime_.get(),
                         .filter = &filter_,
                         .started = answer_.started,
                         .body = !body_done(),
                         .chunked = !length_ && !body_done()};
    continue_pending_ =
        exchange_request_.body && beast::iequals(head_[http::field::expect], "100-continue");
    exchange_.start();
}

std::optional<std::uint64_t> h2_stream::body_left() const {
    if (!length_) {
        return std::nullopt;
    }
    return *length_ - std::min(*length_, delivered_);
}

void h2_stream::on_data(std::span<const char> data, bool end) {
    if (gone_ || memory_answer_) {
        // Nobody reads this body: the client's window opens at once.
        link_->codec().consume(id_, data.size());
        body_end_ = body_end_ || end;
        return;
    }
    arrived_ += data.size();
    const auto limit = cfg().limits.max_body_bytes;
    if (limit > 0 && arrived_ > limit) {
        body_error_ = http::error::body_limit;
    }
    received_.append(data.data(), data.size());
    body_end_ = body_end_ || end;
    if (body_waiting_) {
        asio::post(link_->executor(), [self = shared_from_this()] {
            if (self->body_waiting_) {
                self->fill_body_piece();
            }
        });
    }
}

void h2_stream::read_body(char* into, std::size_t room,
                          std::chrono::steady_clock::time_point deadline) {
    piece_ = into;
    piece_room_ = room;
    piece_filled_ = 0;
    body_deadline_ = deadline;
    if (std::exchange(continue_pending_, false)) {
        // The client waits for this before it sends the body; the origin never sees Expect.
        link_->codec().send_continue(id_);
        link_->flush();
    }
    fill_body_piece();
}

// Moves what has arrived into the exchange's piece; ends the read when the piece is full or the
// body is done, else waits for more DATA until the piece's deadline.
void h2_stream::fill_body_piece() {
    body_waiting_ = false;
    if (body_error_) {
        return body_read(body_error_);
    }
    const std::size_t n = std::min(received_.size(), piece_room_ - piece_filled_);
    if (n > 0) {
        std::memcpy(piece_ + piece_filled_, received_.data(), n);
        received_.erase(0, n);
        piece_filled_ += n;
        delivered_ += n;
        link_->codec().consume(id_, n);
        link_->flush();
    }
    if (piece_filled_ == piece_room_ || body_done()) {
        if (length_ && body_done() && arrived_ != *length_) {
            return body_read(http::error::partial_message);
        }
        return body_read({});
    }
    body_waiting_ = true;
    wait_until(body_deadline_);
}

void h2_stream::body_read(error_code ec) {
    exchange_.on_read_body(ec, ec ? 0 : piece_filled_);
}

// ---- the response -------------------------------------------------------------------------

void h2_stream::send_error(unsigned status, std::string_view text, bool,
                           std::string_view retry_after, header_list extra) {
    error_fields_ = std::move(extra);
    add_error_fields(error_fields_, status, retry_after);
    own_body_ = error_body(status, text);
    shared_body_.reset();
    field_pairs fields;
    for (const auto& [name, value] : error_fields_) {
        fields.emplace_back(name, value);
    }
    answer(status, std::move(fields), own_body_);
}

void h2_stream::answer(unsigned status, field_pairs fields, std::string_view body) {
    if (gone_) {
        return;
    }
    memory_answer_ = true;
    answer_.status = status;
    // Nobody will read what is left of the request body.
    link_->codec().consume(id_, received_.size());
    received_.clear();
    const bool with_body = head_.method() != http::verb::head && !body.empty();
    content_length_ = std::to_string(body.size());
    fields.emplace_back("content-length", content_length_);
    auto& codec = link_->codec();
    codec.respond(id_, status, fields, with_body);
    if (with_body) {
        answer_.bytes_sent = body.size();
        write_waiting_ = true;
        write_deadline_ = std::chrono::steady_clock::now() + cfg().limits.body_timeout;
        wait_until(write_deadline_);
        codec.send_body(id_, {body.data(), body.size()}, true);
    } else {
        answered_ = true;
        log();
    }
    link_->flush();
}

void h2_stream::send_head(const response_head& res, std::optional<std::uint64_t> length,
                          bool bodyless) {
    answer_.status = res.result_int();
    bodyless_ = bodyless;
    field_pairs fields;
    fields.reserve(res.size() + filter_.headers.size());
    for (const auto field : res) {
        if (field.name() == http::field::content_length && !length && !bodyless) {
            continue;
        }
        fields.emplace_back(field.name_string(), field.value());
    }
    for (const auto& [name, value] : filter_.headers) {
        fields.emplace_back(name, value);
    }
    link_->codec().respond(id_, answer_.status, fields, !bodyless);
    relay_wait_since_ = std::chrono::steady_clock::now();
}

void h2_stream::send_body(const char* data, std::size_t size, bool last) {
    if (gone_) {
        return post([self = shared_from_this()] {
            self->exchange_.on_write_response_body(asio::error::operation_aborted);
        });
    }
    if (bodyless_ || (size == 0 && !last)) {
        // Nothing to frame: the head (and END_STREAM, for a bodyless answer) went with respond.
        response_sent_ = bodyless_;
        link_->flush();
        return exchange_.on_write_response_body({});
    }
    last_pending_ = last;
    answer_.bytes_sent += size;
    write_waiting_ = true;
    const auto now = std::chrono::steady_clock::now();
    write_deadline_ = now + cfg().limits.body_timeout;
    if (const auto rate = cfg().limits.response_min_rate; rate > 0) {
        // As for HTTP/1.1: a client whose window stays shut cannot hold the origin connection.
        write_deadline_ =
            std::min(write_deadline_, relay_wait_since_ + rate_time(answer_.bytes_sent, rate));
    }
    wait_until(write_deadline_);
    link_->codec().send_body(id_, {data, size}, last);
    link_->flush();
}

void h2_stream::on_body_sent() {
    write_waiting_ = false;
    response_sent_ = last_pending_;
    if (memory_answer_) {
        answered_ = true;
        return log();
    }
    // Called from within the codec's output: the exchange goes on from a handler of its own.
    post([self = shared_from_this()] { self->exchange_.on_write_response_body({}); });
}

void h2_stream::finished() {
    answered_ = true;
    log();
}

void h2_stream::abort() {
    if (gone_) {
        return;
    }
    gone_ = true;
    link_->codec().reset(id_, h2_error::internal_error);
    link_->flush();
}

void h2_stream::open_tunnel(const response_head&, std::shared_ptr<origin_connection> origin) {
    worker_->pool->release(std::move(origin), false);
    send_error(502, "origin switched protocols", true);
}

void h2_stream::post(std::function<void()> f) {
    asio::post(link_->executor(), std::move(f));
}

// The stream is gone (reset, or finished): what waits on it ends.
void h2_stream::on_closed() {
    if (gone_ && !timer_armed_ && answered_) {
        return;
    }
    gone_ = true;
    timer_armed_ = false;
    timer_.cancel();
    if (!response_sent_) {
        // Reset before its answer: the origin connection in use is cut, so the origin sees no
        // pile of abandoned requests. (A whole answer keeps it for the pool.)
        exchange_.close();
    }
    post([self = shared_from_this()] { self->unwind(); });
}

void h2_stream::unwind() {
    // What arrived and nobody took goes back to the connection's window.
    link_->codec().consume(id_, received_.size());
    received_.clear();
    if (body_waiting_) {
        body_waiting_ = false;
        return body_read(asio::error::operation_aborted);
    }
    if (write_waiting_ && !memory_answer_) {
        write_waiting_ = false;
        return exchange_.on_write_response_body(asio::error::operation_aborted);
    }
}

// ---- the one timer ------------------------------------------------------------------------

void h2_stream::arm_timer(std::chrono::steady_clock::time_point deadline) {
    wait_until(deadline);
}

void h2_stream::wait_until(std::chrono::steady_clock::time_point deadline) {
    if (gone_ || (timer_armed_ && timer_.expiry() <= deadline)) {
        return;
    }
    timer_armed_ = true;
    timer_.expires_at(deadline);
    timer_.async_wait([weak = weak_from_this(), generation = ++timer_generation_](error_code ec) {
        if (auto self = weak.lock(); self && !ec && generation == self->timer_generation_) {
            self->on_timer();
        }
    });
}

void h2_stream::on_timer() {
    timer_armed_ = false;
    const auto now = std::chrono::steady_clock::now();
    if (body_waiting_) {
        if (now < body_deadline_) {
            return wait_until(body_deadline_);
        }
        body_waiting_ = false;
        return body_read(beast::error::timeout);
    }
    if (write_waiting_) {
        if (now < write_deadline_) {
            return wait_until(write_deadline_);
        }
        return write_timed_out();
    }
    exchange_.on_deadline(now);
}

// The client's window stayed shut past the write's deadline: the stream is reset, and the
// exchange lets its origin connection go.
void h2_stream::write_timed_out() {
    write_waiting_ = false;
    gone_ = true;
    link_->codec().reset(id_, h2_error::cancel);
    link_->flush();
    if (!memory_answer_) {
        exchange_.on_write_response_body(beast::error::timeout);
    }
}

void h2_stream::log() {
    record_answer(*worker_, &head_, metrics::http_protocol::http2, info_.client_ip, answer_,
                  filter_);
}

}  // namespace waitroom::gateway

#include "h2_connection.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>

namespace waitroom::gateway {

namespace {

h2_limits limits_of(const config::config& cfg) {
    h2_limits l;
    l.max_concurrent_streams = cfg.limits.http2_max_concurrent_streams;
    l.max_header_bytes = cfg.limits.max_header_bytes;
    return l;
}

}  // namespace

h2_connection::h2_connection(std::shared_ptr<worker_context> state, client_stream&& stream,
                             const client_identity& identity, const request_info& info,
                             beast::flat_buffer&& already_read)
    : state_(std::move(state)),
      stream_(std::move(stream)),
      identity_(identity),
      info_(info),
      already_read_(std::move(already_read)),
      idle_timer_(lowest().get_executor()),
      header_timer_(lowest().get_executor()) {
    state_->session_opened(this);
    if (auto* m = state_->ctx->metrics()) {
        m->client_connections().add(state_->index, 1);
    }
}

h2_connection::~h2_connection() {
    state_->session_closed(this);
    if (auto* m = state_->ctx->metrics()) {
        m->client_connections().sub(state_->index, 1);
    }
}

void h2_connection::run() {
    const auto& cfg = *state_->current()->cfg;
    codec_.emplace(*this, limits_of(cfg), std::chrono::steady_clock::now());
    if (state_->draining) {
        codec_->shutdown();
        closing_ = true;
    }
    if (already_read_.size() > 0) {
        const auto bytes = already_read_.cdata();
        receive(static_cast<const char*>(bytes.data()), bytes.size());
        already_read_.consume(already_read_.size());
    }
    arm_idle();
    flush();
    do_read();
}

void h2_connection::drain() {
    if (closed_ || !codec_) {
        return;
    }
    codec_->shutdown();
    closing_ = true;
    flush();
}

void h2_connection::close() {
    if (closed_) {
        return;
    }
    closed_ = true;
    idle_timer_.cancel();
    header_timer_.cancel();
    stream_.close();
    end_streams();
}

// The streams still open end with the connection: each lets its origin connection go.
void h2_connection::end_streams() {
    auto streams = std::move(streams_);
    streams_.clear();
    for (auto& [id, s] : streams) {
        s->on_closed();
    }
}

// ---- reading ------------------------------------------------------------------------------

void h2_connection::do_read() {
    if (closed_) {
        return;
    }
    if (writing_) {
        read_paused_ = true;  // on_written reads again
        return;
    }
    // idle_timer_ and the codec's bounds govern the waits. A plain (h2c) connection is read as
    // Asio reads: a short read does not mark the socket empty (socket_reader.hpp).
    stream_.read_some<&h2_connection::on_read>(asio::buffer(read_buffer_), socket_reader::kind::any,
                                               shared_from_this());
}

void h2_connection::on_read(error_code ec, std::size_t n) {
    if (ec) {
        if (ec != asio::error::eof && ec != asio::error::operation_aborted) {
            fail(ec, "h2 read");
        }
        return close();
    }
    receive(read_buffer_.data(), n);
    flush();
    do_read();
}

void h2_connection::receive(const char* data, std::size_t n) {
    if (closing_ && codec_->finished()) {
        return;
    }
    if (!codec_->receive({data, n}, std::chrono::steady_clock::now())) {
        closing_ = true;  // a GOAWAY is queued: written, then the connection ends
    }
    count_refusals();
    watch_header_block();
}

// What the codec refused since the last look, into the metrics. Looked at after reading and
// after writing: a stream error's reset closes the stream when it is sent.
void h2_connection::count_refusals() {
    auto* m = state_->ctx->metrics();
    const auto& now = codec_->stats();
    const bool changed = now.goaway_calm != counted_.goaway_calm ||
                         now.malformed != counted_.malformed ||
                         now.resets_by_client != counted_.resets_by_client;
    if (m != nullptr && changed) {
        using metrics::http2_refusal;
        m->http2_refused(http2_refusal::calm)
            .inc(state_->index, now.goaway_calm - counted_.goaway_calm);
        m->http2_refused(http2_refusal::malformed)
            .inc(state_->index, now.malformed - counted_.malformed);
        m->http2_refused(http2_refusal::client_reset)
            .inc(state_->index, now.resets_by_client - counted_.resets_by_client);
    }
    counted_ = now;
}

// ---- writing ------------------------------------------------------------------------------

void h2_connection::flush() {
    if (writing_ || closed_ || !codec_) {
        return;
    }
    const auto out = codec_->output();
    count_refusals();
    if (out.empty()) {
        if ((closing_ && streams_.empty()) || codec_->finished()) {
            finish();
        }
        return;
    }
    writing_ = true;
    // A client that takes nothing of what is written to it is let go after body_timeout.
    lowest().expires_after(state_->current()->cfg->limits.body_timeout);
    asio::async_write(
        stream_, asio::buffer(out.data(), out.size()),
        [self = shared_from_this()](error_code ec, std::size_t n) { self->on_written(ec, n); });
}

void h2_connection::on_written(error_code ec, std::size_t n) {
    writing_ = false;
    if (ec) {
        fail(ec, "h2 write");
        return close();
    }
    codec_->consumed(n);
    flush();
    if (std::exchange(read_paused_, false)) {
        do_read();
    }
}

// Everything is written and nothing more will be: our end of the stream (TLS's close_notify, or
// the FIN), then the socket's close.
void h2_connection::finish() {
    if (closed_) {
        return;
    }
    closed_ = true;
    idle_timer_.cancel();
    header_timer_.cancel();
    // A GOAWAY that ended the session (a bound passed) leaves streams nothing can answer.
    end_streams();
    stream_.async_shutdown(std::chrono::seconds(2),
                           [self = shared_from_this()](error_code) { self->stream_.close(); });
}

// ---- idle ---------------------------------------------------------------------------------

// No stream for keepalive_timeout: a GOAWAY, and the connection ends.
void h2_connection::arm_idle() {
    idle_timer_.expires_after(state_->current()->cfg->limits.keepalive_timeout);
    idle_timer_.async_wait([weak = weak_from_this()](error_code ec) {
        auto self = weak.lock();
        if (ec || !self || self->closed_ || !self->streams_.empty()) {
            return;
        }
        self->codec_->shutdown();
        self->closing_ = true;
        self->flush();
    });
}

// ---- a header block left half sent ---------------------------------------------------------

// nghttp2 reads nothing else on the connection while a header block is under way, so a client
// that stops in its middle holds the connection with no stream to time out: the block is bounded
// by header_timeout from its start. Armed only when a block spans reads.
void h2_connection::watch_header_block() {
    const auto since = codec_->header_block_since();
    if (!since || since == header_watched_) {
        return;
    }
    header_watched_ = since;
    header_timer_.expires_at(*since + state_->current()->cfg->limits.header_timeout);
    header_timer_.async_wait([weak = weak_from_this()](error_code ec) {
        if (auto self = weak.lock()) {
            self->on_header_timer(ec);
        }
    });
}

// Past header_timeout: a GOAWAY (PROTOCOL_ERROR, as nginx answers a client that times out) ends
// the connection and every stream on it.
void h2_connection::on_header_timer(error_code ec) {
    if (ec || closed_) {
        return;  // re-armed for a later block, or the connection is gone
    }
    header_watched_.reset();
    const auto since = codec_->header_block_since();
    if (!since) {
        return;
    }
    if (std::chrono::steady_clock::now() < *since + state_->current()->cfg->limits.header_timeout) {
        return watch_header_block();  // a later block than the one the timer was armed for
    }
    spdlog::debug("gateway: h2 header block from {} timed out", identity_.peer_ip());
    codec_->terminate(h2_error::protocol_error);
    closing_ = true;
    flush();
}

// ---- the codec's events -------------------------------------------------------------------

h2_stream* h2_connection::find(std::int32_t id) {
    const auto it = streams_.find(id);
    return it == streams_.end() ? nullptr : it->second.get();
}

void h2_connection::on_request(const h2_request& r) {
    idle_timer_.cancel();
    auto s =
        std::make_shared<h2_stream>(state_, shared_from_this(), r.stream_id, std::move(*r.head),
                                    r.content_length, r.end_stream, identity_, info_);
    streams_.emplace(r.stream_id, s);
    // Started from a handler of its own: the room's answer may call the codec, which is inside
    // its receive now.
    asio::post(lowest().get_executor(), [s = std::move(s)] { s->start(); });
}

void h2_connection::on_body(std::int32_t stream, std::span<const char> data, bool end) {
    if (auto* s = find(stream)) {
        return s->on_data(data, end);
    }
    codec_->consume(stream, data.size());
}

void h2_connection::on_body_sent(std::int32_t stream) {
    if (auto* s = find(stream)) {
        s->on_body_sent();
    }
}

void h2_connection::on_stream_closed(std::int32_t stream, std::uint32_t) {
    const auto it = streams_.find(stream);
    if (it == streams_.end()) {
        return;
    }
    auto s = std::move(it->second);
    streams_.erase(it);
    s->on_closed();
    if (streams_.empty() && !closed_) {
        arm_idle();
    }
}

}  // namespace waitroom::gateway

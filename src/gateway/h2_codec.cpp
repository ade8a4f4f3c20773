#include "h2_codec.hpp"

#include <nghttp2/nghttp2.h>

#include <boost/beast/http/verb.hpp>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <iterator>

namespace waitroom::gateway {

namespace {

constexpr std::size_t output_chunk = 64 * 1024;  // output() gathers up to this much at once

// Field names and hosts are ASCII: no locale (std::tolower is a call per byte).
char lower_ascii(char c) {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

bool iequal(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return lower_ascii(x) == lower_ascii(y);
           });
}

// Fields HTTP/2 never carries in a response (RFC 9113 §8.2.2).
bool connection_specific(std::string_view name) {
    return iequal(name, "connection") || iequal(name, "keep-alive") ||
           iequal(name, "proxy-connection") || iequal(name, "transfer-encoding") ||
           iequal(name, "upgrade");
}

std::string_view view(const std::uint8_t* p, std::size_t n) {
    return {reinterpret_cast<const char*>(p), n};
}

nghttp2_nv make_nv(std::string_view name, std::string_view value) {
    return {reinterpret_cast<std::uint8_t*>(const_cast<char*>(name.data())),
            reinterpret_cast<std::uint8_t*>(const_cast<char*>(value.data())), name.size(),
            value.size(), NGHTTP2_NV_FLAG_NONE};
}

}  // namespace

// nghttp2's callbacks, each handing over to the codec's member of the same step.
struct h2_callbacks {
    static h2_codec& codec(void* user) { return *static_cast<h2_codec*>(user); }

    static int begin_frame(nghttp2_session*, const nghttp2_frame_hd* hd, void* user) {
        return codec(user).on_frame_begin(hd->type, hd->length, hd->flags);
    }

    static int begin_headers(nghttp2_session*, const nghttp2_frame* frame, void* user) {
        auto& c = codec(user);
        if (frame->hd.type != NGHTTP2_HEADERS) {
            return 0;
        }
        if (frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
            c.streams_.try_emplace(frame->hd.stream_id);
        }
        if (auto* s = c.find(frame->hd.stream_id)) {
            s->block_began = c.now_;  // a head, or trailers
        }
        return 0;
    }

    static int header(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name,
                      std::size_t namelen, const std::uint8_t* value, std::size_t valuelen,
                      std::uint8_t, void* user) {
        return codec(user).on_header(frame->hd.stream_id, view(name, namelen),
                                     view(value, valuelen));
    }

    static int frame_recv(nghttp2_session*, const nghttp2_frame* frame, void* user) {
        auto& c = codec(user);
        const bool end = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
        switch (frame->hd.type) {
            case NGHTTP2_HEADERS:
                return c.on_headers_done(frame->hd.stream_id, end);
            case NGHTTP2_DATA:
                // A padded frame whose payload is all padding carries nothing either.
                if (!end && frame->hd.length > 0 && frame->hd.length == frame->data.padlen &&
                    !c.empty_.take(c.now_)) {
                    c.calm_down();
                    return NGHTTP2_ERR_CALLBACK_FAILURE;
                }
                if (end && c.find(frame->hd.stream_id) != nullptr) {
                    c.handler_.on_body(frame->hd.stream_id, {}, true);
                }
                return 0;
            case NGHTTP2_RST_STREAM:
                if (auto* s = c.find(frame->hd.stream_id)) {
                    s->reset_by_client = true;
                }
                c.count_reset();
                return 0;
            default:
                return 0;
        }
    }

    static int data_chunk(nghttp2_session*, std::uint8_t, std::int32_t id, const std::uint8_t* data,
                          std::size_t len, void* user) {
        auto& c = codec(user);
        auto* s = c.find(id);
        if (s == nullptr || !s->in_body) {
            // No request takes these bytes (refused or gone): the connection's window reopens.
            nghttp2_session_consume(c.session_, id, len);
            return 0;
        }
        s->unconsumed += len;
        c.handler_.on_body(id, {reinterpret_cast<const char*>(data), len}, false);
        return 0;
    }

    static int stream_close(nghttp2_session*, std::int32_t id, std::uint32_t code, void* user) {
        auto& c = codec(user);
        const auto it = c.streams_.find(id);
        if (it == c.streams_.end()) {
            return 0;
        }
        const bool announced = it->second.in_body;
        // Closed with an error nobody sent: nghttp2 reset the stream for the client's stream
        // error, after the gateway took the request (its room, its origin exchange).
        const bool made_to_reset = announced && code != NGHTTP2_NO_ERROR &&
                                   !it->second.reset_by_gateway && !it->second.reset_by_client;
        // Body bytes handed over and never taken: the stream is gone, the connection's window
        // opens for them here (consume() on a gone stream does nothing).
        if (it->second.unconsumed > 0) {
            nghttp2_session_consume_connection(c.session_, it->second.unconsumed);
        }
        c.streams_.erase(it);
        if (made_to_reset) {
            c.count_reset();
        }
        if (announced) {
            c.handler_.on_stream_closed(id, code);
        }
        return 0;
    }

    // A response ended while the client's side of its stream is open (a body it never ends):
    // RST_STREAM NO_ERROR (RFC 9113 §8.1) closes the stream, so it holds no slot, and the
    // connection's idle bound applies again.
    static int frame_send(nghttp2_session* session, const nghttp2_frame* frame, void* user) {
        const bool ends = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0 &&
                          (frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA);
        const auto id = frame->hd.stream_id;
        if (ends && nghttp2_session_get_stream_remote_close(session, id) == 0) {
            codec(user).reset(id, h2_error::no_error);
        }
        return 0;
    }

    static ssize_t read_body(nghttp2_session*, std::int32_t id, std::uint8_t* buf,
                             std::size_t length, std::uint32_t* flags, nghttp2_data_source*,
                             void* user) {
        return codec(user).read_body(id, buf, length, flags);
    }
};

bool h2_codec::bucket::take(std::chrono::steady_clock::time_point now) {
    const double elapsed = std::chrono::duration<double>(now - last).count();
    last = now;
    tokens = std::min(burst, tokens + std::max(elapsed, 0.0) * rate);
    if (tokens < 1) {
        return false;
    }
    tokens -= 1;
    return true;
}

h2_codec::h2_codec(handler& h, const h2_limits& limits, std::chrono::steady_clock::time_point now)
    : handler_(h), limits_(limits), now_(now) {
    const auto fill = [&](bucket& b, double burst, double rate) { b = {burst, burst, rate, now}; };
    fill(resets_, limits.reset_burst, limits.resets_per_second);
    fill(control_, limits.control_burst, limits.control_per_second);
    fill(empty_, limits.empty_burst, limits.empty_per_second);

    nghttp2_session_callbacks* cbs = nullptr;
    nghttp2_session_callbacks_new(&cbs);
    nghttp2_session_callbacks_set_on_begin_frame_callback(cbs, h2_callbacks::begin_frame);
    nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, h2_callbacks::begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(cbs, h2_callbacks::header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, h2_callbacks::frame_recv);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, h2_callbacks::data_chunk);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, h2_callbacks::stream_close);
    nghttp2_session_callbacks_set_on_frame_send_callback(cbs, h2_callbacks::frame_send);
    nghttp2_option* opt = nullptr;
    nghttp2_option_new(&opt);
    nghttp2_option_set_no_auto_window_update(opt, 1);
    nghttp2_option_set_max_outbound_ack(opt, limits.max_outbound_ack);
    nghttp2_option_set_max_settings(opt, 32);
    nghttp2_option_set_max_continuations(opt, limits.max_continuations);
    // nghttp2's own reset bound sits behind the codec's (which answers ENHANCE_YOUR_CALM).
    nghttp2_option_set_stream_reset_rate_limit(opt, 2ull * limits.reset_burst,
                                               2ull * limits.resets_per_second);
    nghttp2_session_server_new2(&session_, cbs, this, opt);
    nghttp2_option_del(opt);
    nghttp2_session_callbacks_del(cbs);

    const nghttp2_settings_entry settings[] = {
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, limits.max_concurrent_streams},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, limits.stream_window},
        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE,
         static_cast<std::uint32_t>(limits.max_header_bytes)},
        {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
    };
    nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, std::size(settings));
    if (limits.connection_window > 65535) {
        nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0,
                                              static_cast<std::int32_t>(limits.connection_window));
    }
}

h2_codec::~h2_codec() {
    nghttp2_session_del(session_);
}

h2_codec::stream_state* h2_codec::find(std::int32_t id) {
    const auto it = streams_.find(id);
    return it == streams_.end() ? nullptr : &it->second;
}

// ---- reading ------------------------------------------------------------------------------

bool h2_codec::receive(std::span<const char> bytes, std::chrono::steady_clock::time_point now) {
    if (failed_) {
        return false;
    }
    now_ = now;
    const auto rv = nghttp2_session_mem_recv(
        session_, reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
    if (rv < 0) {
        // A connection error nghttp2 found (bad preface, a frame out of place): it queued its
        // GOAWAY when it could. Floods of acknowledgements or of CONTINUATION frames are a client
        // to calm down.
        const bool flood = rv == NGHTTP2_ERR_FLOODED || rv == NGHTTP2_ERR_TOO_MANY_CONTINUATIONS;
        if (flood) {
            ++stats_.goaway_calm;
        }
        failed_ = true;
        nghttp2_session_terminate_session(
            session_, flood ? NGHTTP2_ENHANCE_YOUR_CALM : NGHTTP2_PROTOCOL_ERROR);
    }
    // nghttp2 answers most connection errors itself with a GOAWAY and reads nothing more.
    if (failed_ || nghttp2_session_want_read(session_) == 0) {
        failed_ = true;
        close_streams(NGHTTP2_PROTOCOL_ERROR);
        return false;
    }
    return true;
}

// The connection ends: the gateway lets go of every stream it was handed.
void h2_codec::close_streams(std::uint32_t code) {
    auto streams = std::move(streams_);
    streams_.clear();
    for (const auto& [id, s] : streams) {
        if (s.unconsumed > 0) {
            nghttp2_session_consume_connection(session_, s.unconsumed);
        }
        if (s.in_body) {
            handler_.on_stream_closed(id, code);
        }
    }
}

int h2_codec::on_frame_begin(std::uint8_t type, std::size_t length, std::uint8_t flags) {
    if (failed_) {
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    }
    bool ok = true;
    switch (type) {
        case NGHTTP2_SETTINGS:
        case NGHTTP2_PING:
        case NGHTTP2_PRIORITY:
        case NGHTTP2_WINDOW_UPDATE:
            ok = control_.take(now_);
            break;
        case NGHTTP2_DATA:
            ok = length > 0 || (flags & NGHTTP2_FLAG_END_STREAM) != 0 || empty_.take(now_);
            break;
        case NGHTTP2_HEADERS:
        case NGHTTP2_CONTINUATION:
            ok = length > 0 || empty_.take(now_);
            break;
        default:
            // Unknown frame types are ignored by the protocol, not by the bound.
            ok = type <= NGHTTP2_CONTINUATION || control_.take(now_);
            break;
    }
    if (!ok) {
        calm_down();
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    }
    return 0;
}

// A bound passed: GOAWAY ENHANCE_YOUR_CALM, and nothing more is read.
void h2_codec::calm_down() {
    if (failed_) {
        return;
    }
    failed_ = true;
    ++stats_.goaway_calm;
    nghttp2_session_terminate_session(session_, NGHTTP2_ENHANCE_YOUR_CALM);
}

// A stream the client reset, or made the gateway reset: past the bucket, the client calms down.
void h2_codec::count_reset() {
    ++stats_.resets_by_client;
    if (!resets_.take(now_)) {
        calm_down();
    }
}

int h2_codec::on_header(std::int32_t id, std::string_view name, std::string_view value) {
    auto* s = find(id);
    if (s == nullptr || s->bad) {
        return 0;
    }
    s->header_bytes += name.size() + value.size() + 32;
    if (s->header_bytes > limits_.max_header_bytes) {
        // An HPACK bomb or a CONTINUATION flood: the stream goes, and what it decoded with it.
        s->head.clear();
        s->cookie.clear();
        refuse(id, *s, NGHTTP2_REFUSED_STREAM);
        return 0;
    }
    if (s->in_body) {
        return 0;  // trailers: counted, never forwarded
    }
    if (name == ":method") {
        const auto verb = boost::beast::http::string_to_verb(value);
        if (verb == boost::beast::http::verb::unknown) {
            s->head.method_string(value);
        } else {
            s->head.method(verb);
        }
    } else if (name == ":path") {
        s->head.target(value);
        s->has_path = true;
    } else if (name == ":authority") {
        s->authority.assign(value);
        s->has_authority = true;
    } else if (name == ":scheme") {
        if (value != "https" && value != "http") {
            refuse(id, *s, NGHTTP2_PROTOCOL_ERROR);
        }
    } else if (name == "host") {
        s->host.assign(value);
        s->has_host = true;
    } else if (name == "cookie") {
        // RFC 9113 §8.2.3: the crumbs of several fields are one Cookie for HTTP/1.1.
        if (!s->cookie.empty()) {
            s->cookie += "; ";
        }
        s->cookie.append(value);
    } else if (!name.empty() && name.front() != ':') {
        if (name == "content-length") {
            std::uint64_t n = 0;
            const auto* end = value.data() + value.size();
            if (std::from_chars(value.data(), end, n).ptr == end && !value.empty()) {
                s->content_length = n;
            }
        }
        s->head.insert(name, value);
    }
    return 0;
}

// A malformed request: reset, never seen by the gateway.
void h2_codec::refuse(std::int32_t id, stream_state& s, std::uint32_t code) {
    s.bad = true;
    s.reset_by_gateway = true;
    ++stats_.malformed;
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, id, code);
}

// A request's head (or its trailers) is complete: checked, translated, handed over.
int h2_codec::on_headers_done(std::int32_t id, bool end_stream) {
    auto* s = find(id);
    if (s == nullptr) {
        return 0;
    }
    s->block_began.reset();
    if (s->in_body) {
        if (end_stream) {
            handler_.on_body(id, {}, true);  // trailers end the body
        }
        return 0;
    }
    if (s->bad) {
        return 0;  // reset already
    }
    const bool hosts_disagree = s->has_authority && s->has_host && !iequal(s->authority, s->host);
    const bool no_host = !s->has_authority && !s->has_host;
    // RFC 9113 §8.3.1: no userinfo in the authority (it would name another host to some readers).
    const bool userinfo =
        s->authority.find('@') != std::string::npos || s->host.find('@') != std::string::npos;
    const bool connect = s->head.method() == boost::beast::http::verb::connect;
    if (hosts_disagree || no_host || userinfo || (!s->has_path && !connect)) {
        refuse(id, *s, NGHTTP2_PROTOCOL_ERROR);
        return 0;
    }
    const std::string& host = s->has_authority ? s->authority : s->host;
    if (connect && !s->has_path) {
        s->head.target(host);  // RFC 9113 §8.5: the authority-form of HTTP/1.1
    }
    s->head.version(11);
    s->head.insert(boost::beast::http::field::host, host);
    if (!s->cookie.empty()) {
        s->head.insert(boost::beast::http::field::cookie, s->cookie);
        s->cookie = {};
    }
    s->in_body = true;
    h2_request r;
    r.stream_id = id;
    r.head = &s->head;
    r.content_length = s->content_length;
    r.end_stream = end_stream;
    handler_.on_request(r);
    return 0;
}

void h2_codec::consume(std::int32_t stream, std::size_t n) {
    // Never more than was handed over: the windows cannot open past what we hold.
    auto* s = find(stream);
    n = s == nullptr ? 0 : std::min(n, s->unconsumed);
    if (n > 0) {
        s->unconsumed -= n;
        nghttp2_session_consume(session_, stream, n);
    }
}

// ---- writing ------------------------------------------------------------------------------

std::span<const char> h2_codec::output() {
    if (out_taken_ < out_.size()) {
        return {out_.data() + out_taken_, out_.size() - out_taken_};
    }
    out_.clear();
    out_taken_ = 0;
    while (out_.size() < output_chunk) {
        const std::uint8_t* data = nullptr;
        const auto n = nghttp2_session_mem_send(session_, &data);
        if (n <= 0) {
            break;
        }
        out_.append(reinterpret_cast<const char*>(data), static_cast<std::size_t>(n));
    }
    return {out_.data(), out_.size()};
}

void h2_codec::consumed(std::size_t n) {
    out_taken_ = std::min(out_.size(), out_taken_ + n);
}

bool h2_codec::finished() const {
    return out_taken_ >= out_.size() && nghttp2_session_want_read(session_) == 0 &&
           nghttp2_session_want_write(session_) == 0;
}

void h2_codec::respond(std::int32_t stream, unsigned status,
                       std::span<const std::pair<std::string_view, std::string_view>> fields,
                       bool body) {
    if (find(stream) == nullptr) {
        return;
    }
    // The lower-cased names go into one buffer, sized first so that no view into it moves; the
    // buffers are the codec's, kept between responses (nghttp2 copies the fields on submit).
    std::size_t names_size = 0;
    for (const auto& field : fields) {
        names_size += field.first.size();
    }
    names_.clear();
    names_.reserve(names_size);
    nva_.clear();
    char code[4];
    const auto code_end = std::to_chars(code, code + sizeof(code), status % 1000).ptr;
    nva_.push_back(make_nv(":status", {code, static_cast<std::size_t>(code_end - code)}));
    for (const auto& [name, value] : fields) {
        if (connection_specific(name) || name.empty()) {
            continue;
        }
        const std::size_t at = names_.size();
        std::transform(name.begin(), name.end(), std::back_inserter(names_), lower_ascii);
        nva_.push_back(make_nv({names_.data() + at, name.size()}, value));
    }
    nghttp2_data_provider provider{};
    provider.read_callback = h2_callbacks::read_body;
    nghttp2_submit_response(session_, stream, nva_.data(), nva_.size(), body ? &provider : nullptr);
}

void h2_codec::send_continue(std::int32_t stream) {
    if (find(stream) == nullptr) {
        return;
    }
    const nghttp2_nv status = make_nv(":status", "100");
    nghttp2_submit_headers(session_, NGHTTP2_FLAG_NONE, stream, nullptr, &status, 1, nullptr);
}

void h2_codec::send_body(std::int32_t stream, std::span<const char> data, bool last) {
    auto* s = find(stream);
    if (s == nullptr) {
        return;
    }
    s->piece = data.data();
    s->piece_size = data.size();
    s->piece_taken = 0;
    s->piece_last = last;
    s->piece_pending = true;
    if (std::exchange(s->deferred, false)) {
        nghttp2_session_resume_data(session_, stream);
    }
}

long h2_codec::read_body(std::int32_t id, std::uint8_t* buf, std::size_t length,
                         std::uint32_t* flags) {
    auto* s = find(id);
    if (s == nullptr) {
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }
    if (!s->piece_pending) {
        s->deferred = true;
        return NGHTTP2_ERR_DEFERRED;
    }
    const std::size_t n = std::min(length, s->piece_size - s->piece_taken);
    if (n > 0) {
        std::memcpy(buf, s->piece + s->piece_taken, n);
    }
    s->piece_taken += n;
    if (s->piece_taken == s->piece_size) {
        s->piece_pending = false;
        if (s->piece_last) {
            *flags |= NGHTTP2_DATA_FLAG_EOF;
        }
        handler_.on_body_sent(id);
    }
    return static_cast<long>(n);
}

void h2_codec::reset(std::int32_t stream, h2_error code) {
    if (auto* s = find(stream)) {
        s->reset_by_gateway = true;
        nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, stream,
                                  static_cast<std::uint32_t>(code));
    }
}

void h2_codec::shutdown() {
    if (shutting_down_ || failed_) {
        return;
    }
    shutting_down_ = true;
    nghttp2_submit_goaway(session_, NGHTTP2_FLAG_NONE,
                          nghttp2_session_get_last_proc_stream_id(session_), NGHTTP2_NO_ERROR,
                          nullptr, 0);
}

void h2_codec::terminate(h2_error code) {
    if (failed_) {
        return;
    }
    failed_ = true;
    nghttp2_session_terminate_session(session_, static_cast<std::uint32_t>(code));
    close_streams(static_cast<std::uint32_t>(code));
}

std::optional<std::chrono::steady_clock::time_point> h2_codec::header_block_since() const {
    std::optional<std::chrono::steady_clock::time_point> oldest;
    for (const auto& [id, s] : streams_) {
        if (s.block_began && (!oldest || *s.block_began < *oldest)) {
            oldest = s.block_began;
        }
    }
    return oldest;
}

}  // namespace waitroom::gateway

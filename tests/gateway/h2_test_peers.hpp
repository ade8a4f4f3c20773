#pragma once
// Test peers of the HTTP/2 codec: a handler that records every event, a real nghttp2 client
// session wired to the codec in memory, and a raw peer that writes hand-built frames (a 9-byte
// header and a payload, HPACK from nghttp2's deflater) for what no well-behaved client sends.

#include <nghttp2/nghttp2.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "h2_codec.hpp"

namespace waitroom::gateway::h2_test {

using fields = std::vector<std::pair<std::string, std::string>>;
using clock = std::chrono::steady_clock;

// Every event of the codec, kept by value.
struct recorder : h2_codec::handler {
    struct request {
        std::int32_t id;
        std::string method, target;
        fields head;
        std::optional<std::uint64_t> content_length;
        bool end_stream;
    };
    std::vector<request> requests;
    std::map<std::int32_t, std::string> bodies;
    std::map<std::int32_t, bool> ended;
    std::vector<std::int32_t> body_sent;
    std::vector<std::pair<std::int32_t, std::uint32_t>> closed;
    std::function<void(const h2_request&)> when_request;
    std::function<void(std::int32_t)> when_body_sent;

    void on_request(const h2_request& r) override {
        request copy{r.stream_id,
                     std::string(r.head->method_string()),
                     std::string(r.head->target()),
                     {},
                     r.content_length,
                     r.end_stream};
        for (const auto& f : *r.head) {
            copy.head.emplace_back(f.name_string(), f.value());
        }
        requests.push_back(std::move(copy));
        if (when_request) {
            when_request(r);
        }
    }
    void on_body(std::int32_t stream, std::span<const char> data, bool end) override {
        bodies[stream].append(data.data(), data.size());
        if (end) {
            ended[stream] = true;
        }
    }
    void on_body_sent(std::int32_t stream) override {
        body_sent.push_back(stream);
        if (when_body_sent) {
            when_body_sent(stream);
        }
    }
    void on_stream_closed(std::int32_t stream, std::uint32_t code) override {
        closed.emplace_back(stream, code);
    }
    const request* find(std::int32_t id) const {
        for (const auto& r : requests) {
            if (r.id == id) {
                return &r;
            }
        }
        return nullptr;
    }
};

inline nghttp2_nv nv_of(const std::pair<std::string, std::string>& f) {
    return {reinterpret_cast<std::uint8_t*>(const_cast<char*>(f.first.data())),
            reinterpret_cast<std::uint8_t*>(const_cast<char*>(f.second.data())), f.first.size(),
            f.second.size(), NGHTTP2_NV_FLAG_NONE};
}

// A real nghttp2 client session talking to the codec through memory.
class client {
  public:
    struct response {
        fields head;
        std::string body;
        std::optional<std::uint32_t> closed;  // the stream's close code
    };

    client(h2_codec& codec, std::vector<nghttp2_settings_entry> settings = {}) : codec_(codec) {
        nghttp2_session_callbacks* cb = nullptr;
        nghttp2_session_callbacks_new(&cb);
        nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
        nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_close);
        nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame);
        nghttp2_session_client_new(&session_, cb, this);
        nghttp2_session_callbacks_del(cb);
        nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings.data(), settings.size());
    }
    ~client() { nghttp2_session_del(session_); }
    client(const client&) = delete;
    client& operator=(const client&) = delete;

    // Submits a request; `body` (kept here) is sent as DATA when given.
    std::int32_t request(const fields& head, std::optional<std::string> body = std::nullopt) {
        std::vector<nghttp2_nv> nv;
        for (const auto& f : head) {
            nv.push_back(nv_of(f));
        }
        auto source = std::make_unique<body_source>();
        nghttp2_data_provider provider{};
        provider.read_callback = read_body;
        provider.source.ptr = source.get();
        if (body) {
            source->text = std::move(*body);
        }
        const std::int32_t id = nghttp2_submit_request(session_, nullptr, nv.data(), nv.size(),
                                                       body ? &provider : nullptr, nullptr);
        sources_.push_back(std::move(source));
        return id;
    }
    static fields get(std::string path = "/") {
        return {{":method", "GET"},
                {":scheme", "https"},
                {":authority", "shop.example.com"},
                {":path", std::move(path)}};
    }

    // Moves bytes both ways until neither side has anything to say.
    void pump() {
        for (int round = 0; round < 10000; ++round) {
            bool moved = false;
            const std::uint8_t* data = nullptr;
            ssize_t n = 0;
            while ((n = nghttp2_session_mem_send(session_, &data)) > 0) {
                alive =
                    codec_.receive(
                        {reinterpret_cast<const char*>(data), static_cast<std::size_t>(n)}, now) &&
                    alive;
                moved = true;
            }
            auto out = codec_.output();
            if (!out.empty()) {
                nghttp2_session_mem_recv(
                    session_, reinterpret_cast<const std::uint8_t*>(out.data()), out.size());
                codec_.consumed(out.size());
                moved = true;
            }
            if (!moved) {
                return;
            }
        }
    }

    nghttp2_session* session() { return session_; }

    std::map<std::int32_t, response> responses;
    std::optional<std::uint32_t> goaway_code;
    std::int32_t goaway_last_stream = -1;
    bool alive = true;  // every receive() said the connection goes on
    clock::time_point now = clock::time_point{} + std::chrono::hours(1);

  private:
    struct body_source {
        std::string text;
        std::size_t at = 0;
    };
    static client& self(void* ud) { return *static_cast<client*>(ud); }
    static int on_header(nghttp2_session*, const nghttp2_frame* f, const std::uint8_t* name,
                         std::size_t namelen, const std::uint8_t* value, std::size_t valuelen,
                         std::uint8_t, void* ud) {
        self(ud).responses[f->hd.stream_id].head.emplace_back(
            std::string(reinterpret_cast<const char*>(name), namelen),
            std::string(reinterpret_cast<const char*>(value), valuelen));
        return 0;
    }
    static int on_data(nghttp2_session*, std::uint8_t, std::int32_t id, const std::uint8_t* data,
                       std::size_t len, void* ud) {
        self(ud).responses[id].body.append(reinterpret_cast<const char*>(data), len);
        return 0;
    }
    static int on_close(nghttp2_session*, std::int32_t id, std::uint32_t code, void* ud) {
        self(ud).responses[id].closed = code;
        return 0;
    }
    static int on_frame(nghttp2_session*, const nghttp2_frame* f, void* ud) {
        if (f->hd.type == NGHTTP2_GOAWAY) {
            self(ud).goaway_code = f->goaway.error_code;
            self(ud).goaway_last_stream = f->goaway.last_stream_id;
        }
        return 0;
    }
    static ssize_t read_body(nghttp2_session*, std::int32_t, std::uint8_t* buf, std::size_t length,
                             std::uint32_t* flags, nghttp2_data_source* source, void*) {
        auto& s = *static_cast<body_source*>(source->ptr);
        const std::size_t n = std::min(length, s.text.size() - s.at);
        std::copy_n(s.text.data() + s.at, n, buf);
        s.at += n;
        if (s.at == s.text.size()) {
            *flags |= NGHTTP2_DATA_FLAG_EOF;
        }
        return static_cast<ssize_t>(n);
    }

    h2_codec& codec_;
    nghttp2_session* session_ = nullptr;
    std::vector<std::unique_ptr<body_source>> sources_;
};

// One frame: the 9-byte header (length, type, flags, stream id) and the payload.
inline std::string frame(std::uint8_t type, std::uint8_t flags, std::int32_t stream,
                         std::string_view payload) {
    std::string out;
    const auto len = static_cast<std::uint32_t>(payload.size());
    out.push_back(static_cast<char>(len >> 16));
    out.push_back(static_cast<char>(len >> 8));
    out.push_back(static_cast<char>(len));
    out.push_back(static_cast<char>(type));
    out.push_back(static_cast<char>(flags));
    const auto id = static_cast<std::uint32_t>(stream);
    for (int shift = 24; shift >= 0; shift -= 8) {
        out.push_back(static_cast<char>(id >> shift));
    }
    out.append(payload);
    return out;
}

inline std::string u32(std::uint32_t v) {
    return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
            static_cast<char>(v)};
}

inline constexpr std::string_view preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

// A peer that writes frames by hand and reads the codec's frames back.
class raw_peer {
  public:
    struct seen {
        std::uint8_t type, flags;
        std::int32_t stream;
        std::string payload;
    };

    explicit raw_peer(const h2_limits& limits = {}, std::string_view settings = {})
        : codec(events, limits, now) {
        nghttp2_hd_deflate_new(&deflater_, 4096);
        nghttp2_hd_inflate_new(&inflater_);
        alive = send(std::string(preface) + frame(NGHTTP2_SETTINGS, 0, 0, settings));
    }
    ~raw_peer() {
        nghttp2_hd_deflate_del(deflater_);
        nghttp2_hd_inflate_del(inflater_);
    }
    raw_peer(const raw_peer&) = delete;
    raw_peer& operator=(const raw_peer&) = delete;

    bool send(std::string_view bytes) {
        alive = codec.receive({bytes.data(), bytes.size()}, now) && alive;
        drain();
        return alive;
    }
    // An HPACK block of `head` from the peer's deflater (its table stays in step).
    std::string block(const fields& head) {
        std::vector<nghttp2_nv> nv;
        for (const auto& f : head) {
            nv.push_back(nv_of(f));
        }
        std::string out(nghttp2_hd_deflate_bound(deflater_, nv.data(), nv.size()), '\0');
        const auto n = nghttp2_hd_deflate_hd(deflater_, reinterpret_cast<std::uint8_t*>(out.data()),
                                             out.size(), nv.data(), nv.size());
        out.resize(n < 0 ? 0 : static_cast<std::size_t>(n));
        return out;
    }
    std::string headers(std::int32_t id, const fields& head, bool end_stream = true) {
        return frame(NGHTTP2_HEADERS,
                     NGHTTP2_FLAG_END_HEADERS | (end_stream ? NGHTTP2_FLAG_END_STREAM : 0), id,
                     block(head));
    }
    static std::string data(std::int32_t id, std::string_view body, bool end_stream) {
        return frame(NGHTTP2_DATA, end_stream ? NGHTTP2_FLAG_END_STREAM : 0, id, body);
    }
    static std::string rst(std::int32_t id, std::uint32_t code) {
        return frame(NGHTTP2_RST_STREAM, 0, id, u32(code));
    }
    static fields get(std::string path = "/") { return client::get(std::move(path)); }

    // Reads all the codec has to say, when `read` (a peer that never reads leaves it there).
    void drain() {
        if (!reading) {
            return;
        }
        for (auto out = codec.output(); !out.empty(); out = codec.output()) {
            pending_.append(out.data(), out.size());
            codec.consumed(out.size());
        }
        parse();
    }

    std::optional<std::uint32_t> rst_code(std::int32_t id) const {
        for (const auto& f : frames) {
            if (f.type == NGHTTP2_RST_STREAM && f.stream == id) {
                return code_of(f.payload, 0);
            }
        }
        return std::nullopt;
    }
    std::optional<std::uint32_t> goaway_code() const {
        for (const auto& f : frames) {
            if (f.type == NGHTTP2_GOAWAY) {
                return code_of(f.payload, 4);
            }
        }
        return std::nullopt;
    }
    std::optional<std::string> status(std::int32_t id) const {
        auto it = statuses_.find(id);
        return it == statuses_.end() ? std::nullopt : std::optional(it->second);
    }
    std::size_t count(std::uint8_t type) const {
        std::size_t n = 0;
        for (const auto& f : frames) {
            n += f.type == type ? 1 : 0;
        }
        return n;
    }

    clock::time_point now = clock::time_point{} + std::chrono::hours(1);
    recorder events;
    h2_codec codec;
    bool alive = true;
    bool reading = true;
    std::vector<seen> frames;

  private:
    static std::uint32_t code_of(const std::string& p, std::size_t at) {
        if (p.size() < at + 4) {
            return ~0u;
        }
        auto b = [&](std::size_t i) {
            return static_cast<std::uint32_t>(static_cast<unsigned char>(p[at + i]));
        };
        return b(0) << 24 | b(1) << 16 | b(2) << 8 | b(3);
    }
    void parse() {
        while (pending_.size() >= 9) {
            auto byte = [&](std::size_t i) { return static_cast<unsigned char>(pending_[i]); };
            const std::size_t len = byte(0) << 16 | byte(1) << 8 | byte(2);
            if (pending_.size() < 9 + len) {
                return;
            }
            seen f{byte(3), byte(4),
                   static_cast<std::int32_t>((byte(5) & 0x7f) << 24 | byte(6) << 16 | byte(7) << 8 |
                                             byte(8)),
                   pending_.substr(9, len)};
            if (f.type == NGHTTP2_HEADERS) {
                inflate(f);
            }
            frames.push_back(std::move(f));
            pending_.erase(0, 9 + len);
        }
    }
    void inflate(const seen& f) {
        auto* in = reinterpret_cast<const std::uint8_t*>(f.payload.data());
        std::size_t left = f.payload.size();
        for (;;) {
            nghttp2_nv nv;
            int flags = 0;
            const auto n = nghttp2_hd_inflate_hd2(inflater_, &nv, &flags, in, left, 1);
            if (n < 0) {
                return;
            }
            in += n;
            left -= static_cast<std::size_t>(n);
            if ((flags & NGHTTP2_HD_INFLATE_EMIT) != 0 &&
                std::string_view(reinterpret_cast<const char*>(nv.name), nv.namelen) == ":status") {
                statuses_[f.stream] =
                    std::string(reinterpret_cast<const char*>(nv.value), nv.valuelen);
            }
            if ((flags & NGHTTP2_HD_INFLATE_FINAL) != 0) {
                nghttp2_hd_inflate_end_headers(inflater_);
                return;
            }
            if ((flags & NGHTTP2_HD_INFLATE_EMIT) == 0 && left == 0) {
                return;
            }
        }
    }

    nghttp2_hd_deflater* deflater_ = nullptr;
    nghttp2_hd_inflater* inflater_ = nullptr;
    std::string pending_;
    std::map<std::int32_t, std::string> statuses_;
};

}  // namespace waitroom::gateway::h2_test

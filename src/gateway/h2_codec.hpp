#pragma once
// The server side of one HTTP/2 connection (RFC 9113) over nghttp2, sans-io: bytes from the
// client go in (receive), frames to send come out (output), and each request comes out as an
// HTTP/1.1 head (RFC 9113 §8.2-8.3: `:authority` as Host, the `cookie` fields joined) with its
// body, for the gateway's one request path. No socket, no timer: the connection drives it.
//
// Every bound a hostile client could push against lives here, as Envoy's codecs keep theirs:
// concurrent streams (SETTINGS_MAX_CONCURRENT_STREAMS, nghttp2), the decoded header list
// (counted after HPACK decoding, CONTINUATION included, and the CONTINUATION count), streams
// the client resets (rapid reset, CVE-2023-44487), floods of control and empty frames, the
// acknowledgements queued for a client that does not read, and the flow-control windows (the
// client's window for a request body opens only as the gateway takes the bytes).
// nghttp2's own checks of HTTP messaging stay on (pseudo-fields, connection-specific fields,
// `te`, field-name case and characters, values with CR, LF, NUL or edge whitespace,
// content-length against the DATA received); what it leaves is checked here.

#include <nghttp2/nghttp2.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "waitroom/gateway/message_head.hpp"

namespace waitroom::gateway {

// The bounds of one connection.
struct h2_limits {
    std::uint32_t max_concurrent_streams = 128;  // SETTINGS_MAX_CONCURRENT_STREAMS
    // The decoded header list of a request (names + values + 32 per field, RFC 9113 §6.5.2),
    // trailers and CONTINUATION included; past it the stream is reset.
    std::size_t max_header_bytes = 16 * 1024;
    std::uint32_t stream_window = 64 * 1024;    // our receive window per stream
    std::uint32_t connection_window = 1 << 20;  // and for the connection
    // Streams the client resets (RST_STREAM), or makes the gateway reset by a stream error once
    // the gateway has taken them (MadeYouReset, CVE-2025-8671): a burst, then this many a
    // second; past → GOAWAY ENHANCE_YOUR_CALM.
    std::uint32_t reset_burst = 200;
    std::uint32_t resets_per_second = 100;
    // SETTINGS, PING, PRIORITY and WINDOW_UPDATE frames: a burst, then a rate; past → GOAWAY
    // ENHANCE_YOUR_CALM.
    std::uint32_t control_burst = 1000;
    std::uint32_t control_per_second = 200;
    // Frames that carry nothing (empty DATA without END_STREAM, empty HEADERS/CONTINUATION).
    std::uint32_t empty_burst = 100;
    std::uint32_t empty_per_second = 10;
    // CONTINUATION frames after one HEADERS (nghttp2's bound).
    std::size_t max_continuations = 8;
    // Acknowledgements (SETTINGS, PING) queued unsent (nghttp2's bound; past → GOAWAY).
    std::size_t max_outbound_ack = 1000;
};

// A request, read whole up to its body.
struct h2_request {
    std::int32_t stream_id = 0;
    // Method, target (`:path`), version 1.1 and fields, Host (from `:authority`) and one
    // Cookie among them. The handler may move it away: the codec reads it no more.
    request_head* head = nullptr;
    std::optional<std::uint64_t> content_length;  // declared (nghttp2 holds the DATA to it)
    bool end_stream = false;                      // no body follows
};

// HTTP/2 error codes the gateway sends (RFC 9113 §7).
enum class h2_error : std::uint32_t {
    no_error = 0x0,
    protocol_error = 0x1,
    internal_error = 0x2,
    cancel = 0x8,
    enhance_your_calm = 0xb,
};

class h2_codec {
  public:
    // The connection's side: called from within receive() and output().
    class handler {
      public:
        virtual ~handler() = default;
        virtual void on_request(const h2_request& r) = 0;
        // Body bytes (valid during the call only) and whether the body ends here. The client's
        // window opens for them only with consume().
        virtual void on_body(std::int32_t stream, std::span<const char> data, bool end) = 0;
        // All of the piece handed to send_body has gone into frames.
        virtual void on_body_sent(std::int32_t stream) = 0;
        // The stream is closed: finished, or reset by either side (`error_code`, 0 = none).
        virtual void on_stream_closed(std::int32_t stream, std::uint32_t error_code) = 0;
    };

    // Queues the server's SETTINGS.
    h2_codec(handler& h, const h2_limits& limits, std::chrono::steady_clock::time_point now);
    ~h2_codec();
    h2_codec(const h2_codec&) = delete;
    h2_codec& operator=(const h2_codec&) = delete;

    // Bytes read from the client. False: the connection ends (a protocol error or a bound
    // passed: a GOAWAY is queued in the output, to be written before the close), and every
    // stream handed over is closed. A GOAWAY nghttp2 queues on its own may show only as
    // finished() once written, and as false from the next call.
    bool receive(std::span<const char> bytes, std::chrono::steady_clock::time_point now);

    // What to write to the client next (empty: nothing now), valid until consumed().
    std::span<const char> output();
    // `n` bytes of output() were written.
    void consumed(std::size_t n);
    // Nothing more will be read or written.
    bool finished() const;

    // The response head of a stream; `body`: a body follows through send_body, else the
    // stream ends with it. Names are sent in lower case; connection-specific fields are
    // dropped. The fields are copied.
    void respond(std::int32_t stream, unsigned status,
                 std::span<const std::pair<std::string_view, std::string_view>> fields, bool body);
    // An interim 100 (Continue): the client of `Expect: 100-continue` may send its body.
    void send_continue(std::int32_t stream);
    // The next piece of a stream's response body: framed as the windows allow, read from
    // `data`, which the caller keeps until on_body_sent; `last` ends the stream.
    void send_body(std::int32_t stream, std::span<const char> data, bool last);
    // `n` bytes of a stream's request body were taken: the windows open for as many more.
    void consume(std::int32_t stream, std::size_t n);
    // Resets a stream (RST_STREAM with `code`).
    void reset(std::int32_t stream, h2_error code);
    // A graceful GOAWAY: the streams begun go on, no new one is taken.
    void shutdown();
    // An immediate GOAWAY with `code`; every stream handed over is closed (on_stream_closed).
    void terminate(h2_error code);
    // When the oldest header block still being received (a request's head, or its trailers)
    // began: nghttp2 reads nothing else on the connection until it ends, so the connection bounds
    // it with header_timeout. Empty when none is under way.
    std::optional<std::chrono::steady_clock::time_point> header_block_since() const;

    // What the codec refused, for the metrics.
    struct counters {
        std::uint64_t resets_by_client = 0;  // RST_STREAM sent, or a stream error caused
        std::uint64_t goaway_calm = 0;       // ENHANCE_YOUR_CALM sent (rapid reset, a flood)
        std::uint64_t malformed = 0;         // requests refused before the gateway saw them
    };
    const counters& stats() const { return stats_; }

  private:
    // A token bucket: `burst` tokens, refilled at `rate` a second.
    struct bucket {
        double tokens = 0;
        double burst = 0;
        double rate = 0;
        std::chrono::steady_clock::time_point last;
        bool take(std::chrono::steady_clock::time_point now);
    };

    struct stream_state {
        request_head head;
        std::size_t header_bytes = 0;
        std::string authority;
        std::string host;
        std::string cookie;
        bool has_authority = false;
        bool has_host = false;
        bool has_path = false;
        bool bad = false;      // refused while its head was read
        bool in_body = false;  // the head is done (later fields are trailers)
        // A header block of this stream (its head or its trailers) is being received since then.
        std::optional<std::chrono::steady_clock::time_point> block_began;
        // Who reset it: a stream closed with an error by neither is one the client's stream
        // error made nghttp2 reset (a WINDOW_UPDATE past 2^31-1, ...), and counts as a reset.
        bool reset_by_gateway = false;
        bool reset_by_client = false;
        std::optional<std::uint64_t> content_length;
        // The response piece being framed.
        const char* piece = nullptr;
        std::size_t piece_size = 0;
        std::size_t piece_taken = 0;
        bool piece_last = false;
        bool piece_pending = false;
        bool deferred = false;       // the data source said "later": resume on the next piece
        std::size_t unconsumed = 0;  // body bytes handed over and not yet consume()d
    };

    friend struct h2_callbacks;
    stream_state* find(std::int32_t id);
    int on_header(std::int32_t id, std::string_view name, std::string_view value);
    int on_headers_done(std::int32_t id, bool end_stream);
    int on_frame_begin(std::uint8_t type, std::size_t length, std::uint8_t flags);
    long read_body(std::int32_t id, std::uint8_t* buf, std::size_t length, std::uint32_t* flags);
    void calm_down();
    void count_reset();
    void close_streams(std::uint32_t code);
    void refuse(std::int32_t id, stream_state& s, std::uint32_t code);

    handler& handler_;
    h2_limits limits_;
    nghttp2_session* session_ = nullptr;
    std::unordered_map<std::int32_t, stream_state> streams_;
    std::string out_;
    std::size_t out_taken_ = 0;
    // A response head's fields as nghttp2 takes them (respond), kept for their capacity.
    std::string names_;
    std::vector<nghttp2_nv> nva_;
    std::chrono::steady_clock::time_point now_;
    bucket resets_, control_, empty_;
    counters stats_;
    bool shutting_down_ = false;
    bool failed_ = false;  // terminated: write what is queued, read nothing more
};

}  // namespace waitroom::gateway

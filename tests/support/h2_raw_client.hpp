#pragma once
// A raw HTTP/2 client for whole-process tests of a TLS listener: OpenSSL with ALPN h2 over a
// loopback socket, the connection preface, any frame as bytes (9-byte header + payload), HPACK
// through nghttp2's deflater and inflater, and a frame reader that keeps what each stream got
// (its :status, fields, DATA, RST_STREAM) and the GOAWAY. It sends what a real client library
// refuses to send (malformed fields, floods, resets), so the gateway's bounds can be tested.
// Every read has a deadline: a gateway that does not answer fails the test, never hangs it.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

struct ssl_st;
struct ssl_ctx_st;
struct nghttp2_hd_deflater;
struct nghttp2_hd_inflater;

namespace waitroom::test {

using h2_fields = std::vector<std::pair<std::string, std::string>>;

// Frame types and flags of RFC 9113 §6.
namespace h2_frame_type {
constexpr std::uint8_t data = 0x0, headers = 0x1, priority = 0x2, rst_stream = 0x3, settings = 0x4,
                       ping = 0x6, goaway = 0x7, window_update = 0x8, continuation = 0x9;
}
namespace h2_flag {
constexpr std::uint8_t end_stream = 0x1, ack = 0x1, end_headers = 0x4;
}
// Error codes (RFC 9113 §7).
constexpr std::uint32_t h2_no_error = 0x0, h2_protocol_error = 0x1, h2_refused_stream = 0x7,
                        h2_cancel = 0x8, h2_enhance_your_calm = 0xb;

// What one stream received.
struct h2_reply {
    unsigned status = 0;  // 0: no response head
    h2_fields headers;    // the response's fields, pseudo-fields left out
    std::string body;
    bool ended = false;                  // END_STREAM or RST_STREAM arrived
    std::optional<std::uint32_t> reset;  // the RST_STREAM's error code

    // First value of a field (names are lower case in HTTP/2); "" when absent.
    std::string header(std::string_view name) const;
};

class h2_raw_client {
  public:
    struct options {
        // The client's SETTINGS_INITIAL_WINDOW_SIZE (0: the server may send no DATA).
        std::uint32_t initial_window = 1 << 24;
        bool grant_window = true;  // WINDOW_UPDATE for each DATA received
        int receive_buffer = 0;    // SO_RCVBUF before connecting (> 0: a slow reader)
        std::chrono::milliseconds timeout = std::chrono::seconds{5};  // each wait's deadline
    };

    // Connects to 127.0.0.1:port, completes TLS (offering h2 only) and sends the preface and
    // SETTINGS. connected() says whether all of it worked and the server chose h2.
    explicit h2_raw_client(std::uint16_t port);
    h2_raw_client(std::uint16_t port, options opts);
    ~h2_raw_client();
    h2_raw_client(const h2_raw_client&) = delete;
    h2_raw_client& operator=(const h2_raw_client&) = delete;

    bool connected() const { return connected_; }
    std::string error() const { return error_; }

    // ---- writing (false when the connection broke or the deadline passed) ----
    bool send_frame(std::uint8_t type, std::uint8_t flags, std::uint32_t stream,
                    std::string_view payload);
    // Several frames in one write.
    bool send_raw(std::string_view bytes);
    // The HPACK block of `fields` (in order, as given), from this connection's deflater.
    std::string encode(const h2_fields& fields);
    bool send_headers(std::uint32_t stream, const h2_fields& fields, bool end_stream);
    bool send_data(std::uint32_t stream, std::string_view data, bool end_stream);
    bool send_rst(std::uint32_t stream, std::uint32_t code);
    bool send_window_update(std::uint32_t stream, std::uint32_t increment);
    // A GET (or `method`) with :scheme https and :authority `authority`, then `extra` fields.
    bool request(std::uint32_t stream, std::string_view path, const h2_fields& extra = {},
                 std::string_view authority = "shop.test", std::string_view method = "GET");

    // ---- frames as bytes, for floods sent in one write ----
    static std::string frame(std::uint8_t type, std::uint8_t flags, std::uint32_t stream,
                             std::string_view payload);
    static std::string rst_payload(std::uint32_t code);

    // ---- reading ----
    // Reads frames until stream `stream` ends, a GOAWAY arrives, the peer closes, or the
    // deadline passes; returns what the stream got.
    h2_reply await(std::uint32_t stream);
    // Reads frames until a GOAWAY arrives or the peer closes (or the deadline): its code.
    std::optional<std::uint32_t> await_goaway(std::chrono::milliseconds timeout);
    // Reads frames until the peer closes the connection, for at most `timeout`.
    bool await_close(std::chrono::milliseconds timeout);
    // Reads one frame if one arrives before `deadline`; false at the deadline or the close.
    bool read_frame(std::chrono::steady_clock::time_point deadline);

    const h2_reply& stream(std::uint32_t id) { return streams_[id]; }
    // The server's SETTINGS values by identifier (RFC 9113 §6.5.2), as received.
    const std::map<std::uint16_t, std::uint32_t>& server_settings() const { return settings_; }
    std::optional<std::uint32_t> goaway() const { return goaway_; }
    std::uint32_t goaway_last_stream() const { return goaway_last_; }
    bool peer_closed() const { return peer_closed_; }
    std::size_t frames_read() const { return frames_read_; }

  private:
    bool connect(std::uint16_t port);
    bool handshake();
    bool fill(std::chrono::steady_clock::time_point deadline);
    void handle(std::uint8_t type, std::uint8_t flags, std::uint32_t stream,
                const std::string& payload);
    void decode_block(std::uint32_t stream, const std::string& block, bool end_stream);
    bool wait_socket(short events, std::chrono::steady_clock::time_point deadline);
    std::chrono::steady_clock::time_point deadline() const;

    options opts_;
    int fd_ = -1;
    ssl_ctx_st* ctx_ = nullptr;
    ssl_st* ssl_ = nullptr;
    nghttp2_hd_deflater* deflater_ = nullptr;
    nghttp2_hd_inflater* inflater_ = nullptr;
    bool connected_ = false;
    bool peer_closed_ = false;
    std::string error_;
    std::string in_;     // bytes read, not yet parsed into frames
    std::string block_;  // a header block waiting for its CONTINUATION
    std::uint32_t block_stream_ = 0;
    bool block_end_stream_ = false;
    std::map<std::uint32_t, h2_reply> streams_;
    std::map<std::uint16_t, std::uint32_t> settings_;
    std::optional<std::uint32_t> goaway_;
    std::uint32_t goaway_last_ = 0;
    std::size_t frames_read_ = 0;
};

}  // namespace waitroom::test

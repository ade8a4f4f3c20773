#pragma once
// One HTTP/2 client connection (RFC 9113), on the TLS stream ALPN chose h2 on (or a plain one
// for h2c with prior knowledge): bytes read go to the codec (h2_codec, over nghttp2),
// which holds every protocol bound; what it has to send is written one write at a time, and
// reading pauses while a write is under way, so a client that does not read cannot grow what
// is held for it. Each request becomes an h2_stream. The connection closes with a GOAWAY after
// keepalive_timeout without a stream, and on drain lets the streams in flight finish. A header
// block left half sent must end within header_timeout, as an HTTP/1.1 head must.

#include <boost/beast/core/flat_buffer.hpp>

#include <array>
#include <memory>
#include <optional>
#include <unordered_map>

#include "client_identity.hpp"
#include "client_stream.hpp"
#include "common.hpp"
#include "h2_codec.hpp"
#include "h2_stream.hpp"
#include "worker_context.hpp"

namespace waitroom::gateway {

class h2_connection : public session_base,
                      public h2_codec::handler,
                      public h2_link,
                      public std::enable_shared_from_this<h2_connection> {
  public:
    h2_connection(std::shared_ptr<worker_context> state, client_stream&& stream,
                  const client_identity& identity, const request_info& info,
                  beast::flat_buffer&& already_read);
    ~h2_connection() override;

    void run();

    // session_base
    void drain() override;
    void close() override;
    bool sweep(std::chrono::steady_clock::time_point) override { return false; }

    // h2_link
    h2_codec& codec() override { return *codec_; }
    void flush() override;
    asio::any_io_executor executor() override { return lowest().get_executor(); }

    // h2_codec::handler
    void on_request(const h2_request& r) override;
    void on_body(std::int32_t stream, std::span<const char> data, bool end) override;
    void on_body_sent(std::int32_t stream) override;
    void on_stream_closed(std::int32_t stream, std::uint32_t error_code) override;

  private:
    tcp_stream& lowest() { return stream_.lowest(); }
    h2_stream* find(std::int32_t id);
    void do_read();
    void on_read(error_code ec, std::size_t n);
    void receive(const char* data, std::size_t n);
    void on_written(error_code ec, std::size_t n);
    void arm_idle();
    void watch_header_block();
    void on_header_timer(error_code ec);
    void finish();
    void count_refusals();
    void end_streams();

    std::shared_ptr<worker_context> state_;
    client_stream stream_;
    client_identity identity_;
    request_info info_;
    beast::flat_buffer already_read_;  // bytes read with the handshake or the preface sniff
    std::optional<h2_codec> codec_;
    h2_codec::counters counted_;  // of the codec's counters, those in the metrics already
    std::unordered_map<std::int32_t, std::shared_ptr<h2_stream>> streams_;
    std::array<char, 16 * 1024> read_buffer_{};
    steady_timer idle_timer_;
    steady_timer header_timer_;  // the header block under way (watch_header_block)
    std::optional<std::chrono::steady_clock::time_point> header_watched_;  // that block's start
    bool writing_ = false;
    bool read_paused_ = false;  // a read waits for the write under way
    bool closing_ = false;      // GOAWAY sent: close once written and the streams are done
    bool closed_ = false;
};

}  // namespace waitroom::gateway

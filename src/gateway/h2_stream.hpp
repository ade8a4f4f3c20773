#pragma once
// One HTTP/2 stream of an h2_connection: one request taken through the same path as an HTTP/1.1
// request (request_intake.hpp, the room's filter, then an answer from memory or a proxy_exchange
// to the HTTP/1.1 origin), with its body delivered from the DATA frames the codec passed and its
// response handed back to the codec. Its one timer bounds whichever wait is under way: the body,
// a write the client's flow-control window holds, or the origin.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "client_identity.hpp"
#include "exchange_client.hpp"
#include "proxy_exchange.hpp"
#include "request_intake.hpp"
#include "waitroom/gateway/request_filter.hpp"
#include "worker_context.hpp"

namespace waitroom::gateway {

class h2_codec;

// What a stream needs of its connection.
class h2_link {
  public:
    virtual ~h2_link() = default;
    virtual h2_codec& codec() = 0;
    // Writes what the codec has to send (at once or when the write under way ends).
    virtual void flush() = 0;
    virtual asio::any_io_executor executor() = 0;
};

class h2_stream : public exchange_client, public std::enable_shared_from_this<h2_stream> {
  public:
    // `identity` and `info` are the connection's, copied for this request.
    h2_stream(std::shared_ptr<worker_context> worker, std::shared_ptr<h2_link> link,
              std::int32_t id, request_head&& head, std::optional<std::uint64_t> length,
              bool end_stream, const client_identity& identity, const request_info& info);
    ~h2_stream() override;

    // Takes the request in and asks the room.
    void start();
    // The codec's events for this stream (h2_codec::handler).
    void on_data(std::span<const char> data, bool end);
    void on_body_sent();
    void on_closed();

    // exchange_client
    const exchange_request& request() const override { return exchange_request_; }
    std::shared_ptr<void> keep_alive() override { return shared_from_this(); }
    bool gone() const override { return gone_; }
    bool body_done() const override { return body_end_ && received_.empty(); }
    std::optional<std::uint64_t> body_left() const override;
    void read_body(char* into, std::size_t room,
                   std::chrono::steady_clock::time_point deadline) override;
    void send_error(unsigned status, std::string_view text, bool close,
                    std::string_view retry_after = {}, header_list extra = {}) override;
    void send_head(const response_head& res, std::optional<std::uint64_t> length,
                   bool bodyless) override;
    void send_body(const char* data, std::size_t size, bool last) override;
    void finished() override;
    void abort() override;
    void arm_timer(std::chrono::steady_clock::time_point deadline) override;
    void post(std::function<void()> f) override;
    void open_tunnel(const response_head& res, std::shared_ptr<origin_connection> origin) override;

  private:
    using field_pairs = std::vector<std::pair<std::string_view, std::string_view>>;

    void on_filter(filter_result r);
    // An answer from memory: `fields` already paired, `body` shared or `own_body_`.
    void answer(unsigned status, field_pairs fields, std::string_view body);
    void fill_body_piece();
    void body_read(error_code ec);
    // After the stream closed: ends the wait on the body or on a write, if one is under way.
    void unwind();
    void wait_until(std::chrono::steady_clock::time_point deadline);
    void on_timer();
    void write_timed_out();
    void log();
    const config::config& cfg() const { return *runtime_->cfg; }

    std::shared_ptr<worker_context> worker_;
    std::shared_ptr<h2_link> link_;
    std::shared_ptr<const node_runtime> runtime_;
    std::int32_t id_;
    request_head head_;
    client_identity identity_;
    request_info info_;
    util::canonical_request canonical_;
    util::target_buffers target_buffers_;
    filter_result filter_;
    exchange_request exchange_request_;
    bool gone_ = false;      // reset or closed: nothing more is written
    bool answered_ = false;  // the response has been handed over in full

    // The request body: what the codec delivered and the exchange has not taken. The codec opens
    // the client's window only for what the exchange took, so this stays within one window.
    std::optional<std::uint64_t> length_;  // declared
    std::uint64_t delivered_ = 0;          // handed to the exchange
    std::uint64_t arrived_ = 0;            // received in all
    std::string received_;
    bool body_end_ = false;
    error_code body_error_;  // the body passed limits.max_body_bytes
    // The piece being filled for the exchange.
    char* piece_ = nullptr;
    std::size_t piece_room_ = 0;
    std::size_t piece_filled_ = 0;
    bool body_waiting_ = false;
    // The client asked `Expect: 100-continue`: it is sent before the body is first read.
    bool continue_pending_ = false;
    std::chrono::steady_clock::time_point body_deadline_;

    // The response.
    answer_tally answer_;         // for the access log and metrics
    bool memory_answer_ = false;  // the body is the gateway's own (no exchange waits on it)
    bool write_waiting_ = false;  // a piece is with the codec, not yet all taken
    bool bodyless_ = false;       // the origin's response has no body (HEAD, 204, 304)
    bool last_pending_ = false;   // the piece with the codec is the body's last
    bool response_sent_ = false;  // the whole response went into frames
    std::chrono::steady_clock::time_point write_deadline_;
    std::chrono::steady_clock::time_point relay_wait_since_;  // the head went out
    std::string own_body_;
    std::string content_length_;
    std::shared_ptr<const std::string> shared_body_;
    header_list error_fields_;

    // The one timer: the body wait, a write held by flow control, or the origin's wait.
    steady_timer timer_;
    std::uint64_t timer_generation_ = 0;  // of the last arm; older waits are stale
    bool timer_armed_ = false;

    proxy_exchange exchange_;
};

}  // namespace waitroom::gateway

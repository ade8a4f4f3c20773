#pragma once
// One HTTP/1.1 client connection, plain or TLS (client_stream.hpp): its PROXY header and TLS
// handshake, then HTTP/1.1 requests read one at a time (pipelined bytes wait in the
// buffer), each validated and put to the request_filter, then answered from memory here or
// forwarded by the connection's proxy_exchange. The session owns the client's timeouts (one
// deadline timer for every wait, see arm_timer), the worker's sweep of waits that were queued
// without a try (socket_reader.hpp), and the lingering close. After a 101 the connection is a
// tunnel (tunnel.hpp), which keeps the session alive while it lasts. Where the connection is
// in all this is one value, its phase (session_phase.hpp).

#include <boost/beast/core/flat_buffer.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "certificate_set.hpp"
#include "client_identity.hpp"
#include "client_stream.hpp"
#include "common.hpp"
#include "exchange_client.hpp"
#include "head_parser.hpp"
#include "outgoing_message.hpp"
#include "proxy_exchange.hpp"
#include "request_intake.hpp"
#include "session_phase.hpp"
#include "socket_reader.hpp"
#include "waitroom/config/config.hpp"
#include "waitroom/gateway/request_filter.hpp"
#include "worker_context.hpp"

namespace waitroom::gateway {

class client_session : public session_base,
                       public exchange_client,
                       public std::enable_shared_from_this<client_session> {
  public:
    // `tls` is the listener's current certificate set on a TLS listener, else null (plain TCP);
    // the session holds it for its life. `proxy_protocol`: the connection starts with a PROXY
    // header (before any TLS). `h2c`: a plain connection whose first bytes are HTTP/2's
    // preface is HTTP/2 with prior knowledge.
    client_session(std::shared_ptr<worker_context> state, tcp_socket&& socket,
                   std::shared_ptr<const certificate_set> tls, bool proxy_protocol = false,
                   bool h2c = false);
    ~client_session() override;

    void run();
    void drain() override;
    void close() override;
    bool sweep(std::chrono::steady_clock::time_point cutoff) override;

    // The client side of the exchange (exchange_client.hpp).
    const exchange_request& request() const override { return exchange_request_; }
    std::shared_ptr<void> keep_alive() override { return self(); }
    bool gone() const override { return has_ended(phase_); }
    bool body_done() const override { return parser_->is_done(); }
    std::optional<std::uint64_t> body_left() const override;
    void read_body(char* into, std::size_t room,
                   std::chrono::steady_clock::time_point deadline) override;
    // `retry_after`: the value of a Retry-After field, "" for none; `extra`: more fields.
    void send_error(unsigned status, std::string_view text, bool close,
                    std::string_view retry_after = {}, header_list extra = {}) override;
    void send_head(const response_head& res, std::optional<std::uint64_t> length,
                   bool bodyless) override;
    void send_body(const char* data, std::size_t size, bool last) override;
    void finished() override;
    void abort() override { close(); }
    void arm_timer(std::chrono::steady_clock::time_point deadline) override;
    void post(std::function<void()> f) override;
    void open_tunnel(const response_head& res, std::shared_ptr<origin_connection> origin) override;

  private:
    using self_ptr = std::shared_ptr<client_session>;
    self_ptr self() { return this->shared_from_this(); }
    tcp_stream& lowest() { return stream_.lowest(); }
    bool is_tls() const { return stream_.is_tls(); }
    // The one place the phase changes (checked against session_phase's may_follow).
    void enter(session_phase next);

    void start();
    void on_handshake(error_code ec);
    void hand_to_h2();
    enum class preface { none, partial, whole };
    preface h2c_preface() const;
    // PROXY protocol (proxy_protocol.hpp): the header, then who the client is.
    void read_proxy_header();
    void on_proxy_bytes(error_code ec, std::size_t n);

    // `first`: the connection's first request (else the next on a kept-alive connection).
    void do_read_header(bool first = false);
    void read_client_head(bool try_first = false);
    void note_head_begun();
    void on_client_bytes(error_code ec, std::size_t n);
    void on_read_header(error_code ec, std::size_t);
    void on_head_failed(error_code ec);
    void follow(const std::shared_ptr<const node_runtime>& rt);
    void on_filter(filter_result r);
    // The client's next request, once the last one is answered.
    void next_request();

    void on_timer(std::uint64_t generation, error_code ec);
    void on_body_deadline(std::chrono::steady_clock::time_point now);

    // The request body, read piece by piece for the exchange (read_body).
    void write_continue();
    void fill_request_piece();
    void on_client_body_bytes(error_code ec, std::size_t n);
    void body_read(error_code ec);

    // Sends what to_client_ holds, then goes on with on_client_written. `relay`: a piece of a
    // response relayed from the origin (the exchange goes on), else an answer from memory.
    void write_client(bool relay);
    void on_client_written(bool relay, error_code ec);
    // `written`: fields already written as lines, sent before `headers` (filter_result::fields).
    void send_response(unsigned status, const header_list& headers, std::string body,
                       std::shared_ptr<const std::string> shared_body, bool close,
                       std::string_view written = {});
    void run_tunnel(const std::shared_ptr<origin_connection>& conn);
    void on_write_memory_response(error_code ec);
    void log_request();

    void do_close();
    void do_linger();
    void on_linger(error_code ec, std::size_t);
    void on_shutdown(error_code ec);
    void cancel_read();

    std::shared_ptr<worker_context> state_;
    // The runtime this request is served under (taken when its head has arrived, see follow());
    // cfg_ is its config.
    std::shared_ptr<const node_runtime> runtime_;
    const config::config* cfg_;
    // The certificates this connection's handshake is served from (before stream_, made on it).
    std::shared_ptr<const certificate_set> tls_;
    client_stream stream_;
    beast::flat_buffer buffer_;
    request_info info_;
    client_identity identity_;
    session_phase phase_;

    // How the client read under way began, for the worker's sweep (socket_reader.hpp): the next
    // request on a kept-alive connection is awaited without a try of the socket, and the sweep
    // cancels such a wait once it has lasted a sweep interval, to start it again with a try.
    enum class client_read : std::uint8_t {
        none,     // no read of the client is under way
        tried,    // under way, begun with a try of the socket (or by the TLS stream)
        untried,  // under way, queued without a try: the sweep may retry it
        retry,    // cancelled by the sweep, to begin again with a try
    };
    client_read read_ = client_read::none;
    std::chrono::steady_clock::time_point client_wait_since_;  // the wait for this head began

    // The deadline timer: it bounds the head, body and plain origin waits, one at a time.
    steady_timer deadline_timer_;
    std::uint64_t timer_generation_ = 0;  // of the last arm; older waits are stale
    std::chrono::steady_clock::time_point header_deadline_;  // of the head being read
    std::chrono::steady_clock::time_point linger_deadline_;  // of the lingering close

    // Facts orthogonal to the phase: each holds across several phases, in any combination.
    bool proxy_protocol_ = false;  // a PROXY header comes before anything else (the listener's)
    bool h2c_ = false;             // HTTP/2 with prior knowledge is taken (a plain listener's)
    bool draining_ = false;        // the worker drains: no request after the one in flight
    bool timer_armed_ = false;     // deadline_timer_ has a wait of timer_generation_
    // The deadline of the client wait under way (a head or a body piece) has passed: its read is
    // cancelled, and whatever it brought ends the wait as timed out.
    bool wait_timed_out_ = false;

    // The request in flight, its head parsed in place into a head kept for the connection's life
    // so that its buffers keep their capacity.
    request_head request_;
    std::optional<head_parser<true>> parser_;
    util::canonical_request canonical_;    // its target and Host, read once (views: parser_)
    util::target_buffers target_buffers_;  // where canonical_ points when it rewrote something
    filter_result filter_;
    exchange_request exchange_request_;  // what the exchange reads of it
    // The connection is kept after this request's response: the client asked it, and neither
    // the response's framing (an HTTP/1.0 body until the close), nor an answer that must close,
    // nor a drain ended it.
    bool keep_alive_ = false;
    bool continue_pending_ = false;  // the client waits for a 100 Continue before its body

    // The response, forwarded or answered from memory.
    outgoing_message to_client_;
    answer_tally answer_;  // for the access log and metrics (bytes_sent: response_min_rate too)
    std::chrono::steady_clock::duration relay_wait_{};  // the relay's waits on the client
    std::string memory_body_;                           // its body when we wrote it
    std::shared_ptr<const std::string> memory_shared_;  // its body when a cache shares it

    // The body piece being read for the exchange.
    std::size_t body_room_ = 0;  // its size
    std::chrono::steady_clock::time_point body_deadline_;

    proxy_exchange exchange_;
};

}  // namespace waitroom::gateway

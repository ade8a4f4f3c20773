#pragma once
// One client connection: reads HTTP/1.1 requests one at a time (pipelined bytes wait in the
// buffer), validates each, asks the request_filter, then forwards it through a pooled origin
// connection with both bodies streamed piece by piece, or answers it from memory. Upgrades
// to a byte tunnel after an origin 101 to a WebSocket request. Stream is tcp_stream or
// ssl::stream<tcp_stream>.

#include <boost/asio/ssl/stream.hpp>
#include <boost/beast/core/flat_buffer.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "common.hpp"
#include "socket_reader.hpp"
#include "head_parser.hpp"
#include "outgoing_message.hpp"
#include "waitroom/config/config.hpp"
#include "waitroom/gateway/request_filter.hpp"
#include "worker_context.hpp"

namespace waitroom::gateway {

class origin_connection;

template <class Stream>
class http_session : public session_base,
                     public std::enable_shared_from_this<http_session<Stream>> {
  public:
    static constexpr bool is_tls = !std::is_same_v<Stream, tcp_stream>;

    // `tls` is the listener's context when Stream is a TLS stream, else nullptr.
    // `proxy_protocol`: the connection starts with a PROXY header (before any TLS).
    http_session(std::shared_ptr<worker_context> state, tcp_socket&& socket, ssl::context* tls,
                 bool proxy_protocol = false);
    ~http_session() override;

    void run();
    void drain() override;
    void close() override;
    bool sweep(std::chrono::steady_clock::time_point cutoff) override;

  private:
    using self_ptr = std::shared_ptr<http_session>;
    self_ptr self() { return this->shared_from_this(); }
    tcp_stream& lowest() { return beast::get_lowest_layer(stream_); }
    // The body relay buffer, with room for at least `room` bytes (kept for the connection).
    char* piece(std::size_t room = 16 * 1024);

    void start();
    void on_handshake(error_code ec);
    // PROXY protocol (client_ip.hpp, proxy_protocol.hpp): the header, then who the client is.
    void read_proxy_header();
    void on_proxy_bytes(error_code ec, std::size_t n);
    void resolve_client(const request_head& req);
    void do_read_header();
    void read_client_head(bool try_first = false);
    void on_client_bytes(error_code ec, std::size_t n);
    void arm_timer(std::chrono::steady_clock::time_point deadline);
    void on_timer(std::uint64_t generation, error_code ec);
    void on_read_header(error_code ec, std::size_t);
    void on_filter(filter_result r);
    void do_forward(bool fresh);
    void on_origin(error_code ec, std::shared_ptr<origin_connection> c);
    void write_origin();
    void on_write_continue(error_code ec, std::size_t);
    void do_read_body();
    void fill_request_piece();
    void on_client_body_bytes(error_code ec, std::size_t n);
    void on_read_body(error_code ec, std::size_t);
    void on_origin_write_body(error_code ec, std::size_t);
    void do_read_response_header();
    void read_origin_head();
    void on_origin_bytes(error_code ec, std::size_t n);
    void on_read_response_header(error_code ec, std::size_t);
    void do_read_response_body();
    void fill_response_piece();
    void on_origin_body_bytes(error_code ec, std::size_t n);
    void on_read_response_body(error_code ec, std::size_t);
    void write_response_piece();
    void on_write_response_body(error_code ec, std::size_t);
    void finish_exchange();
    void next_request();
    void start_tunnel();
    void origin_failed(error_code ec, bool before_response);
    // Gives the origin connection back (reusable or not) and the client's slot with it.
    void release_origin(bool reusable);
    // The client's slot for an origin connection (max_connections_per_client): false when it
    // holds all it may.
    bool take_slot();
    // A WebSocket upgrade's place in the worker's origin.max_tunnels: false when all are taken.
    // give_slot() gives it back with the slot.
    bool take_tunnel();
    void give_slot();
    // Room for `want` body bytes in the piece buffer within limits.request_buffer_budget, else
    // one relay piece's worth.
    std::size_t body_buffer_room(std::size_t want);
    void free_body_buffer();
    void send_response(unsigned status, const header_list& headers, std::string body,
                       std::shared_ptr<const std::string> shared_body, bool close);
    // `retry_after`: the value of a Retry-After field, "" for none; `extra`: more fields.
    void send_error(unsigned status, std::string_view text, bool close,
                    std::string_view retry_after = {}, header_list extra = {});
    header_list origin_error_headers();
    void on_write_memory_response(bool close, error_code ec, std::size_t);
    template <class Handler>
    void write_client(Handler&& on_done);
    void log_request();
    void do_close();
    void follow(const std::shared_ptr<const node_runtime>& rt);
    void do_linger();
    void on_linger(error_code ec, std::size_t);
    void on_shutdown(error_code ec);

    std::shared_ptr<worker_context> state_;
    // The runtime this request is served under (taken when its head has arrived, see follow());
    // cfg_ is its config.
    std::shared_ptr<const node_runtime> runtime_;
    const config::config* cfg_;
    Stream stream_;
    socket_reader client_read_;  // plain TCP: the client's request heads
    socket_reader origin_read_;  // plain TCP: the origin's responses
    beast::flat_buffer buffer_;
    steady_timer deadline_timer_;         // bounds the header and plain origin waits
    std::uint64_t timer_generation_ = 0;  // of the last arm; older waits are stale
    bool timer_armed_ = false;            // deadline_timer_ has a wait of timer_generation_
    std::chrono::steady_clock::time_point header_deadline_;  // of the header read in progress
    bool header_waiting_ = false;                            // a header read is in progress
    bool client_untried_ = false;  // waits for a request without having tried the socket
    bool client_retry_ = false;    // the sweep cancelled that wait to try the socket
    std::chrono::steady_clock::time_point client_wait_since_;
    bool header_timed_out_ = false;
    bool header_started_ = false;  // header_deadline_ is header_timeout's (a request has begun)
    std::chrono::steady_clock::time_point body_deadline_;  // of the body read in progress
    bool body_waiting_ = false;  // waiting (plain TCP client) for request body bytes
    bool body_timed_out_ = false;
    std::chrono::steady_clock::time_point origin_deadline_;  // of the origin wait in progress
    bool origin_waiting_ = false;  // waiting (plain TCP origin) for response bytes
    bool origin_timed_out_ = false;
    bool first_request_ = true;
    bool busy_ = false;  // a request is being handled
    bool draining_ = false;
    bool closed_ = false;
    request_info info_;
    // The peer: the socket's, or the address a PROXY header carried. Whether it is among
    // trusted_proxies is computed once per config (trust_cfg_), not per request.
    std::string peer_ip_;
    std::optional<std::array<std::uint8_t, 16>> peer_bytes_;
    bool peer_trusted_ = false;
    const config::config* trust_cfg_ = nullptr;
    bool proxy_protocol_ = false;  // a PROXY header is awaited before anything else

    // The heads of the exchange in flight, parsed in place: kept for the connection's life so
    // that their buffers keep their capacity.
    request_head request_;
    response_head response_;

    // The exchange in flight.
    std::optional<head_parser<true>> parser_;
    util::canonical_request canonical_;    // its target and Host, read once (views: parser_)
    util::target_buffers target_buffers_;  // where canonical_ points when it rewrote something
    filter_result filter_;
    bool head_ = false;
    bool websocket_ = false;
    bool request_has_body_ = false;
    bool retried_ = false;
    bool interim_seen_ = false;                      // the origin sent a 1xx in this exchange
    std::chrono::steady_clock::time_point started_;  // for the access log
    std::uint64_t bytes_sent_ = 0;                   // response body bytes, access log
    std::size_t pending_ = 0;    // body bytes read from the client, not yet sent on
    std::size_t body_room_ = 0;  // the size of the piece being filled with request body
    std::chrono::steady_clock::time_point stream_start_;  // the body's origin connection came
    std::uint64_t streamed_ = 0;  // body bytes read since then (body_min_rate)
    std::chrono::steady_clock::duration relay_wait_{};       // the relay's waits on the client
    std::chrono::steady_clock::time_point linger_deadline_;  // of the lingering close
    bool client_keep_alive_ = false;
    std::shared_ptr<origin_connection> origin_;
    outgoing_message to_origin_;  // the request as forwarded (its head is built once per request)
    std::optional<head_parser<false>> res_parser_;
    outgoing_message to_client_;  // the response, forwarded or answered from memory
    unsigned status_ = 0;         // of the response, for the access log and metrics
    std::string memory_body_;     // its body when we wrote it
    std::shared_ptr<const std::string> memory_shared_;  // its body when a cache shares it
    std::unique_ptr<char[]> piece_;                     // body relay buffer, made on first use
    std::size_t piece_capacity_ = 0;
    std::size_t budget_held_ = 0;  // of piece_capacity_, past a relay piece: in the worker's budget
    bool slot_held_ = false;       // slot_client_ holds a slot in state_->slots
    bool tunnel_held_ = false;     // this upgrade counts in state_->tunnels
    client_slots::address slot_client_{};
};

}  // namespace waitroom::gateway

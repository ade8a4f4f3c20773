#pragma once
// One request forwarded to the origin, for its client_session: the origin's request head built
// once, an origin connection taken (the client's slot, a tunnel's place, the pool, one retry of
// a stale pooled connection), the request body relayed (buffered up to limits.request_buffer,
// then streamed), then the origin's response relayed to the client piece by piece. An interim
// (1xx) response is read past; a 101 to a WebSocket request turns the connection into a tunnel
// (tunnel.hpp). The session keeps one for its whole life and starts it again for each forwarded
// request, so that its buffers keep their capacity; it reads the request, the client stream and
// the connection's settings through its session. The request's members are defined in
// proxy_exchange.cpp, the response's in proxy_exchange_response.cpp.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <type_traits>

#include "common.hpp"
#include "head_parser.hpp"
#include "origin_claim.hpp"
#include "outgoing_message.hpp"
#include "relay_buffer.hpp"
#include "socket_reader.hpp"
#include "waitroom/gateway/message_head.hpp"

namespace waitroom::gateway {

class origin_connection;
template <class Stream>
class client_session;

template <class Stream>
class proxy_exchange {
  public:
    proxy_exchange(client_session<Stream>& session, worker_context& worker);
    proxy_exchange(const proxy_exchange&) = delete;
    proxy_exchange& operator=(const proxy_exchange&) = delete;

    // Forwards the request the session has read and the filter passed.
    void start();
    // The session's deadline timer fired and no header read waits: ends the origin or body wait
    // in progress if its deadline has passed, else arms the timer for it again.
    void on_deadline(std::chrono::steady_clock::time_point now);
    // Between two requests: drops the last response's parser and what the body buffer borrowed
    // from the worker's budget.
    void reset() {
        relay_.give_back();
        res_parser_.reset();
    }
    // Closes the origin connection in use, if any (the session is closing at once).
    void close();
    // Gives back the origin connection (not reusable), the client's slot and the tunnel's place,
    // and the body buffer's budget: the session is gone.
    void release();
    // The relay buffer, for the session's lingering close to read into.
    char* scratch() { return relay_.get(); }
    // The session's write of a relayed piece has ended (client_session::write_client).
    void on_write_response_body(error_code ec, std::size_t);

  private:
    static constexpr bool is_tls = !std::is_same_v<Stream, tcp_stream>;
    // The session, for a handler to keep alive while an operation of this exchange is under way.
    std::shared_ptr<client_session<Stream>> owner() { return session_.self(); }

    // The request, to the origin (proxy_exchange.cpp).
    void do_forward(bool fresh);
    void on_origin(error_code ec, std::shared_ptr<origin_connection> c);
    bool pool_moved() const;
    void origin_moved();
    void write_origin();
    void on_write_continue(error_code ec, std::size_t);
    void do_read_body();
    void fill_request_piece();
    void on_client_body_bytes(error_code ec, std::size_t n);
    void on_read_body(error_code ec, std::size_t);
    void on_origin_write_body(error_code ec, std::size_t);
    void origin_failed(error_code ec, bool before_response);
    // What the room filter adds to the gateway's own answer for an origin that did not answer.
    header_list origin_error_headers();
    // Gives the origin connection back (reusable or not) and the client's slot with it.
    void release_origin(bool reusable);

    // The response, to the client (proxy_exchange_response.cpp).
    void do_read_response_header();
    void read_origin_head();
    void on_origin_bytes(error_code ec, std::size_t n);
    void on_read_response_header(error_code ec, std::size_t);
    void do_read_response_body();
    void fill_response_piece();
    void on_origin_body_bytes(error_code ec, std::size_t n);
    void on_read_response_body(error_code ec, std::size_t);
    void write_response_piece();
    void finish_exchange();
    void start_tunnel();

    client_session<Stream>& session_;
    worker_context& worker_;
    std::shared_ptr<origin_connection> origin_;
    socket_reader origin_read_;  // plain TCP: the origin's responses
    relay_buffer relay_;
    origin_claim claim_;
    outgoing_message to_origin_;  // the request as forwarded (its head is built once per request)

    // The request.
    bool head_ = false;  // HEAD: the response has no body
    bool websocket_ = false;
    bool request_has_body_ = false;
    bool retried_ = false;
    std::chrono::steady_clock::time_point body_deadline_;  // of the body read in progress
    bool body_waiting_ = false;  // waiting (plain TCP client) for request body bytes
    bool body_timed_out_ = false;
    std::size_t pending_ = 0;    // body bytes read from the client, not yet sent on
    std::size_t body_room_ = 0;  // the size of the piece being filled with request body
    std::chrono::steady_clock::time_point stream_start_;  // the body's origin connection came
    std::uint64_t streamed_ = 0;  // body bytes read since then (body_min_rate)

    // The response. Its head is parsed in place, into a head kept for the connection's life so
    // that its buffers keep their capacity.
    response_head response_;
    std::optional<head_parser<false>> res_parser_;
    bool interim_seen_ = false;  // the origin sent a 1xx in this exchange
    std::chrono::steady_clock::time_point origin_deadline_;  // of the origin wait in progress
    bool origin_waiting_ = false;  // waiting (plain TCP origin) for response bytes
    bool origin_timed_out_ = false;
};

}  // namespace waitroom::gateway

#pragma once
// One request forwarded to the origin, for the client side of an exchange (exchange_client.hpp:
// an HTTP/1.1 connection or an HTTP/2 stream): the origin's request head built once, an origin
// connection taken (the client's slot, a tunnel's place, the pool, one retry of a stale pooled
// connection), the request body relayed (buffered up to limits.request_buffer, then streamed),
// then the origin's response relayed to the client piece by piece. An interim (1xx) response is
// read past; a 101 to a WebSocket request turns the connection into a tunnel. The client keeps
// one for its whole life (an HTTP/1.1 connection) or for its stream's, and starts it again for
// each forwarded request, so that its buffers keep their capacity. The request's members are
// defined in proxy_exchange.cpp, the response's in proxy_exchange_response.cpp.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

#include "common.hpp"
#include "exchange_client.hpp"
#include "head_parser.hpp"
#include "origin_claim.hpp"
#include "origin_servers.hpp"
#include "outgoing_message.hpp"
#include "relay_buffer.hpp"
#include "socket_reader.hpp"
#include "waitroom/gateway/message_head.hpp"

namespace waitroom::gateway {

class origin_connection;

class proxy_exchange {
  public:
    proxy_exchange(exchange_client& client, worker_context& worker);
    proxy_exchange(const proxy_exchange&) = delete;
    proxy_exchange& operator=(const proxy_exchange&) = delete;

    // Forwards the request the client has read and the filter passed (client.request()).
    void start();
    // The client's timer fired: ends the origin wait in progress if its deadline has passed,
    // else arms the timer for it again.
    void on_deadline(std::chrono::steady_clock::time_point now);
    // Between two requests: drops the last response's parser and what the body buffer borrowed
    // from the worker's budget.
    void reset() {
        relay_.give_back();
        res_parser_.reset();
    }
    // Closes the origin connection in use, if any (the client is closing at once).
    void close();
    // Gives back the origin connection (not reusable), the client's slot and the tunnel's place,
    // and the body buffer's budget: the client is gone.
    void release();
    // The relay buffer, for the connection's lingering close to read into.
    char* scratch() { return relay_.get(); }

    // The client's answers to read_body and send_body (exchange_client.hpp).
    void on_read_body(error_code ec, std::size_t bytes);
    void on_write_response_body(error_code ec);

  private:
    // The client, for a handler to keep alive while an operation of this exchange is under way.
    std::shared_ptr<void> owner() { return client_.keep_alive(); }
    const exchange_request& req() const { return client_.request(); }
    const config::config& cfg() const { return *client_.request().cfg; }
    // An unread body forces the client's connection to close with an answer of ours.
    bool body_unread() const { return request_has_body_ && !client_.body_done(); }

    // The request, to the origin (proxy_exchange.cpp).
    void write_head();
    void do_forward(bool fresh);
    void on_origin(error_code ec, std::shared_ptr<origin_connection> c);
    bool pool_moved() const;
    void origin_moved();
    void write_origin();
    void do_read_body();
    void body_refused(error_code ec);
    void on_origin_write_body(error_code ec, std::size_t);
    void origin_failed(error_code ec, bool before_response);
    // What the room filter adds to the gateway's own answer for an origin that did not answer.
    header_list origin_error_headers();
    // Gives the origin connection back (reusable or not) and the client's slot with it.
    void release_origin(bool reusable);
    // The request is no longer on its server (for the balancer's count of requests in flight).
    void leave_server();
    // What the server did with the request, for its health and metrics.
    void server_failed(server_failure f);
    void server_answered(unsigned status);
    bool may_fail_over() const;
    // Tries the request once more on another server (the one it was on could not be reached).
    void fail_over();

    // The response, to the client (proxy_exchange_response.cpp).
    void do_read_response_header();
    void read_origin_head();
    void on_origin_bytes(error_code ec, std::size_t n);
    void on_read_response_header(error_code ec, std::size_t);
    void send_response_head();
    void do_read_response_body();
    void fill_response_piece();
    void on_origin_body_bytes(error_code ec, std::size_t n);
    void on_read_response_body(error_code ec, std::size_t);
    // Hands the client a piece of the response body; `last` ends it.
    void send_piece(const char* data, std::size_t size, bool last);
    void finish_exchange();
    void start_tunnel();

    exchange_client& client_;
    worker_context& worker_;
    std::shared_ptr<origin_connection> origin_;
    std::shared_ptr<origin_target> target_;          // the server the request is on
    std::shared_ptr<origin_target> failed_over_;     // the one it could not reach (then: no more)
    std::chrono::steady_clock::time_point sent_at_;  // its connection to target_ came
    socket_reader origin_read_;                      // plain TCP: the origin's responses
    relay_buffer relay_;
    origin_claim claim_;
    outgoing_message to_origin_;  // the request as forwarded (its head is built once per request)

    // The request.
    bool head_ = false;  // HEAD: the response has no body
    bool websocket_ = false;
    bool request_has_body_ = false;
    bool retried_ = false;
    std::size_t pending_ = 0;    // body bytes read from the client, not yet sent on
    std::size_t body_room_ = 0;  // the size of the piece being filled with request body
    std::chrono::steady_clock::time_point stream_start_;  // the body's origin connection came
    std::uint64_t streamed_ = 0;  // body bytes read since then (body_min_rate)

    // The response. Its head is parsed in place, into a head kept for the exchange's life so
    // that its buffers keep their capacity.
    response_head response_;
    std::optional<head_parser<false>> res_parser_;
    bool interim_seen_ = false;    // the origin sent a 1xx in this exchange
    bool response_ended_ = false;  // the response body's last piece went to the client
    std::chrono::steady_clock::time_point origin_deadline_;  // of the origin wait in progress
    bool origin_waiting_ = false;  // waiting (plain TCP origin) for response bytes
    bool origin_timed_out_ = false;
};

}  // namespace waitroom::gateway

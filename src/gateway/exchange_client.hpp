#pragma once
// The client side of one forwarded exchange, as its connection offers it to proxy_exchange: the
// request as read and decided, its body piece by piece, the gateway's own answers, the origin's
// response written back, and the end. An HTTP/1.1 connection (client_session) and one HTTP/2
// stream (h2_stream) implement it, so the exchange and the origin side never know which protocol
// carried the request (as nghttpx's Downstream and Envoy's codec streams).
//
// The exchange calls these; the client answers each asynchronous step by calling the exchange
// back: read_body → proxy_exchange::on_read_body, send_body → on_write_response_body, a deadline
// armed with arm_timer → on_deadline.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>

#include "client_identity.hpp"
#include "common.hpp"
#include "waitroom/config/config.hpp"
#include "waitroom/gateway/message_head.hpp"
#include "waitroom/gateway/request_filter.hpp"

namespace waitroom::gateway {

class origin_connection;

// What the exchange reads of its request. The connection fills it before starting the exchange;
// everything it points to stays valid until the client's finished() or its end.
struct exchange_request {
    const request_head* head = nullptr;
    const util::canonical_request* canonical = nullptr;  // the target and Host, read once
    const request_info* info = nullptr;
    const client_identity* identity = nullptr;
    const config::config* cfg = nullptr;
    const node_runtime* runtime = nullptr;          // the runtime the request was decided under
    const filter_result* filter = nullptr;          // the room's decision (pass)
    std::chrono::steady_clock::time_point started;  // its head arrived (limits.body_deadline)
    bool body = false;                              // a body follows the head
    bool chunked = false;  // the body goes to the origin chunked (its length is not known)
};

class exchange_client {
  public:
    virtual ~exchange_client() = default;

    virtual const exchange_request& request() const = 0;
    // An owner that keeps this client, and the exchange it holds, alive in a pending handler.
    virtual std::shared_ptr<void> keep_alive() = 0;
    // The client is gone (closed, or its stream reset): nothing more is written to it.
    virtual bool gone() const = 0;

    // ---- the request body
    // All of the body has been read.
    virtual bool body_done() const = 0;
    // What is left of a body of known length.
    virtual std::optional<std::uint64_t> body_left() const = 0;
    // Reads the next piece of the body into `into` (at most `room` bytes) before `deadline`;
    // ends with proxy_exchange::on_read_body(ec, bytes). Errors: beast::error::timeout,
    // http::error::body_limit, a parse error (malformed), or the client's end.
    virtual void read_body(char* into, std::size_t room,
                           std::chrono::steady_clock::time_point deadline) = 0;

    // ---- the gateway's own answer, instead of the origin's
    // `close`: the connection cannot be kept (an unread body); `retry_after`: "" for none.
    virtual void send_error(unsigned status, std::string_view text, bool close,
                            std::string_view retry_after = {}, header_list extra = {}) = 0;

    // ---- the origin's response
    // Its head, as strip_hop_by_hop and the filter left it; `length`: its body's, when known;
    // `bodyless`: no body follows (HEAD, 204, 304).
    virtual void send_head(const response_head& res, std::optional<std::uint64_t> length,
                           bool bodyless) = 0;
    // A piece of the body (may be empty); `last`: the body ends with it. Ends with
    // proxy_exchange::on_write_response_body(ec). `data` stays valid until then.
    virtual void send_body(const char* data, std::size_t size, bool last) = 0;
    // The whole response is written: the access log, then the client's next request or its end.
    virtual void finished() = 0;
    // The response cannot be finished honestly (the origin failed in its middle): the client is
    // cut (its connection closed, or its stream reset).
    virtual void abort() = 0;

    // The exchange waits on the origin until `deadline`: proxy_exchange::on_deadline is called
    // at it or after (possibly early: the exchange re-arms).
    virtual void arm_timer(std::chrono::steady_clock::time_point deadline) = 0;
    // Runs `f` later on the client's executor (not inline).
    virtual void post(std::function<void()> f) = 0;
    // A 101 to a WebSocket request: the connection becomes a tunnel to `origin` (HTTP/1.1 only;
    // an HTTP/2 stream never asks an upgrade).
    virtual void open_tunnel(const response_head& res,
                             std::shared_ptr<origin_connection> origin) = 0;
};

}  // namespace waitroom::gateway

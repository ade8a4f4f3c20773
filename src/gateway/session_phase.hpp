#pragma once
// Where an HTTP/1.1 client connection (client_session) is in its life, as one value, and which
// step may follow which. Sans-io: the session checks may_follow on every change of phase (in
// client_session::enter), so a connection that is closing never reads a request again and one
// that waits for a head is never also answering. In order of a connection's life:
// proxy_header → handshake → first_head → filtering → exchanging or answering → idle →
// next_head → filtering …, with tunnel after a 101, and closing then closed at the end;
// handed_over when the connection speaks HTTP/2 and goes on as an h2_connection.

#include <cstdint>

namespace waitroom::gateway {

enum class session_phase : std::uint8_t {
    accepted,      // nothing read yet
    proxy_header,  // reading the PROXY header (within header_timeout)
    handshake,     // the TLS handshake (within header_timeout)
    first_head,    // the connection's first request head (header_timeout; h2c's preface may come)
    idle,          // kept alive between requests, no byte of the next one yet (keepalive_timeout)
    next_head,     // a later request's head has begun (header_timeout)
    filtering,     // the room decides on the request
    exchanging,    // proxy_exchange forwards it: its body is read and the response written here
    answering,     // an answer from memory (the room's, or the gateway's error) is being written
    tunnel,        // after a 101: bytes are copied both ways (tunnel.hpp)
    closing,       // our side has ended: TLS close_notify, or lingering after the FIN
    closed,        // the socket is closed
    handed_over,   // the connection goes on as an h2_connection, which owns its stream
};

// The phases in which the session waits for the client to start (or go on with) a request:
// a drain ends the wait, and the session's timer bounds it with header_timeout or
// keepalive_timeout.
constexpr bool waits_for_request(session_phase p) {
    return p == session_phase::accepted || p == session_phase::proxy_header ||
           p == session_phase::handshake || p == session_phase::first_head ||
           p == session_phase::idle || p == session_phase::next_head;
}

// The phases in which a head is read (the session's timer is the head's deadline).
constexpr bool reads_head(session_phase p) {
    return p == session_phase::first_head || p == session_phase::idle ||
           p == session_phase::next_head;
}

// Nothing more is written to the client (exchange_client::gone).
constexpr bool has_ended(session_phase p) {
    return p == session_phase::closing || p == session_phase::closed ||
           p == session_phase::handed_over;
}

// Whether a session in `from` may go to `to`.
constexpr bool may_follow(session_phase from, session_phase to) {
    using enum session_phase;
    if (to == closed) {
        return from != handed_over;  // close() ends any phase, once the stream is ours
    }
    if (to == closing) {
        return !has_ended(from) && from != tunnel;  // the tunnel closes the socket itself
    }
    switch (from) {
        case accepted:
            return to == proxy_header || to == handshake || to == first_head;
        case proxy_header:
            return to == handshake || to == first_head;
        case handshake:
            return to == first_head || to == handed_over;
        case first_head:
            return to == filtering || to == answering || to == handed_over;
        case idle:
            return to == next_head || to == filtering || to == answering;
        case next_head:
            return to == filtering || to == answering;
        case filtering:
            return to == exchanging || to == answering;
        case exchanging:
            return to == answering || to == tunnel || to == idle || to == next_head;
        case answering:
            return to == idle || to == next_head;
        default:
            return false;
    }
}

}  // namespace waitroom::gateway

#pragma once
// The client connections of one worker, for three bounds no single client may stretch:
// - how many connections one client holds at once (limits.max_connections_per_client), counted
//   under the address a connection is attributed to (client_slots: IPv4 whole, IPv6 by /56);
// - which connections give way when the worker nears limits.max_connections: the idle ones (a
//   kept-alive HTTP/1.1 connection waiting for its next request, an HTTP/2 one with no stream),
//   oldest first, so that accepting never stops for everyone while idle ones exist;
// - the buffer memory that partly read request heads hold (limits.header_buffer_budget): past
//   it, the heads that began earliest (the slowest to arrive) are given up with 408.
// Each connection holds a connection_place for its life. Idle places and places holding a head
// sit in intrusive lists (no allocation, O(1) each way). One per worker, on its thread: no lock.

#include <boost/intrusive/list.hpp>

#include <atomic>
#include <cstddef>
#include <optional>

#include "client_identity.hpp"
#include "client_ip.hpp"
#include "client_slots.hpp"
#include "waitroom/config/config.hpp"
#include "waitroom/metrics/metrics.hpp"

namespace waitroom::gateway {

class client_registry;
class session_base;

class connection_place {
  public:
    connection_place(client_registry& registry, session_base& owner);
    ~connection_place();
    connection_place(const connection_place&) = delete;
    connection_place& operator=(const connection_place&) = delete;

    // At accept, or once a PROXY header named the peer: counts the connection under its peer,
    // unless the peer is a trusted proxy (then the first request's head names the client).
    // False when the client holds limits.max_connections_per_client already: the connection is
    // then to be refused.
    bool claim_peer(const client_identity& identity, const config::config& cfg);
    // Counts the connection under `client` (the address its first request is attributed to)
    // unless it was attributed already; false as for claim_peer. No address, or no cap:
    // nothing to count.
    bool claim(const std::optional<ip_bytes>& client, const config::config& cfg);
    // A claim was made (counted or not).
    bool attributed() const { return attributed_; }
    // Takes over what `from` counts: the connection goes on as another session (HTTP/2 after
    // ALPN or its preface). `from` holds nothing after.
    void take_over(connection_place& from);

    // The connection waits for a next request (HTTP/2: has no stream): it may be closed to make
    // room. Near the worker's limit, the oldest idle connection is closed at once.
    void idle();
    // A partly read head holds `bytes` of buffer. Past `budget` in all, the heads that began
    // earliest are given up (session_base::give_up_head), this one too when it began first.
    void hold_head(std::size_t bytes, std::size_t budget);
    // Neither idle nor holding a head.
    void busy();

  private:
    friend class client_registry;
    enum class state { busy, idle, head };
    using hook = boost::intrusive::list_member_hook<
        boost::intrusive::link_mode<boost::intrusive::auto_unlink>>;

    void leave();  // back to busy: out of its list, its head bytes given back

    client_registry& registry_;
    session_base* owner_;
    hook hook_;
    state state_ = state::busy;
    std::size_t head_bytes_ = 0;  // counted in registry_.head_bytes_
    client_slots::address client_{};
    bool claimed_ = false;     // client_ counts this connection in registry_.counts_
    bool attributed_ = false;  // claim() was called
};

class client_registry {
  public:
    // `open`: the worker's count of open client connections; `m` (may be null) counts what is
    // shed, in slot `worker`.
    client_registry(const std::atomic<std::size_t>& open, metrics::metric_set* m, unsigned worker);
    client_registry(const client_registry&) = delete;
    client_registry& operator=(const client_registry&) = delete;

    // A connection was accepted under `max_connections` (limits.max_connections, read once per
    // accept): near it, the oldest idle connection is closed.
    void accepted(std::size_t max_connections);

    // Connections counted under `client` (its /56 for IPv6).
    std::size_t held(const ip_bytes& client) const;
    std::size_t idle_connections() const { return idle_.size(); }  // walks the list
    std::size_t head_bytes() const { return head_bytes_; }

    // How far below max_connections idle connections start to give way: 1/64 of it, at least 1.
    static std::size_t reserve(std::size_t max_connections);

  private:
    friend class connection_place;
    using list = boost::intrusive::list<
        connection_place,
        boost::intrusive::member_hook<connection_place, connection_place::hook,
                                      &connection_place::hook_>,
        boost::intrusive::constant_time_size<false>>;

    bool near_limit() const;
    void close_oldest_idle();
    void give_up_heads(std::size_t budget);
    void count(metrics::connection_shed why);

    const std::atomic<std::size_t>& open_;
    metrics::metric_set* metrics_;
    unsigned worker_;
    std::size_t limit_ = 0;  // max_connections as of the last accept (0: none yet)
    client_slots counts_;
    list idle_;   // oldest first
    list heads_;  // in the order the heads began
    std::size_t head_bytes_ = 0;
};

}  // namespace waitroom::gateway

#pragma once
// Who a client connection's requests come from: the peer (the socket's address, or the one a
// PROXY header carried) and, when that peer is among trusted_proxies, the client its
// X-Forwarded-For names and the scheme its X-Forwarded-Proto names. Whether the peer is trusted
// is decided once per config, not per request. No I/O: the session hands it what it read.

#include <boost/asio/ip/address.hpp>

#include <cstdint>
#include <optional>
#include <string>

#include "client_ip.hpp"
#include "common.hpp"
#include "waitroom/config/config.hpp"
#include "waitroom/gateway/request_filter.hpp"

namespace waitroom::gateway {

class client_identity {
  public:
    // The socket's peer (a v4-mapped address counts as IPv4; a link-local zone is dropped), also
    // put into `info` as the client.
    void from_socket(asio::ip::address addr, request_info& info);
    // The source a PROXY header carried, also put into `info` as the client.
    void from_proxy_header(const ip_bytes& source, request_info& info);

    // The client of `req` into `info` (client_ip, client_ip_bytes, tls) under `cfg`, the config
    // of runtime generation `generation`: the peer, unless the peer is a trusted proxy; then the
    // X-Forwarded-For pick, and the scheme its X-Forwarded-Proto names. `tls`: the connection
    // is TLS. Whether the peer is trusted is decided once per generation (not per config
    // address, which a later config may reuse).
    void resolve(const request_head& req, const config::config& cfg, std::uint64_t generation,
                 bool tls, request_info& info) {
        if (trust_generation_ == generation && !peer_trusted_) {
            return;  // the usual case, inline: info names the peer already
        }
        resolve_fully(req, cfg, generation, tls, info);
    }

    const std::string& peer_ip() const { return peer_ip_; }
    const std::optional<ip_bytes>& peer_bytes() const { return peer_bytes_; }
    // The peer is among `cfg`'s trusted_proxies (decided now, not cached).
    bool peer_is_trusted(const config::config& cfg) const {
        return peer_bytes_ && is_trusted(cfg.trusted_proxies, *peer_bytes_);
    }
    // As of the last resolve().
    bool peer_trusted() const { return peer_trusted_; }

  private:
    void resolve_fully(const request_head& req, const config::config& cfg, std::uint64_t generation,
                       bool tls, request_info& info);

    std::string peer_ip_;
    std::optional<ip_bytes> peer_bytes_;
    bool peer_trusted_ = false;
    std::uint64_t trust_generation_ = 0;  // the runtime peer_trusted_ was decided under (0: none)
};

}  // namespace waitroom::gateway

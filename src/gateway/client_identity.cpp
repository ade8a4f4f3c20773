#include "client_identity.hpp"

#include <boost/beast/core/string.hpp>

#include <array>
#include <string_view>

#include "forward_headers.hpp"
#include "waitroom/room/router.hpp"

namespace waitroom::gateway {

void client_identity::from_socket(asio::ip::address addr, request_info& info) {
    if (addr.is_v6() && addr.to_v6().is_v4_mapped()) {
        addr = asio::ip::make_address_v4(asio::ip::v4_mapped, addr.to_v6());
    } else if (addr.is_v6() && addr.to_v6().scope_id() != 0) {
        // A link-local peer's zone (fe80::1%eth0) names our interface, not the client: it is
        // dropped, so that the address parses for the client caps and the IP rules.
        auto v6 = addr.to_v6();
        v6.scope_id(0);
        addr = v6;
    }
    info.client_ip = addr.to_string();
    info.client_ip_bytes = room::parse_ip(info.client_ip);
    peer_ip_ = info.client_ip;
    peer_bytes_ = info.client_ip_bytes;
}

void client_identity::from_proxy_header(const ip_bytes& source, request_info& info) {
    peer_bytes_ = source;
    format_ip(source, peer_ip_);
    info.client_ip = peer_ip_;
    info.client_ip_bytes = peer_bytes_;
}

void client_identity::resolve_fully(const request_head& req, const config::config& cfg,
                                    std::uint64_t generation, bool tls, request_info& info) {
    if (trust_generation_ != generation) {
        trust_generation_ = generation;
        peer_trusted_ = peer_bytes_ && is_trusted(cfg.trusted_proxies, *peer_bytes_);
        info.client_ip = peer_ip_;
        info.client_ip_bytes = peer_bytes_;
        info.tls = tls;
    }
    if (!peer_trusted_) {
        return;
    }
    // The last fields count (a chain is read right to left); past 16, the first ones are cut.
    std::array<std::string_view, 16> chain;
    std::size_t n = 0;
    std::string_view proto;
    for (const auto& f : req) {
        if (f.name() != http::field::unknown) {
            continue;
        }
        if (beast::iequals(f.name_string(), "x-forwarded-for")) {
            if (n == chain.size()) {
                std::move(chain.begin() + 1, chain.end(), chain.begin());
                --n;
            }
            chain[n++] = f.value();
        } else if (proto.empty() && beast::iequals(f.name_string(), "x-forwarded-proto")) {
            proto = f.value();
        }
    }
    if (auto client = select_client({chain.data(), n}, cfg.trusted_proxies)) {
        info.client_ip_bytes = client;
        format_ip(*client, info.client_ip);
    } else {
        info.client_ip = peer_ip_;
        info.client_ip_bytes = peer_bytes_;
    }
    // The first proxy's word: "https, http" is what the visitor used, then a hop inside.
    proto = trim_ows(proto.substr(0, proto.find(',')));
    info.tls = beast::iequals(proto, "https") || (!beast::iequals(proto, "http") && tls);
}

}  // namespace waitroom::gateway

#include "endpoints.hpp"

#include <boost/asio/ip/address.hpp>

#include <system_error>

namespace waitroom::server {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using reuse_port = asio::detail::socket_option::boolean<SOL_SOCKET, SO_REUSEPORT>;

namespace {

std::string where(const config::listener& l) {
    bool v6 = l.host.find(':') != std::string::npos;
    return (v6 ? "[" + l.host + "]" : l.host) + ":" + std::to_string(l.port);
}

asio::ip::address resolve_host(asio::io_context& ioc, const config::listener& l) {
    boost::system::error_code ec;
    auto addr = asio::ip::make_address(l.host, ec);
    if (!ec) {
        return addr;
    }
    tcp::resolver resolver(ioc);
    auto results = resolver.resolve(l.host, "", ec);
    if (ec || results.empty()) {
        if (!ec) {
            ec = boost::asio::error::host_not_found;
        }
        throw std::system_error(ec, "listen " + where(l) + ": cannot resolve host");
    }
    return results.begin()->endpoint().address();
}

}  // namespace

resolved_listeners resolve_listeners(asio::io_context& ioc,
                                     const std::vector<config::listener>& listen) {
    resolved_listeners out;
    for (const auto& l : listen) {
        tcp::endpoint ep(resolve_host(ioc, l), l.port);
        if (l.port == 0) {
            tcp::acceptor probe(ioc);
            boost::system::error_code ec;
            probe.open(ep.protocol(), ec);
            if (!ec) {
                probe.set_option(tcp::acceptor::reuse_address(true), ec);
            }
            if (!ec) {
                probe.set_option(reuse_port(true), ec);
            }
            if (!ec) {
                probe.bind(ep, ec);
            }
            if (ec) {
                throw std::system_error(ec, "listen " + where(l));
            }
            ep = probe.local_endpoint();
            out.reservations.push_back(std::move(probe));
        }
        out.endpoints.push_back(ep);
    }
    return out;
}

std::string listener_url(const tcp::endpoint& ep, bool tls) {
    std::string host = ep.address().to_string();
    if (ep.address().is_v6()) {
        host = "[" + host + "]";
    }
    return std::string(tls ? "https://" : "http://") + host + ":" + std::to_string(ep.port());
}

}  // namespace waitroom::server

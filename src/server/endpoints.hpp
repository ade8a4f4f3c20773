#pragma once
// Turns the configured listeners into concrete endpoints once, for every worker: a port-0
// listener is bound here to learn its port, so all workers' SO_REUSEPORT acceptors share it.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <string>
#include <vector>

#include "waitroom/config/config.hpp"

namespace waitroom::server {

struct resolved_listeners {
    std::vector<boost::asio::ip::tcp::endpoint> endpoints;  // parallel to the config's listen
    // Port-0 reservations: bound (not listening) until the workers have bound the same ports,
    // so no other process takes a port between the probe and the workers' bind.
    std::vector<boost::asio::ip::tcp::acceptor> reservations;
};

// Throws std::system_error naming the listener when an address does not resolve or bind.
resolved_listeners resolve_listeners(boost::asio::io_context& ioc,
                                     const std::vector<config::listener>& listen);

// "http://127.0.0.1:8080" / "https://[::1]:8443": the form scripts and tests parse.
std::string listener_url(const boost::asio::ip::tcp::endpoint& ep, bool tls);

}  // namespace waitroom::server

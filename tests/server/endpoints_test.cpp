#include "server/endpoints.hpp"

#include <gtest/gtest.h>

namespace waitroom::server {
namespace {

namespace asio = boost::asio;

TEST(Endpoints, ResolvesPortZeroToOneConcretePortAndHoldsIt) {
    asio::io_context ioc;
    config::listener l;
    l.host = "127.0.0.1";
    l.port = 0;
    auto r = resolve_listeners(ioc, {l});
    ASSERT_EQ(r.endpoints.size(), 1u);
    EXPECT_NE(r.endpoints[0].port(), 0);
    EXPECT_EQ(r.endpoints[0].address().to_string(), "127.0.0.1");
    // The reservation holds the port (bound, SO_REUSEPORT) until the workers have bound it.
    ASSERT_EQ(r.reservations.size(), 1u);
    EXPECT_EQ(r.reservations[0].local_endpoint().port(), r.endpoints[0].port());
}

TEST(Endpoints, KeepsAConcretePortAsConfigured) {
    asio::io_context ioc;
    config::listener l;
    l.host = "::1";
    l.port = 8443;
    auto r = resolve_listeners(ioc, {l});
    ASSERT_EQ(r.endpoints.size(), 1u);
    EXPECT_EQ(r.endpoints[0].port(), 8443);
    EXPECT_TRUE(r.reservations.empty());
}

TEST(Endpoints, FormatsListenerUrlsThatScriptsParse) {
    using asio::ip::make_address;
    using tcp = asio::ip::tcp;
    EXPECT_EQ(listener_url(tcp::endpoint(make_address("127.0.0.1"), 8080), false),
              "http://127.0.0.1:8080");
    EXPECT_EQ(listener_url(tcp::endpoint(make_address("::1"), 8443), true), "https://[::1]:8443");
}

}  // namespace
}  // namespace waitroom::server

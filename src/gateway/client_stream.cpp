#include "client_stream.hpp"

#include "alpn.hpp"

namespace waitroom::gateway {

client_stream::client_stream(tcp_socket&& socket) : plain_(std::in_place, std::move(socket)) {}

client_stream::client_stream(tcp_socket&& socket, ssl::context& context)
    : tls_(std::in_place, std::move(socket), context) {}

client_stream::client_stream(client_stream&& other) noexcept
    : plain_(std::move(other.plain_)), tls_(std::move(other.tls_)) {
    // socket_reader holds a queued operation in place: it cannot move, and need not, since a
    // connection is handed on only between reads.
    BOOST_ASSERT(!other.reader_.pending());
}

std::string_view client_stream::alpn() const {
    if (!tls_) {
        return {};
    }
    return chosen_alpn(const_cast<ssl::stream<tcp_stream>&>(*tls_).native_handle());
}

void client_stream::close() {
    error_code ignored;
    socket().shutdown(asio::socket_base::shutdown_both, ignored);
    socket().close(ignored);
}

}  // namespace waitroom::gateway

#include "origin_connection.hpp"

#include <sys/socket.h>

#include <cerrno>

namespace waitroom::gateway {

origin_connection::origin_connection(executor_type ex, ssl::context* tls) : idle_timer(ex) {
    // Beast reads at most the buffer's free capacity (>= 512 bytes) per recv: without room a
    // 16 KiB body takes some 32 system calls.
    buffer_.reserve(16 * 1024);
    if (tls != nullptr) {
        tls_.emplace(ex, *tls);
    } else {
        tcp_.emplace(ex);
    }
}

bool origin_connection::looks_dead(bool peek) {
    auto& sock = lowest().socket();
    if (!sock.is_open()) {
        return true;
    }
    if (buffer_.size() > 0) {
        return true;  // the origin sent bytes nobody asked for
    }
    if (!peek) {
        return false;
    }
    char byte = 0;
    ssize_t n = ::recv(sock.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0) {
        return true;  // orderly close
    }
    if (n > 0) {
        return true;  // unsolicited bytes (or a TLS close_notify)
    }
    return errno != EAGAIN && errno != EWOULDBLOCK;
}

void origin_connection::close() {
    error_code ignored;
    idle_timer.cancel();
    lowest().socket().shutdown(asio::socket_base::shutdown_both, ignored);
    lowest().socket().close(ignored);
}

}  // namespace waitroom::gateway

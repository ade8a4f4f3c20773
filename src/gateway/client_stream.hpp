#pragma once
// A client connection's byte stream, plain TCP or TLS over it, behind one type: the sessions
// (client_session, h2_connection, tunnel) read and write it through one call each, and only here
// is it decided which stream carries the bytes. It is an Asio stream (async_read_some,
// async_write_some, get_executor), so asio::async_write composes over it. Reads a session makes
// itself go through read_some, which on plain TCP uses socket_reader (socket_reader.hpp): one
// operation, no Beast layers, and a try of the socket only where it can find bytes.

#include <boost/asio/post.hpp>
#include <boost/asio/ssl/stream.hpp>

#include <memory>
#include <optional>
#include <string_view>
#include <utility>

#include "common.hpp"
#include "socket_reader.hpp"

namespace waitroom::gateway {

class client_stream {
  public:
    using executor_type = tcp_stream::executor_type;

    // Plain TCP.
    explicit client_stream(tcp_socket&& socket);
    // TLS, served from `context` (the handshake may move the connection to another context by
    // SNI, certificate_set.hpp).
    client_stream(tcp_socket&& socket, ssl::context& context);
    // A session hands its connection on (to h2_connection) with no read of its own under way.
    client_stream(client_stream&& other) noexcept;
    client_stream& operator=(client_stream&&) = delete;

    bool is_tls() const { return tls_.has_value(); }
    tcp_stream& lowest() { return tls_ ? tls_->next_layer() : *plain_; }
    tcp_socket& socket() { return lowest().socket(); }
    executor_type get_executor() { return lowest().get_executor(); }
    // The TLS session (null on plain TCP).
    SSL* native_handle() { return tls_ ? tls_->native_handle() : nullptr; }
    // The protocol the handshake chose by ALPN: "" for none, and on plain TCP.
    std::string_view alpn() const;

    // ---- reading and writing, as any Asio stream
    template <class Buffers, class Handler>
    void async_read_some(const Buffers& into, Handler&& done) {
        if (tls_) {
            return tls_->async_read_some(into, std::forward<Handler>(done));
        }
        plain_->async_read_some(into, std::forward<Handler>(done));
    }
    template <class Buffers, class Handler>
    void async_write_some(const Buffers& from, Handler&& done) {
        if (tls_) {
            return tls_->async_write_some(from, std::forward<Handler>(done));
        }
        plain_->async_write_some(from, std::forward<Handler>(done));
    }

    // A session's own read of what the client has, up to `into` (not empty), then
    // `(owner->*Done)(ec, n)`: on plain TCP by socket_reader with the try that `k` says, on TLS
    // by the stream's read (which decrypts what the last read buffered before it waits). The
    // session's own timer bounds it: the stream's deadline is left out. End of stream is
    // asio::error::eof; a cancel of the socket ends it with operation_aborted.
    template <auto Done, class Owner>
    void read_some(asio::mutable_buffer into, socket_reader::kind k, std::shared_ptr<Owner> owner) {
        if (tls_) {
            lowest().expires_never();
            Owner* target = owner.get();
            return tls_->async_read_some(
                into, [target, keep = std::move(owner)](error_code ec, std::size_t n) {
                    (target->*Done)(ec, n);
                });
        }
        reader_.start<Done>(socket(), into, k, std::move(owner));
    }
    // A read_some is under way.
    bool reading() const { return reader_.pending(); }

    // ---- the TLS handshake and the end of the stream
    // The server's handshake (TLS only), taking `already_read` (bytes read past a PROXY header)
    // as the start of the ClientHello.
    template <class Handler>
    void async_handshake(asio::const_buffer already_read, Handler&& done) {
        tls_->async_handshake(
            ssl::stream_base::server, already_read,
            [done = std::forward<Handler>(done)](error_code ec, std::size_t) mutable { done(ec); });
    }
    // Ends our side of the stream: TLS sends its close_notify (within `timeout`), plain TCP its
    // FIN at once; then `done(ec)`, never from within this call.
    template <class Handler>
    void async_shutdown(std::chrono::steady_clock::duration timeout, Handler&& done) {
        if (tls_) {
            lowest().expires_after(timeout);
            return tls_->async_shutdown(std::forward<Handler>(done));
        }
        error_code ec;
        socket().shutdown(asio::socket_base::shutdown_send, ec);
        asio::post(get_executor(),
                   [done = std::forward<Handler>(done), ec]() mutable { done(ec); });
    }
    // Closes the socket at once (both directions); what is pending ends with operation_aborted.
    void close();

  private:
    std::optional<tcp_stream> plain_;
    std::optional<ssl::stream<tcp_stream>> tls_;
    socket_reader reader_;  // plain TCP: the session's own reads
};

}  // namespace waitroom::gateway

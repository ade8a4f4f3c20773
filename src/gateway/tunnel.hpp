#pragma once
// The byte tunnel after a WebSocket upgrade: copies bytes both ways between the client stream
// and the origin connection until either side ends or neither sends anything for
// `idle_timeout`, then closes both. Header-only because it is a template over the origin's
// stream type (plain or TLS); the client's is a client_stream. The client session lives as long
// as its tunnel, so an open tunnel counts in limits.max_connections.

#include <boost/asio/buffer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/stream_traits.hpp>

#include <array>
#include <chrono>
#include <memory>

#include "client_stream.hpp"
#include "common.hpp"
#include "origin_connection.hpp"
#include "origin_servers.hpp"

namespace waitroom::gateway {

template <class Origin>
class tunnel : public std::enable_shared_from_this<tunnel<Origin>> {
  public:
    // `owner` keeps the client stream (and its buffer) alive; `c` owns the origin stream.
    tunnel(std::shared_ptr<void> owner, client_stream& client, beast::flat_buffer& client_left,
           std::shared_ptr<origin_connection> c, Origin& origin,
           std::shared_ptr<origin_servers> pool, std::chrono::steady_clock::duration idle_timeout)
        : owner_(std::move(owner)),
          client_(client),
          client_left_(client_left),
          conn_(std::move(c)),
          origin_(origin),
          pool_(std::move(pool)),
          idle_timeout_(idle_timeout),
          idle_timer_(client.get_executor()) {}

    ~tunnel() { pool_->release(std::move(conn_), false); }

    void run() {
        client_.lowest().expires_never();
        beast::get_lowest_layer(origin_).expires_never();
        last_activity_ = std::chrono::steady_clock::now();
        watch_idle();
        start(client_, origin_, client_left_, up_.data());
        start(origin_, client_, conn_->buffer(), down_.data());
    }

  private:
    static constexpr std::size_t piece_size = 16 * 1024;

    // Sends what was already read past the HTTP message, then copies.
    template <class From, class To>
    void start(From& from, To& to, beast::flat_buffer& left, char* buf) {
        if (left.size() == 0) {
            return pump(from, to, buf);
        }
        asio::async_write(
            to, left.data(),
            [self = this->shared_from_this(), &from, &to, &left, buf](error_code ec, std::size_t) {
                left.consume(left.size());
                if (ec) {
                    return self->stop(ec);
                }
                self->pump(from, to, buf);
            });
    }

    template <class From, class To>
    void pump(From& from, To& to, char* buf) {
        from.async_read_some(
            asio::buffer(buf, piece_size),
            [self = this->shared_from_this(), &from, &to, buf](error_code ec, std::size_t n) {
                if (ec) {
                    return self->stop(ec);
                }
                self->last_activity_ = std::chrono::steady_clock::now();
                asio::async_write(to, asio::buffer(buf, n),
                                  [self, &from, &to, buf](error_code wec, std::size_t) {
                                      if (wec) {
                                          return self->stop(wec);
                                      }
                                      self->pump(from, to, buf);
                                  });
            });
    }

    // One timer, armed for the idle deadline of the last activity it saw; bytes that came
    // meanwhile move the deadline when it fires (no timer operation per read).
    void watch_idle() {
        idle_timer_.expires_at(last_activity_ + idle_timeout_);
        idle_timer_.async_wait([self = this->shared_from_this()](error_code ec) {
            if (ec || self->stopped_) {
                return;
            }
            if (std::chrono::steady_clock::now() - self->last_activity_ >= self->idle_timeout_) {
                return self->stop(beast::error::timeout);
            }
            self->watch_idle();
        });
    }

    void stop(error_code ec) {
        if (stopped_) {
            return;
        }
        stopped_ = true;
        idle_timer_.cancel();
        fail(ec, "tunnel");
        client_.close();
        conn_->close();
    }

    std::shared_ptr<void> owner_;
    client_stream& client_;
    beast::flat_buffer& client_left_;
    std::shared_ptr<origin_connection> conn_;
    Origin& origin_;
    std::shared_ptr<origin_servers> pool_;
    std::chrono::steady_clock::duration idle_timeout_;
    steady_timer idle_timer_;
    std::chrono::steady_clock::time_point last_activity_;
    std::array<char, piece_size> up_{};
    std::array<char, piece_size> down_{};
    bool stopped_ = false;
};

}  // namespace waitroom::gateway

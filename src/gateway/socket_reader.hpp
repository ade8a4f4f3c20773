#pragma once
// The one way the sessions read a plain TCP socket themselves: one read at a time, which may tell
// the reactor that a short read found the socket empty, so that the socket's next read waits for
// epoll instead of trying (`kind` says when that is safe). edge_read (edge_read.hpp) implements it
// on Asio's internal reactor interface, pinned to Boost 1.81: nothing of that shows here, so a
// Boost update re-checks edge_read.hpp and edge_read.cpp and no session code.

#include <boost/asio/buffer.hpp>

#include <cstddef>
#include <memory>

#include "common.hpp"

namespace waitroom::gateway {

class socket_reader {
  public:
    enum class kind {
        // The first read of a message the peer sends only when asked (an origin's response):
        // queued without a try if the socket was last found empty; a short read finds it empty.
        answer,
        // Goes on with a message: tries first (an end of stream hidden by the last short read
        // shows now); a short read finds the socket empty.
        more,
        // As Asio reads: a short read leaves the next read to try (for a socket Asio's own reads
        // take over, such as an upgraded connection's).
        any,
    };

    socket_reader();
    ~socket_reader();
    socket_reader(const socket_reader&) = delete;
    socket_reader& operator=(const socket_reader&) = delete;

    // Reads what `socket` has, up to `into` (not empty), then calls `(target->*Done)(ec, n)`
    // from the socket's executor (never from within start), keeping `keep` alive until then.
    // End of file is `asio::error::eof`; cancel() or close() of the socket ends it with
    // operation_aborted. One read at a time per socket_reader.
    template <auto Done, class Target>
    void start(tcp_socket& socket, asio::mutable_buffer into, kind k, Target* target,
               std::shared_ptr<void> keep) {
        start_op(socket, into, k, std::move(keep), target,
                 [](void* t, const error_code& ec, std::size_t n) {
                     (static_cast<Target*>(t)->*Done)(ec, n);
                 });
    }

    // The same for an owner that is its own target.
    template <auto Done, class Owner>
    void start(tcp_socket& socket, asio::mutable_buffer into, kind k,
               std::shared_ptr<Owner> owner) {
        Owner* target = owner.get();
        start<Done>(socket, into, k, target, std::move(owner));
    }

    // A read is under way (its callback has not run yet).
    bool pending() const;

  private:
    using callback = void (*)(void* target, const error_code& ec, std::size_t n);

    void start_op(tcp_socket& socket, asio::mutable_buffer into, kind k, std::shared_ptr<void> keep,
                  void* target, callback done);

    // edge_read's state lives in place (no allocation, as a member would): its layout is Asio's
    // business, so only edge_read.cpp names it, and checks that it fits.
    static constexpr std::size_t impl_size = 144;
    alignas(void*) std::byte impl_[impl_size];
};

}  // namespace waitroom::gateway

#pragma once
// How socket_reader (socket_reader.hpp) reads, and the one place that depends on Asio's
// internals: only edge_read.cpp includes this header. One read at a time of a plain TCP socket,
// with nginx's economy on edge-triggered epoll where it is safe: a read that comes back shorter
// than its buffer took all the kernel had, so the socket's next read need not be tried before
// epoll reports new bytes.
//
// Asio 1.26 (Boost 1.81) tries every read at once and learns that a socket is empty only from
// the EAGAIN of that try (or re-arms the descriptor with epoll_ctl when asked to wait first):
// one wasted system call per wait. Its reactor keeps the right flag (try_speculative_: "an
// event came since this socket was found empty") but sets it only at end of file. This read is
// an operation on that same reactor, queued on the socket like Asio's own: cancel(), close(),
// timers and Asio's other reads on the socket work as before. Only its perform step may report a
// short read as "done and exhausted", which makes the reactor queue the socket's next read
// without a try until epoll says bytes arrived.
//
// The catch: a peer's end of stream that arrives together with its last bytes is reported by
// the same epoll event, and the short read that takes the bytes hides it (Asio does not ask for
// EPOLLRDHUP). A socket marked empty then waits for an event that never comes. So the sessions
// skip the try only where that is safe or made safe: the first read of an origin's answer (an
// origin closes a kept-alive connection only after saying so, or long after its last answer,
// which is an event of its own), and a kept-alive client's next request, which the worker's
// sweep tries once if it waits longer than a sweep interval (a client may half-close right
// after its request). Reads that go on with a message try first, so a cut-short message is
// seen at once.

#include <boost/asio/detail/reactor.hpp>
#include <boost/asio/detail/reactor_op.hpp>
#include <boost/asio/version.hpp>

#include <cstddef>
#include <memory>

#include "common.hpp"
#include "socket_reader.hpp"

namespace waitroom::gateway {

static_assert(BOOST_ASIO_VERSION == 102600,
              "edge_read uses Asio 1.26's reactor interface (Boost 1.81): re-check it "
              "(README, \"Dependencies and the Boost version\")");
static_assert(std::is_same_v<asio::detail::reactor, asio::detail::epoll_reactor>,
              "edge_read expects Asio's epoll reactor");

// socket_reader's state: one read operation, queued on the socket's reactor as Asio's own are.
class edge_read {
  public:
    using kind = socket_reader::kind;
    using callback = void (*)(void* target, const error_code& ec, std::size_t n);

    // socket_reader::start, with the owner type erased: `done(target, ec, n)` runs from the
    // socket's executor, `keep` is released after it.
    void start(tcp_socket& socket, asio::mutable_buffer into, kind k, std::shared_ptr<void> keep,
               void* target, callback done);

    bool pending() const { return op_.pending; }

  private:
    struct op : asio::detail::reactor_op {
        op();
        static status perform(asio::detail::reactor_op* base);
        static void complete(void* owner, asio::detail::scheduler_operation* base,
                             const error_code&, std::size_t);

        int fd = -1;
        char* data = nullptr;
        std::size_t size = 0;
        std::shared_ptr<void> keep;  // the owner, until the callback has run
        void* target = nullptr;
        callback on_done = nullptr;
        bool short_is_empty = false;  // a short read reports "done and exhausted"
        bool pending = false;
    };

    op op_;
    asio::detail::reactor* reactor_ = nullptr;  // of the socket's io_context, found once
};

}  // namespace waitroom::gateway

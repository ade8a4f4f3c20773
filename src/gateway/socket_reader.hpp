#pragma once
// A plain socket as a read stream for Beast's readers. They pass the free space of a
// flat_buffer, one buffer, as a sequence type Asio cannot tell is a single buffer, so Asio reads
// it with recvmsg; handed over as the one buffer it is, Asio reads with recv (no msghdr or iovec
// for the kernel to copy in).

#include <boost/asio/buffer.hpp>

#include <cstddef>
#include <utility>

#include "common.hpp"

namespace waitroom::gateway {

class socket_reader {
  public:
    using executor_type = tcp_socket::executor_type;

    explicit socket_reader(tcp_socket* s = nullptr) : s_(s) {}

    executor_type get_executor() { return s_->get_executor(); }

    // Reads into the sequence's first buffer (a read may always stop short of the whole).
    template <class MutableBufferSequence, class Handler>
    auto async_read_some(const MutableBufferSequence& buffers, Handler&& handler) {
        return s_->async_read_some(first(buffers), std::forward<Handler>(handler));
    }

  private:
    template <class MutableBufferSequence>
    static asio::mutable_buffer first(const MutableBufferSequence& buffers) {
        auto it = asio::buffer_sequence_begin(buffers);
        auto end = asio::buffer_sequence_end(buffers);
        for (; it != end; ++it) {
            asio::mutable_buffer b(*it);
            if (b.size() > 0) {
                return b;
            }
        }
        return {};
    }

    tcp_socket* s_;
};

}  // namespace waitroom::gateway

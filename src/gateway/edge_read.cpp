#include "edge_read.hpp"

#include <boost/asio/detail/socket_ops.hpp>

#include <cerrno>
#include <new>
#include <sys/socket.h>

namespace waitroom::gateway {

namespace {

// basic_socket keeps its implementation (descriptor, state, reactor data) protected; a class
// derived from it may name the member and read it through any socket.
struct socket_access : tcp_socket {
    static auto& implementation(tcp_socket& s) {
        return (s.*&socket_access::impl_).get_implementation();
    }
};

}  // namespace

edge_read::op::op() : asio::detail::reactor_op(error_code(), &op::perform, &op::complete) {}

asio::detail::reactor_op::status edge_read::op::perform(asio::detail::reactor_op* base) {
    auto* o = static_cast<op*>(base);
    for (;;) {
        const ssize_t n = ::recv(o->fd, o->data, o->size, 0);
        if (n > 0) {
            o->ec_ = {};
            o->bytes_transferred_ = static_cast<std::size_t>(n);
            // Short: the kernel had no more. Reported so, the reactor waits for epoll before
            // trying this socket again (a full read leaves the next try to go ahead at once).
            return o->short_is_empty && o->bytes_transferred_ < o->size ? done_and_exhausted
                                                                          : done;
        }
        if (n == 0) {
            o->ec_ = asio::error::eof;
            o->bytes_transferred_ = 0;
            return done_and_exhausted;
        }
        if (errno == EINTR) {
            continue;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            return not_done;  // stays queued until epoll reports the socket readable
        }
        o->ec_ = error_code(errno, asio::error::get_system_category());
        o->bytes_transferred_ = 0;
        return done;
    }
}

void edge_read::op::complete(void* owner, asio::detail::scheduler_operation* base,
                             const error_code&, std::size_t) {
    auto* o = static_cast<op*>(base);
    o->pending = false;
    // The callback may start the next read on this very operation: take what it needs first.
    const error_code ec = o->ec_;
    const std::size_t n = o->bytes_transferred_;
    const auto keep = std::move(o->keep);
    if (owner != nullptr) {  // null: the io_context is being destroyed with the read queued
        o->on_done(o->target, ec, n);
    }
}

void edge_read::start(tcp_socket& socket, asio::mutable_buffer into, kind k,
                      std::shared_ptr<void> keep, void* target, callback done) {
    BOOST_ASSERT(into.size() > 0);  // recv of nothing would read as end of file
    auto& impl = socket_access::implementation(socket);
    if (reactor_ == nullptr) {
        reactor_ = &asio::use_service<asio::detail::reactor>(socket.get_executor().context());
    }
    op_.ec_ = asio::error::operation_aborted;  // what a reactor shutting down ends it with
    op_.bytes_transferred_ = 0;
    op_.fd = impl.socket_;
    op_.data = static_cast<char*>(into.data());
    op_.size = into.size();
    op_.keep = std::move(keep);
    op_.target = target;
    op_.on_done = done;
    op_.short_is_empty = k != kind::any;
    op_.pending = true;
    // As Asio's own operations do: the descriptor goes non-blocking underneath the socket's
    // user-visible mode.
    if ((impl.state_ & asio::detail::socket_ops::non_blocking) == 0 &&
        !asio::detail::socket_ops::set_internal_non_blocking(impl.socket_, impl.state_, true,
                                                             op_.ec_)) {
        return reactor_->post_immediate_completion(&op_, true);
    }
    if (k == kind::more && impl.reactor_data_ != nullptr) {
        // Try now even if the reactor believes the socket empty (see the header).
        if (const auto status = op::perform(&op_); status != op::not_done) {
            return reactor_->post_immediate_completion(&op_, true);
        }
    }
    // A closed socket has no reactor data: the reactor completes the read with bad_descriptor.
    reactor_->start_op(asio::detail::reactor::read_op, impl.socket_, impl.reactor_data_, &op_,
                       /*is_continuation=*/true, /*allow_speculative=*/true);
}

// ---- socket_reader, implemented by edge_read --------------------------------------------------

static_assert(sizeof(edge_read) <= sizeof(socket_reader) && alignof(edge_read) <= alignof(void*),
              "socket_reader::impl_size no longer holds edge_read: set it to sizeof(edge_read)");

namespace {

edge_read& edge_of(std::byte* storage) {
    return *std::launder(reinterpret_cast<edge_read*>(storage));
}

const edge_read& edge_of(const std::byte* storage) {
    return *std::launder(reinterpret_cast<const edge_read*>(storage));
}

}  // namespace

socket_reader::socket_reader() {
    ::new (static_cast<void*>(impl_)) edge_read();
}

socket_reader::~socket_reader() {
    edge_of(impl_).~edge_read();
}

bool socket_reader::pending() const {
    return edge_of(impl_).pending();
}

void socket_reader::start_op(tcp_socket& socket, asio::mutable_buffer into, kind k,
                             std::shared_ptr<void> keep, void* target, callback done) {
    edge_of(impl_).start(socket, into, k, std::move(keep), target, done);
}

}  // namespace waitroom::gateway

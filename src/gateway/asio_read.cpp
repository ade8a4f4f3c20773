// socket_reader in the io_uring build (WAITROOM_IO_URING): Asio's own async_read_some. edge_read
// builds on the epoll reactor's internals, which that build does not have; io_uring completes a
// read once bytes are there, so no read is tried in vain and `kind` has nothing to save.

#include <new>

#include "socket_reader.hpp"

namespace waitroom::gateway {

namespace {

struct asio_read {
    bool pending = false;
};

static_assert(sizeof(asio_read) <= 144 && alignof(asio_read) <= alignof(void*));

asio_read& read_of(std::byte* storage) {
    return *std::launder(reinterpret_cast<asio_read*>(storage));
}

const asio_read& read_of(const std::byte* storage) {
    return *std::launder(reinterpret_cast<const asio_read*>(storage));
}

}  // namespace

socket_reader::socket_reader() {
    ::new (static_cast<void*>(impl_)) asio_read();
}

socket_reader::~socket_reader() {
    read_of(impl_).~asio_read();
}

bool socket_reader::pending() const {
    return read_of(impl_).pending;
}

void socket_reader::start_op(tcp_socket& socket, asio::mutable_buffer into, kind,
                             std::shared_ptr<void> keep, void* target, callback done) {
    asio_read& r = read_of(impl_);
    r.pending = true;
    // `keep` owns this reader: `r` stays valid until the handler has run. The callback may start
    // the next read, so `pending` is cleared first, as edge_read does.
    socket.async_read_some(
        into, [&r, keep = std::move(keep), target, done](const error_code& ec, std::size_t n) {
            r.pending = false;
            done(target, ec, n);
        });
}

}  // namespace waitroom::gateway

#pragma once
// The memory a connection relays bodies through, a piece at a time in either direction, made on
// first use and kept for the connection's life. A request body may be buffered whole before its
// origin connection is taken (up to limits.request_buffer, see proxy_exchange); what the buffer
// holds past one relay piece then counts in the worker's limits.request_buffer_budget until
// give_back().

#include <cstddef>
#include <memory>

#include "worker_context.hpp"

namespace waitroom::gateway {

class relay_buffer {
  public:
    // One relay piece: what a body is read and written in when nothing asks for more.
    static constexpr std::size_t piece_size = 16 * 1024;

    explicit relay_buffer(worker_context& worker) : worker_(worker) {}
    relay_buffer(const relay_buffer&) = delete;
    relay_buffer& operator=(const relay_buffer&) = delete;

    // The buffer, with room for at least `room` bytes.
    char* get(std::size_t room = piece_size) {
        if (capacity_ < room) {
            grow(room);
        }
        return data_.get();
    }

    // Room for `want` body bytes within the worker's limits.request_buffer_budget (`budget`),
    // else one relay piece's worth. Call get() with the answer.
    std::size_t room_for(std::size_t want, std::size_t budget);

    // Gives back what the budget lent (and the memory with it).
    void give_back() {
        if (budget_held_ != 0) {
            give_back_budget();
        }
    }

  private:
    void grow(std::size_t room);
    void give_back_budget();

    worker_context& worker_;
    std::unique_ptr<char[]> data_;
    std::size_t capacity_ = 0;
    std::size_t budget_held_ = 0;  // of capacity_, past a relay piece: in worker_.buffered_bodies
};

}  // namespace waitroom::gateway

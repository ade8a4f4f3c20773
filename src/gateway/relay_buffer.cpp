#include "relay_buffer.hpp"

#include <algorithm>

namespace waitroom::gateway {

void relay_buffer::grow(std::size_t room) {
    // Once per connection (again only if a reload raised limits.request_buffer). Not
    // zero-filled: a page is committed only when bytes land in it, so a connection that
    // announces a body and sends little holds little memory.
    data_ = std::make_unique_for_overwrite<char[]>(room);
    capacity_ = room;
}

std::size_t relay_buffer::room_for(std::size_t want, std::size_t budget) {
    if (want <= std::max(capacity_, piece_size)) {
        return want;  // no more than what is held already
    }
    const std::size_t extra = want - piece_size - budget_held_;
    if (worker_.buffered_bodies + extra > budget) {
        return std::max(capacity_, piece_size);
    }
    worker_.buffered_bodies += extra;
    budget_held_ += extra;
    return want;
}

void relay_buffer::give_back_budget() {
    worker_.buffered_bodies -= budget_held_;
    budget_held_ = 0;
    data_.reset();
    capacity_ = 0;
}

}  // namespace waitroom::gateway

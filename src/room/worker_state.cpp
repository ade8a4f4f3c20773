// A worker's view of the node's room state: the snapshot it decides on, refreshed once per sync,
// and the counters it adds to until the sync task takes them.
#include "waitroom/room/engine.hpp"

#include <algorithm>

namespace waitroom::room {

worker_state::room_view& worker_state::view(const engine& e, const compiled_room& r) {
    std::uint64_t v = node_.version();
    if (v != snap_version_ || engine_generation_ != e.generation()) {
        bool new_snapshot = v != snap_version_;
        snap_ = node_.snapshot();
        snap_version_ = v;
        engine_generation_ = e.generation();
        views_.assign(e.rooms().size(), room_view{});
        for (const auto& room : e.rooms()) {
            const room_state* st = snap_->find(room.id());
            views_[room.index()] = room_view{st != nullptr ? st : &empty_, &node_.pool(room.id()),
                                             &deltas_[room.id()]};
        }
        if (new_snapshot) {
            // Once per sync, hand the deltas over; never wait for the sync task.
            node_.try_submit(deltas_);
        }
    }
    return views_[r.index()];
}

void worker_state::flush() {
    node_.submit(deltas_);
}

bool worker_state::ticket_ring::contains(std::uint64_t ticket) const {
    const auto end = tickets.begin() + static_cast<std::ptrdiff_t>(std::min(written, tickets.size()));
    return std::find(tickets.begin(), end, ticket) != end;
}

void worker_state::ticket_ring::remember(std::uint64_t ticket) {
    if (!contains(ticket)) {
        tickets[written++ % tickets.size()] = ticket;
    }
}

bool worker_state::window_tickets::first_in(std::uint64_t ticket, std::int64_t window) {
    // Tickets are random draws sealed in the cookie; the multiply spreads them anyway.
    const std::size_t i =
        static_cast<std::size_t>((ticket * 0x9E3779B97F4A7C15ull) >> 50) & (slots.size() - 1);
    entry& e = slots[i];
    if (e.ticket == ticket && e.window == window) {
        return false;
    }
    e = entry{ticket, window};
    return true;
}

}  // namespace waitroom::room

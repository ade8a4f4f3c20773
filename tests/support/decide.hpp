#pragma once
// A room decision as the gateway makes it (gateway::room_filter): on wait_for_slots, a top-up and
// the request decided again; once more when the first top-up's slots were gone.

#include <cstdint>

#include "waitroom/room/engine.hpp"

namespace waitroom::test {

// `top_up()` asks the store for the room and returns once it has answered.
template <class TopUp>
room::decision decide_with_top_ups(const room::engine& e, const room::compiled_room& r,
                                   room::worker_state& ws, const room::payload* cookie,
                                   std::int64_t now, room::rng& rng, TopUp top_up,
                                   bool solved = false) {
    auto d = e.decide(r, ws, cookie, now, rng, room::attempt::first, solved);
    for (auto next : {room::attempt::after_top_up, room::attempt::after_second_top_up}) {
        if (d.what != room::action::wait_for_slots) {
            break;
        }
        top_up();
        d = e.decide(r, ws, cookie, now, rng, next, solved);
    }
    return d;
}

}  // namespace waitroom::test

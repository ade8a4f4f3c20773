#include "waitroom/room/counters.hpp"

namespace waitroom::room {

void room_deltas::merge(const room_deltas& o) {
    admitted.merge(o.admitted);
    active.merge(o.active);
    waiting.merge(o.waiting);
    slots_used += o.slots_used;
    demand += o.demand;
    queued += o.queued;
}

bool room_deltas::empty() const {
    return admitted.empty() && active.empty() && waiting.empty() && slots_used == 0 &&
           demand == 0 && queued == 0;
}

void room_deltas::reset() {
    admitted.clear();
    active.clear();
    waiting.clear();
    slots_used = 0;
    demand = 0;
    queued = 0;
}

}  // namespace waitroom::room

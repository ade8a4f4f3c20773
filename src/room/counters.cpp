#include "waitroom/room/counters.hpp"

namespace waitroom::room {

void room_deltas::merge(const room_deltas& o) {
    admitted.merge(o.admitted);
    active.merge(o.active);
    waiting.merge(o.waiting);
    slots_used += o.slots_used;
    demand += o.demand;
    queued += o.queued;
    taken_behind += o.taken_behind;
    for (const auto& r : o.revoked) {
        revoke(r);
    }
}

void room_deltas::revoke(const revocation& r) {
    if (!revoking(r.ticket)) {
        revoked.push_back(r);
    }
}

bool room_deltas::revoking(std::uint64_t ticket) const {
    for (const auto& r : revoked) {
        if (r.ticket == ticket) {
            return true;
        }
    }
    return false;
}

bool room_deltas::empty() const {
    return admitted.empty() && active.empty() && waiting.empty() && slots_used == 0 &&
           demand == 0 && queued == 0 && taken_behind == 0 && revoked.empty();
}

void room_deltas::reset() {
    admitted.clear();
    active.clear();
    waiting.clear();
    slots_used = 0;
    demand = 0;
    queued = 0;
    taken_behind = 0;
    revoked.clear();
}

}  // namespace waitroom::room

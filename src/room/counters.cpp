#include "waitroom/room/counters.hpp"

#include <algorithm>

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
    for (const auto& c : o.checked_in) {
        check_in_ticket(c);
    }
    for (std::uint64_t t : o.left_queue) {
        leave_queue(t);
    }
    for (std::uint64_t t : o.flagged) {
        flag(t);
    }
}

void room_deltas::leave_queue(std::uint64_t ticket) {
    if (left_queue.size() < max_check_ins) {
        left_queue.push_back(ticket);
    }
}

void room_deltas::flag(std::uint64_t ticket) {
    if (flagged.size() < max_check_ins &&
        std::find(flagged.begin(), flagged.end(), ticket) == flagged.end()) {
        flagged.push_back(ticket);
    }
}

void room_deltas::check_in_ticket(const check_in& c) {
    if (checked_in.size() < max_check_ins) {
        checked_in.push_back(c);
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
           demand == 0 && queued == 0 && taken_behind == 0 && revoked.empty() &&
           checked_in.empty() && left_queue.empty() && flagged.empty();
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
    checked_in.clear();
    left_queue.clear();
    flagged.clear();
}

}  // namespace waitroom::room

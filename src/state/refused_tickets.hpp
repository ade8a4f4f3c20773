#pragma once
// The bound on refused tickets (room::max_revoked_sessions), kept alike by the local store's
// ledger and by each node's own list: past it, the oldest are forgotten first, so that the
// newest (the places spent and the sessions revoked just now, whose copies are the likeliest to
// come back) are always refused. The Redis script does the same.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace waitroom::state {

// `tickets` maps a ticket to an entry with a `since` (when it was first known, ms).
template <class Entry>
void forget_oldest(std::map<std::uint64_t, Entry>& tickets, std::size_t cap) {
    if (tickets.size() <= cap) {
        return;
    }
    std::vector<std::pair<std::int64_t, std::uint64_t>> by_age;
    by_age.reserve(tickets.size());
    for (const auto& [ticket, e] : tickets) {
        by_age.emplace_back(e.since, ticket);
    }
    const std::size_t drop = tickets.size() - cap;
    std::nth_element(by_age.begin(), by_age.begin() + static_cast<std::ptrdiff_t>(drop),
                     by_age.end());
    for (std::size_t i = 0; i < drop; ++i) {
        tickets.erase(by_age[i].second);
    }
}

}  // namespace waitroom::state

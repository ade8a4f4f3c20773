#include "waitroom/state/queued_tickets.hpp"

#include <algorithm>
#include <bit>
#include <limits>

namespace waitroom::state {

namespace {
// The highest level a bucket reaches: one in 2^40 tickets is no sample worth counting by.
constexpr unsigned max_level = 40;
}  // namespace

unsigned queued_tickets::rank(std::uint64_t ticket) {
    return static_cast<unsigned>(std::countl_zero(ticket));
}

unsigned queued_tickets::level(std::int64_t bucket) const {
    auto it = levels_.find(bucket);
    return it == levels_.end() ? 0u : it->second;
}

std::int64_t queued_tickets::scaled(std::int64_t bucket, std::int64_t n) const {
    return std::max<std::int64_t>(0, n) << level(bucket);
}

void queued_tickets::check_in(const room::check_in& c, const room::room_limits& l,
                              std::int64_t now_ms) {
    if (!room::waiting_window_live(c.window, l, now_ms)) {
        return;
    }
    const bool sampled = rank(c.ticket) >= level(c.bucket);
    auto it = tickets_.find(c.ticket);
    if (it != tickets_.end()) {
        const entry e = it->second;
        const bool live = room::waiting_window_live(e.window, l, now_ms);
        if (live && e.window >= c.window) {
            return;  // counted there already, or later (an older copy)
        }
        if (live) {
            windows_[{e.bucket, e.window}] -= 1;
        }
        if (!sampled) {
            tickets_.erase(it);
            return;
        }
        it->second = entry{c.bucket, c.window};
    } else if (!sampled) {
        return;
    } else {
        tickets_.emplace(c.ticket, entry{c.bucket, c.window});
    }
    windows_[{c.bucket, c.window}] += 1;
}

void queued_tickets::leave(std::uint64_t ticket, const room::room_limits& l, std::int64_t now_ms) {
    auto it = tickets_.find(ticket);
    if (it == tickets_.end()) {
        return;
    }
    if (room::waiting_window_live(it->second.window, l, now_ms)) {
        windows_[{it->second.bucket, it->second.window}] -= 1;
    }
    tickets_.erase(it);
}

void queued_tickets::add_count(const room::bucket_window& bw, std::int64_t n,
                               const room::room_limits& l, std::int64_t now_ms) {
    if (room::waiting_window_live(bw.window, l, now_ms)) {
        windows_[{bw.bucket, bw.window}] += n;
    }
}

bool queued_tickets::sample_largest() {
    std::map<std::int64_t, std::size_t> sizes;
    for (const auto& [ticket, e] : tickets_) {
        ++sizes[e.bucket];
    }
    // The largest bucket, the oldest of equals; one at the highest level is left as it is.
    const std::pair<const std::int64_t, std::size_t>* largest = nullptr;
    for (const auto& b : sizes) {
        if (level(b.first) < max_level && (largest == nullptr || b.second > largest->second)) {
            largest = &b;
        }
    }
    if (largest == nullptr) {
        return false;
    }
    const std::int64_t bucket = largest->first;
    const unsigned to = ++levels_[bucket];
    for (auto it = tickets_.begin(); it != tickets_.end();) {
        if (it->second.bucket == bucket && rank(it->first) < to) {
            windows_[{bucket, it->second.window}] -= 1;
            it = tickets_.erase(it);
        } else {
            ++it;
        }
    }
    return true;
}

void queued_tickets::bound(const room::room_limits& l, std::int64_t now_ms) {
    if (tickets_.size() <= max_queued_tickets) {
        return;
    }
    std::erase_if(tickets_, [&](const auto& t) {
        return !room::waiting_window_live(t.second.window, l, now_ms);
    });
    while (tickets_.size() > max_queued_tickets / 4 * 3 && sample_largest()) {
    }
}

std::int64_t queued_tickets::prune(const room::room_limits& l, std::int64_t now_ms) {
    std::int64_t lapsed = 0;
    std::erase_if(windows_, [&](const auto& w) {
        if (room::waiting_window_live(w.first.second, l, now_ms)) {
            return false;
        }
        lapsed += scaled(w.first.first, w.second);
        return true;
    });
    // A bucket none of whose windows counts any more has no sample left to keep.
    std::erase_if(levels_, [&](const auto& b) {
        auto it = windows_.lower_bound({b.first, std::numeric_limits<std::int64_t>::min()});
        return it == windows_.end() || it->first.first != b.first;
    });
    return lapsed;
}

std::vector<std::pair<std::int64_t, std::int64_t>> queued_tickets::by_bucket(
    const room::room_limits& l, std::int64_t now_ms) const {
    std::vector<std::pair<std::int64_t, std::int64_t>> out;
    for (const auto& [bw, n] : windows_) {
        if (!room::waiting_window_live(bw.second, l, now_ms) || n <= 0) {
            continue;
        }
        if (!out.empty() && out.back().first == bw.first) {
            out.back().second += n;
        } else {
            out.emplace_back(bw.first, n);
        }
    }
    for (auto& [bucket, n] : out) {
        n = scaled(bucket, n);
    }
    return out;
}

}  // namespace waitroom::state

#include "origin_balancer.hpp"

namespace waitroom::gateway {

namespace {

bool candidate(std::span<balance_entry> s, std::size_t i, std::size_t avoid, bool any) {
    return i != avoid && (any || s[i].available);
}

std::size_t round_robin(std::span<balance_entry> s, std::size_t avoid, bool any) {
    std::int64_t total = 0;
    std::size_t best = no_server;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (!candidate(s, i, avoid, any)) {
            continue;
        }
        s[i].current += s[i].weight;
        total += s[i].weight;
        if (best == no_server || s[i].current > s[best].current) {
            best = i;
        }
    }
    if (best != no_server) {
        s[best].current -= total;
    }
    return best;
}

// The k-th candidate other than `not_this`.
std::size_t nth(std::span<balance_entry> s, std::size_t avoid, bool any, std::size_t not_this,
                std::size_t k) {
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (!candidate(s, i, avoid, any) || i == not_this) {
            continue;
        }
        if (k == 0) {
            return i;
        }
        --k;
    }
    return no_server;
}

// Of two servers drawn at random, the one with fewer requests in flight for its weight: at rest a
// heavier server wins its draws, under load each holds requests in proportion to its weight.
std::size_t least_request(std::span<balance_entry> s, std::size_t avoid, bool any,
                          std::mt19937_64& random) {
    std::size_t count = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
        count += candidate(s, i, avoid, any) ? 1 : 0;
    }
    if (count == 0) {
        return no_server;
    }
    using draw = std::uniform_int_distribution<std::size_t>;
    const std::size_t a = nth(s, avoid, any, no_server, draw(0, count - 1)(random));
    if (count == 1) {
        return a;
    }
    const std::size_t b = nth(s, avoid, any, a, draw(0, count - 2)(random));
    // (in_flight + 1) / weight, compared without division.
    const auto load_a = static_cast<std::uint64_t>(s[a].in_flight + 1) * s[b].weight;
    const auto load_b = static_cast<std::uint64_t>(s[b].in_flight + 1) * s[a].weight;
    return load_b < load_a ? b : a;
}

}  // namespace

std::size_t pick_server(config::balance_policy policy, std::span<balance_entry> servers,
                        std::size_t avoid, std::mt19937_64& random) {
    bool any_available = false;
    for (std::size_t i = 0; i < servers.size(); ++i) {
        any_available = any_available || candidate(servers, i, avoid, false);
    }
    const bool any = !any_available;
    if (policy == config::balance_policy::round_robin) {
        return round_robin(servers, avoid, any);
    }
    return least_request(servers, avoid, any, random);
}

}  // namespace waitroom::gateway

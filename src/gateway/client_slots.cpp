#include "client_slots.hpp"

#include <cstring>
#include <random>

namespace waitroom::gateway {

namespace {

constexpr std::size_t initial_size = 64;

bool is_v4_mapped(const client_slots::address& a) {
    static constexpr std::array<std::uint8_t, 12> prefix{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return std::memcmp(a.data(), prefix.data(), prefix.size()) == 0;
}

std::uint64_t mix(std::uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    return x ^ (x >> 33);
}

}  // namespace

client_slots::client_slots() : table_(initial_size), seed_(std::random_device{}()) {
    seed_ = (seed_ << 32) ^ std::random_device{}();
}

client_slots::address client_slots::client_of(const address& ip) {
    if (is_v4_mapped(ip)) {
        return ip;
    }
    address prefix{};
    std::memcpy(prefix.data(), ip.data(), 7);  // the /56
    return prefix;
}

std::size_t client_slots::home(const address& client) const {
    std::uint64_t hi = 0;
    std::uint64_t lo = 0;
    std::memcpy(&hi, client.data(), 8);
    std::memcpy(&lo, client.data() + 8, 8);
    return static_cast<std::size_t>(mix(hi ^ seed_) ^ mix(lo + seed_)) & (table_.size() - 1);
}

std::size_t client_slots::find(const address& client) const {
    const std::size_t mask = table_.size() - 1;
    std::size_t i = home(client);
    while (table_[i].count != 0 && table_[i].client != client) {
        i = (i + 1) & mask;
    }
    return i;
}

bool client_slots::take(const address& client, std::size_t cap) {
    std::size_t i = find(client);
    if (table_[i].count == 0) {
        if (cap == 0) {
            return false;
        }
        if ((used_ + 1) * 2 > table_.size()) {
            grow();
            i = find(client);
        }
        table_[i].client = client;
        ++used_;
    } else if (table_[i].count >= cap) {
        return false;
    }
    ++table_[i].count;
    return true;
}

void client_slots::give(const address& client) {
    const std::size_t mask = table_.size() - 1;
    std::size_t i = find(client);
    if (table_[i].count == 0) {
        return;  // not held: nothing to give
    }
    if (--table_[i].count > 0) {
        return;
    }
    --used_;
    // Backward-shift deletion: entries after the freed one that could sit closer to their home
    // move up, so that every probe still ends at the first free entry.
    std::size_t j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (table_[j].count == 0) {
            return;
        }
        const std::size_t h = home(table_[j].client);
        // Entry j may fill the hole at i when its home is not in the cyclic range (i, j].
        const bool stays = i <= j ? (i < h && h <= j) : (i < h || h <= j);
        if (!stays) {
            table_[i] = table_[j];
            table_[j].count = 0;
            i = j;
        }
    }
}

std::size_t client_slots::held(const address& client) const {
    return table_[find(client)].count;
}

void client_slots::grow() {
    std::vector<entry> old(table_.size() * 2);
    old.swap(table_);
    for (const auto& e : old) {
        if (e.count != 0) {
            table_[find(e.client)] = e;
        }
    }
}

}  // namespace waitroom::gateway

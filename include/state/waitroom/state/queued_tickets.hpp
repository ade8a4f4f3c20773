#pragma once
// The queue's count inside a store: distinct tickets, by arrival bucket and latest waiting
// window. Every ticket a node checks in is kept with its bucket and latest window and counted
// once, there, whatever the requests, copies, workers and nodes that carry it; a ticket that
// leaves the queue (admitted, flagged) leaves the count. A ticket that stops checking in lapses
// with its window, as the counts always did.
//
// Bounded per room: past max_queued_tickets the largest bucket is sampled. A bucket at level k
// keeps only the tickets with at least k leading zero bits (tickets are random draws sealed in
// the cookie, so that is one in 2^k of them, and the same ones on every node), and counts each
// as 2^k visitors: exact while a bucket is small, within a few percent of its size past it (the
// count of a sample of 1,000 to 3,000 tickets). Levels only rise while the bucket lives.
//
// The local store's ledger uses it; the Redis script (room.lua) does the same, step for step.

#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "waitroom/room/counters.hpp"
#include "waitroom/room/limits.hpp"

namespace waitroom::state {

// The most tickets a store keeps per room (room.lua: MAX_QUEUED). Past it, dead entries go,
// then the largest buckets are sampled until three quarters of it remain.
inline constexpr std::size_t max_queued_tickets = 4096;

class queued_tickets {
  public:
    // A ticket into a window (a node's check-in). A window it is counted in already, or a later
    // one, changes nothing; a window that stopped counting neither.
    void check_in(const room::check_in& c, const room::room_limits& l, std::int64_t now_ms);
    // A ticket out of the queue.
    void leave(std::uint64_t ticket, const room::room_limits& l, std::int64_t now_ms);
    // Visitors counted without their tickets: a node's re-report of its live windows to a store
    // that lost its memory. They lapse with their window.
    void add_count(const room::bucket_window& bw, std::int64_t n, const room::room_limits& l,
                   std::int64_t now_ms);
    // Holds the room to max_queued_tickets (after a report).
    void bound(const room::room_limits& l, std::int64_t now_ms);
    // Drops the windows that stopped counting; returns the visitors they still held.
    std::int64_t prune(const room::room_limits& l, std::int64_t now_ms);
    // Queued visitors by bucket, ascending, buckets of none left out.
    std::vector<std::pair<std::int64_t, std::int64_t>> by_bucket(const room::room_limits& l,
                                                                 std::int64_t now_ms) const;
    std::size_t size() const { return tickets_.size(); }
    // The sampling level of `bucket` (0: every ticket counted).
    unsigned level(std::int64_t bucket) const;

    // Leading zero bits of a ticket: its place in the samples.
    static unsigned rank(std::uint64_t ticket);

  private:
    struct entry {
        std::int64_t bucket = 0;
        std::int64_t window = 0;
    };
    // The visitors a (bucket, window) count stands for.
    std::int64_t scaled(std::int64_t bucket, std::int64_t n) const;
    // Samples the largest bucket one level further; false when none can be.
    bool sample_largest();

    std::map<std::uint64_t, entry> tickets_;
    std::map<std::pair<std::int64_t, std::int64_t>, std::int64_t> windows_;  // sampled tickets
    std::map<std::int64_t, unsigned> levels_;  // bucket → level, absent: 0
};

}  // namespace waitroom::state

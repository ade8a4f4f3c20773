#pragma once
// Counter deltas: what a worker adds to the room counters between two syncs. Single-threaded per
// worker (no lock, no atomic on the decision path); handed to the node's inbox at flush time and
// merged by the sync task into one push to the store.

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace waitroom::room {

// A small map of key → delta kept as a vector: between two syncs a worker touches a handful of
// windows, so a linear scan from the newest entry beats hashing and allocates only on growth.
template <class Key>
class delta_map {
  public:
    void add(const Key& k, std::int64_t d) {
        for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
            if (it->first == k) {
                it->second += d;
                return;
            }
        }
        entries_.emplace_back(k, d);
    }
    void merge(const delta_map& o) {
        for (const auto& [k, d] : o.entries_) {
            add(k, d);
        }
    }
    const std::vector<std::pair<Key, std::int64_t>>& entries() const { return entries_; }
    bool empty() const { return entries_.empty(); }
    void clear() { entries_.clear(); }

  private:
    std::vector<std::pair<Key, std::int64_t>> entries_;
};

struct bucket_window {
    std::int64_t bucket = 0;  // arrival bucket, unix ms
    std::int64_t window = 0;  // window of the last check-in, unix ms (start)
    bool operator==(const bucket_window&) const = default;
};

// A session the origin revoked (command `revoke`): the store ends it once, however often the
// command is replayed, and every node then refuses the session's cookies (state::room_ledger).
struct revocation {
    std::uint64_t ticket = 0;  // the session's ticket (payload::ticket)
    std::int64_t window = -1;  // the active window its cookie counts it in; -1 = none still live
    bool operator==(const revocation&) const = default;
};

// A queued visitor counted into a waiting window: the store counts each ticket once, in the
// latest window it checked in (state::room_ledger), however many requests, copies, workers or
// nodes carry it.
struct check_in {
    std::uint64_t ticket = 0;
    std::int64_t bucket = 0;  // arrival bucket, unix ms
    std::int64_t window = 0;  // window of the check-in, unix ms (start)
    bool operator==(const check_in&) const = default;
};

// The most check-ins one worker hands over per room between two flushes, and a node sends per
// room and sync: each costs a request that carried a ticket into a new window, so a flood of
// them reaches this bound first. Past it, a check-in waits for the visitor's next window.
inline constexpr std::size_t max_check_ins = 16'384;

// The deltas of one room.
struct room_deltas {
    delta_map<std::int64_t> admitted;  // rate sub-window start → new admissions
    delta_map<std::int64_t> active;    // window start → admitted visitors moved in/out
    delta_map<bucket_window> waiting;  // (bucket, window) → queued visitors moved in/out
    std::int64_t slots_used = 0;       // admissions that consumed a leased slot
    std::int64_t demand = 0;           // decisions that wanted a slot (admitted or not)
    std::int64_t queued = 0;           // queue pages served (statistics)
    // Admissions of later buckets past visitors queued ahead (the admission front): not sent
    // to the store; once its answer counts them, the node's snapshot no longer needs to take
    // them off its free capacity (slot_pool::reported_behind).
    std::int64_t taken_behind = 0;
    std::vector<revocation> revoked;  // sessions revoked, each ticket once
    // Queued tickets into a new waiting window (the store's distinct counts). `waiting` above
    // keeps the node's own count of them, which only a re-report to a store that lost its
    // memory sends.
    std::vector<check_in> checked_in;
    std::vector<std::uint64_t> left_queue;  // queued tickets admitted or refused: out of the counts
    // Tickets a flag refused (abuse_action): the store lists them to every node, each refusing
    // them for as long as a cookie carrying them could keep a place.
    std::vector<std::uint64_t> flagged;

    // Records a check-in, a departure from the queue and a flag (each within max_check_ins).
    void check_in_ticket(const check_in& c);
    void leave_queue(std::uint64_t ticket);
    void flag(std::uint64_t ticket);

    // Records a revocation unless this ticket's is already here.
    void revoke(const revocation& r);
    bool revoking(std::uint64_t ticket) const;

    void merge(const room_deltas& o);
    bool empty() const;
    void reset();  // back to zero, keeping capacity
};

// Deltas of every room, by room id.
using delta_set = std::unordered_map<std::string, room_deltas>;

}  // namespace waitroom::room

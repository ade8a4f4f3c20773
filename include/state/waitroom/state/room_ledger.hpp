#pragma once
// The counting and lease arithmetic of one room inside a store: sums the counter windows, forgets
// dead windows and silent nodes, and sizes leases by each node's recent demand (about one
// interval of it; with other nodes live also at most half a share, which binds only a node of
// little demand, so the rest stays free for top-ups) without ever leasing more than is free. While
// other nodes are live, a node without demand for an interval leases nothing (its node hands the
// unused slots back in the same report), no grant exceeds the node's share of the unheld slots, and
// near the limit nobody leases: the last free places go by top-ups of what the waiting visitors
// need. It also keeps the room's run-time switches, which every sync answer carries. The local
// store uses it directly; the Redis script mirrors it.

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "waitroom/state/queued_tickets.hpp"
#include "waitroom/state/store.hpp"

namespace waitroom::state {

class room_ledger {
  public:
    // Applies one node's report for this room; returns the aggregated state and its lease. A
    // report of the batch this node last had applied (`batch` ≠ 0) changes no count: it only
    // answers again.
    // The ledger has an epoch, made by its first sync: a report naming another one (the node
    // knew a store that lost its memory) is refused as `stale` unless it is `full`, which
    // counts the node's live windows and sets its held slots instead of applying deltas. After
    // a stale report the ledger grants nothing until one node TTL after its epoch began: by
    // then every live node has re-reported.
    // A node that reports leaving degraded mode (`held_exact`) shows that the store was away:
    // the other nodes that were live then and have not synced since may hold admissions from
    // their own allowances that the counts miss. Until they sync, or one node TTL after the
    // last such report, each of them is reserved the most it can hold unreported (its lease
    // then, plus its allowance: 1 / the nodes of its answer of new_users_per_minute and of
    // the free active places then, the most any of its answers in the last two node TTLs
    // allows, since the last ones may have been lost), and grants come only from the capacity
    // left. A node alone has no other node to wait for: nothing is reserved.
    // The node that reports leaving degraded mode stays reserved so too (the most of its reserve
    // as a silent node at each such report) until a report of its shows that it got an answer
    // since: one not `held_exact`, which a node sends only once an answer ended its episode. Its
    // answer may be lost, and then it goes on admitting from its allowance, which the counts
    // miss. (Or for one node TTL after its last report: a node silent that long is gone.) Its
    // own reserve never limits its own grants: it uses either their slots (the answer came, its
    // episode is over) or its allowance (the answer and its slots were lost), never both.
    room_grant sync(const std::string& node_id, const std::string& datacenter,
                    const room_report& report, std::int64_t now_ms, std::int64_t node_ttl_ms,
                    std::uint64_t batch = 0);
    // Grants up to `want` slots from the capacity not leased yet; near the limit (see sync),
    // at most `need` (the visitors waiting for them; 0: not told, as `want`). `unreported`
    // places the counts miss (the asking node's renewals out of windows they no longer count,
    // not reported yet) are not free.
    // Nothing for a node that names another epoch ("" names none): the counts miss its windows;
    // nothing either while live nodes may still have to re-report (see sync).
    // `id` (0: none) is remembered with the grant until a sync names it lost.
    std::int64_t top_up(const std::string& node_id, const std::string& datacenter,
                        const room::room_limits& limits, std::int64_t want, std::int64_t now_ms,
                        const std::string& epoch = {}, std::uint64_t id = 0, std::int64_t need = 0,
                        std::int64_t unreported = 0);

    // Current aggregated state (also what the admin API of a node sees after a sync).
    room::room_counts counts(const room::room_limits& limits, std::int64_t now_ms) const;
    // min(total_active_users − active, new_users_per_minute − admitted in the sliding minute).
    std::int64_t capacity(const room::room_limits& limits, std::int64_t now_ms) const;
    std::int64_t held_total() const;
    std::int64_t held_by(const std::string& node_id) const;

    // Admin PATCH (or a reload clearing a key the file changed); returns the switches after it.
    room_switch_values write_overrides(const override_write& w);

  private:
    struct node_entry {
        std::string datacenter;
        std::int64_t held = 0;  // slots leased and not yet reported used or returned
        double demand = 0;      // decayed demand (slot requests per interval)
        std::int64_t last_seen = 0;
        std::uint64_t batch = 0;  // the last batch of this node applied here (node_report::batch)
        // Taken back when the node says it never got them: the grant of its last sync (a resend
        // of that batch), and of its last top-up (room_report::lost_top_up).
        std::int64_t last_granted = 0;
        std::uint64_t top_up_id = 0;
        std::int64_t top_up_granted = 0;
    };
    // `full`: a re-report of the node's live windows (its waiting counts come without tickets).
    void apply(const room::room_deltas& d, const room::room_limits& l, std::int64_t now_ms,
               bool full);
    void apply_flags(const room::room_deltas& d, const room::room_limits& l, std::int64_t now_ms);
    void apply_revocations(const room::room_deltas& d, const room::room_limits& l,
                           std::int64_t now_ms);
    // Drops dead windows; returns the queued visitors the lapsed waiting windows still held.
    std::int64_t prune(const room::room_limits& limits, std::int64_t now_ms);
    void expire_nodes(std::int64_t now_ms, std::int64_t node_ttl_ms);
    node_entry& touch(const std::string& node_id, const std::string& datacenter,
                      std::int64_t now_ms);
    // The live nodes' decayed demand, summed; and one node's share of it (an even split while
    // nobody asked).
    double demand_total() const;
    double share_of(const node_entry& me) const;
    // With other nodes live, the room is near its limit when its free places (`cap`, those
    // leased included) are at most twice the live nodes' decayed demand (about four intervals
    // of their slot requests) plus two a node. A lease lives until its node's next report
    // hands back what it did not use: granted then, it could sit in a quiet node's pool while
    // the room fills through the others, whose visitors would be queued below the limit.
    bool near_limit(std::int64_t cap) const;
    // What the last sync of a node left: kept for as long as the room's Redis keys would live
    // without syncs, since a store outage may outlast the node TTL by that much.
    struct seen_entry {
        std::int64_t last_seen = 0;
        std::int64_t held = 0;         // its lease after that sync (and its top-ups since)
        std::int64_t peers = 1;        // live nodes in its answer: its allowance is 1 / peers
        std::int64_t free_active = 0;  // total_active_users − active in its answer
        // {last_seen, peers, free_active} of each of its syncs in the two node TTLs before its
        // last, this one included: the node sizes its allowance from the last answer it got,
        // and the answers of the syncs the store ran last may have been lost (a sync sent just
        // before Redis froze runs when it resumes, after the node gave up on it), so it is
        // reserved the most any of these answers allows.
        std::vector<std::array<std::int64_t, 3>> answers;
        // {rate limit, active limit} it is reserved while it may still be degraded: set by its
        // reports leaving degraded mode, cleared by its first report that is not (see sync).
        std::optional<std::pair<std::int64_t, std::int64_t>> leaving;
    };
    // The most a node may admit from its allowance unreported, by what the store answered it
    // (its last sync and its recent answers): {rate limit, active limit}.
    static std::pair<std::int64_t, std::int64_t> allowance_bound(const room::room_limits& l,
                                                                 const seen_entry& s);
    // How long the room's Redis keys live without syncs (room.lua's set_ttls).
    static std::int64_t seen_ttl(const room::room_limits& l, std::int64_t node_ttl_ms);
    // Slots kept from grants for the nodes that may hold unreported allowance admissions:
    // {rate limit, active limit} (see sync). `asking` (the node the grant is for, or empty) is
    // not reserved for its own leaving degraded mode.
    std::pair<std::int64_t, std::int64_t> ghost_reserve(const room::room_limits& l,
                                                        std::int64_t now_ms,
                                                        const std::string& asking = {}) const;
    // A report naming no epoch comes from a process that has had no answer for the room: the
    // node restarted. If it was a ghost, or leaving degraded mode, its previous process may have
    // admitted from its allowance what it never reported, and never will (the new process knows
    // nothing of it): the most it can have admitted (as ghost_reserve reserves it, by `old`, the
    // node's record as its last sync left it) is added to the counts now, in this moment's
    // windows, and ages out as admissions do, instead of being forgotten with the reserve.
    void charge_restarted(const room::room_limits& l, const seen_entry& old, std::int64_t prev_seen,
                          bool forgotten, bool leaving_report, std::int64_t now_ms);
    // The ghost window holds now (see ghosts_until_).
    bool ghosts_open(std::int64_t now_ms, std::int64_t node_ttl_ms) const;
    // capacity() less the ghosts' reserve, less the slots leased.
    // `unseen_active`: places held that the active windows miss (a top-up's `unreported`).
    std::int64_t free_unheld(const room::room_limits& l, std::int64_t now_ms,
                             const std::string& asking, std::int64_t unseen_active = 0) const;

    std::map<std::int64_t, std::int64_t> admitted_;  // rate sub-window → admissions
    std::map<std::int64_t, std::int64_t> active_;    // window → admitted visitors
    queued_tickets queued_;  // the queue: distinct tickets by (bucket, window)
    struct flagged_ticket {
        std::int64_t since = 0;  // window of the store's first word of it
    };
    // Tickets a flag refused (abuse_action), at most room::max_flagged_tickets.
    std::map<std::uint64_t, flagged_ticket> flagged_;
    struct revoked_session {
        std::int64_t since = 0;  // window of the store's first word of it
        bool freed = false;      // its place was freed (a revocation named a live window)
    };
    std::map<std::uint64_t, revoked_session> revoked_;  // by ticket, at most max_revoked_sessions
    std::map<std::string, node_entry> nodes_;
    std::int64_t node_ttl_ms_ = 3'000;
    room_switch_values overrides_;
    std::string epoch_;  // "<now_ms>/<node id>" of the first sync, as the Redis script makes it
    std::int64_t epoch_at_ = 0;
    std::int64_t refill_until_ = 0;  // no grant before (set by the first stale report)
    std::map<std::string, seen_entry> seen_;
    // The ghosts are the nodes last seen in (ghosts_from_, ghosts_to_), reserved for until
    // ghosts_until_: set by reports of nodes leaving degraded mode.
    std::int64_t ghosts_from_ = 0;
    std::int64_t ghosts_to_ = 0;
    std::int64_t ghosts_until_ = 0;
};

}  // namespace waitroom::state

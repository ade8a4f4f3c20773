#pragma once
// The admission engine of DESIGN.md §4: built once per config snapshot, shared read-only by all
// workers. It routes a request to a room and decides admit / queue / reject / pass from the
// visitor's cookie, the node's room-state snapshot and slot pool, adding to the calling worker's
// counters. No I/O, no lock, no Asio: time and randomness are arguments.

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "waitroom/config/config.hpp"
#include "waitroom/room/analytics.hpp"
#include "waitroom/room/counters.hpp"
#include "waitroom/room/limits.hpp"
#include "waitroom/room/origin_gate.hpp"
#include "waitroom/room/overrides.hpp"
#include "waitroom/room/page_model.hpp"
#include "waitroom/room/payload.hpp"
#include "waitroom/room/room_state.hpp"
#include "waitroom/room/router.hpp"

namespace waitroom::room {

using rng = std::mt19937_64;

// A room's settings in force at one instant, event overrides applied.
struct settings {
    std::int64_t total_active_users = 0;
    std::int64_t new_users_per_minute = 0;
    std::int64_t session_ms = 300'000;
    bool disable_session_renewal = false;
    config::queueing_method method = config::queueing_method::fifo;
    bool suspended = false;
    bool queue_all = false;
    // No origin server is healthy (origin_gate): nobody new is admitted, the page says so.
    bool origin_unavailable = false;
    std::int64_t refresh_ms = 20'000;
    const std::string* custom_page_html = nullptr;  // the room's or the event's template file
};

// Where a room stands relative to its events at one instant.
struct event_phase {
    const config::event* event = nullptr;  // the current or prequeueing event; null = none
    std::uint32_t event_id = 0;            // stable id of `event` (hash of its name); 0 = none
    bool prequeueing = false;              // prequeue_start_time ≤ now < event_start_time
    bool active = false;                   // event_start_time ≤ now < event_end_time
    std::int64_t start_ms = 0;
    std::int64_t end_ms = 0;
    std::int64_t prequeue_start_ms = 0;
};

class engine;

// The bits of payload::flags the engine writes on a queued visitor's cookie.
namespace visitor_flags {
// Counted in no waiting window (a revoke's cookie): its first request counts it, and its
// last_check_in (the revoke) only dates it for the rejoin rule.
inline constexpr std::uint32_t uncounted = 1u;
// Refreshed far faster than its Refresh asked (abuse_action): the room's abuse_action applies
// to the visitor for as long as the cookie keeps its place.
inline constexpr std::uint32_t flagged = 2u;
// A new visitor given a proof-of-work challenge (rooms with `challenge`) and not yet in the queue:
// the cookie holds no place and is counted nowhere. Its ticket becomes the visitor's place in the
// queue once the challenge is solved; its last_check_in dates the challenge.
inline constexpr std::uint32_t challenged = 4u;
// Bits 3–7 of a challenged cookie: the difficulty asked, in leading zero bits (1–31).
inline constexpr unsigned difficulty_shift = 3;
inline constexpr std::uint32_t difficulty_mask = 31u;
// Bits 8 and up: the Refresh, in seconds, given with the visitor's last counted request. A
// refresh before last_check_in plus that gets the queue page again and moves nothing.
inline constexpr unsigned refresh_shift = 8;
}  // namespace visitor_flags

// A challenged cookie (rooms with `challenge`): a new visitor's, holding no place yet.
inline bool challenged(const payload& c) {
    return (c.flags & visitor_flags::challenged) != 0;
}

// The difficulty a challenged cookie asks, in leading zero bits.
inline unsigned challenge_bits(const payload& c) {
    return (c.flags >> visitor_flags::difficulty_shift) & visitor_flags::difficulty_mask;
}

// One room of the config, compiled.
class compiled_room {
  public:
    std::size_t index() const { return index_; }
    const std::string& id() const { return cfg_->id; }
    const config::room& config() const { return *cfg_; }
    event_phase phase_at(std::int64_t now_ms) const;
    settings settings_at(const event_phase& ph) const;
    room_limits limits_at(std::int64_t now_ms) const;
    // Request fields removed before forwarding (the header bypass rules' names).
    const std::vector<std::string>& secret_fields() const { return bypass_.secret_fields(); }

  private:
    friend class engine;
    std::size_t index_ = 0;
    const config::room* cfg_ = nullptr;
    bypass_matcher bypass_{{}};
    windowing win_;
    const room_switches* switches_ = nullptr;  // run-time overrides (admin PATCH); null = none
    const origin_gate* gate_ = nullptr;        // the node's origin health; null = always open
};

enum class action {
    pass,            // proxy untouched: unmatched, bypassed or suspended; no cookie, not counted
    admit,           // proxy; set the cookie when cookie_changed
    queue,           // serve the queue page / JSON from `page`; set the cookie when changed
    reject,          // serve the reject page (method reject); no cookie
    wait_for_slots,  // the node has no slot but the store may: call sync_task::top_up for the
                     // room, then decide again with attempt::after_top_up. Nothing was counted.
    misdirected,     // route only: rooms name hosts and this one is none of them and matches no
                     // route (origin.unknown_hosts: reject) → 421 Misdirected Request
};

// A decision is first tried as `first`; after a wait_for_slots and its top-up, the same request
// is decided again as `after_top_up` (no second lottery draw for `random`). The slots a top-up
// brings go to the node's shared pool, and a visitor on another worker may take them before this
// one is decided again: then it may ask once more, and `after_second_top_up` is the last try.
enum class attempt { first, after_top_up, after_second_top_up };

enum class pass_reason { none, unmatched, bypassed, suspended };

struct decision {
    action what = action::pass;
    pass_reason reason = pass_reason::none;
    const compiled_room* room = nullptr;      // null when unmatched
    bool cookie_changed = false;              // set `cookie` on the response
    payload cookie;                           // valid for admit and queue
    std::int64_t cookie_max_age_seconds = 0;  // Max-Age when setting it: what is left of the
                                              // session (admit) or the rejoin time (queue)
    std::int64_t refresh_seconds = 0;         // queue: the Refresh header (adaptive)
    page_model page;                          // queue and reject: the page values
    bool flagged_now = false;                 // this request flagged the visitor (abuse_action)
    bool challenge_issued = false;            // queue: a new challenge is in `cookie` (set it)
    bool challenge_solved = false;            // this request solved its challenge and joined
    queue_admission admission;                // admit: the figures of an admission from the queue
    // The visitor's session had ended (it comes back after its expiry): how long it lasted,
    // from its admission to its end; -1 = none ended.
    std::int64_t ended_session_ms = -1;
};

// What routing alone says of a request, before any counter is read.
enum class route_action {
    pass,         // unmatched or bypassed: proxy untouched
    misdirected,  // → 421 (see action::misdirected)
    decide,       // a room takes it: engine::decide(room, …) says admit, queue or reject
};

struct route_result {
    route_action what = route_action::pass;
    pass_reason reason = pass_reason::unmatched;
    const compiled_room* room = nullptr;
};

// How a valid cookie stands at one instant, as decide() would treat it; higher is better.
// Chooses among several cookies of a room in one request (a sibling subdomain can plant its
// own): a live session beats a place in the queue, an older place beats a newer one, and a
// cookie decide() would treat as a new visitor's is worth nothing.
struct cookie_standing {
    int tier = 0;            // 2: a live session; 1: a place in the queue; 0: a new visitor
    std::int64_t place = 0;  // in the queue: minus the arrival bucket (older is better);
                             // a new visitor: 1 for a fresh challenge, else 0

    friend auto operator<=>(const cookie_standing&, const cookie_standing&) = default;
};

// Cloudflare's room status for the admin API.
enum class room_status_kind { not_queueing, queueing, event_prequeueing, suspended };
std::string_view to_string(room_status_kind k);
std::string_view to_string(config::queueing_method m);
std::string_view to_string(config::abuse_action a);

struct room_status {
    room_status_kind status = room_status_kind::not_queueing;
    std::string event_id;  // the current event's name, "" = none
    std::int64_t estimated_queued_users = 0;
    std::int64_t estimated_total_active_users = 0;
    std::int64_t max_estimated_time_minutes = 0;
};

// Per-worker mutable state: the worker's counter deltas and its cached view of the node's
// snapshot and pools. Single-threaded: one per worker thread, never shared.
class worker_state {
  public:
    explicit worker_state(node_state& node) : node_(node) {}

    // Hands this worker's deltas to the node inbox. Call on the worker's thread once per sync
    // interval (the decide path also does it, without blocking, when a new snapshot appears).
    void flush();

  private:
    friend class engine;
    struct room_view {
        const room_state* state = nullptr;
        slot_pool* pool = nullptr;
        room_deltas* deltas = nullptr;
    };
    room_view& view(const engine& e, const compiled_room& r);

    // The last 64 tickets put in it; the oldest goes first.
    struct ticket_ring {
        std::array<std::uint64_t, 64> tickets{};
        std::size_t written = 0;  // entries written so far (the ring wraps)
        bool contains(std::uint64_t ticket) const;
        void remember(std::uint64_t ticket);
    };
    // Tickets this worker refused lately (revoked sessions, spent queue places), refused at
    // once: the store's list, which every node gets at its next sync, is the record; this
    // bounded ring only covers the time until then.
    bool revoked_here(std::uint64_t ticket) const { return revoked_.contains(ticket); }
    void remember_revoked(std::uint64_t ticket) { revoked_.remember(ticket); }

    node_state& node_;
    ticket_ring revoked_;
    // The pre-flag tickets of visitors flagged here (abuse_action), refused here at once: the
    // store's list of flagged tickets is the record, which every worker and node refuses from
    // its next sync. A ring of its own, so that mass flagging cannot push spent places and
    // revoked sessions out of `revoked_`.
    ticket_ring flag_refused_;
    // The tickets this worker checked into a waiting window: a copy of one queued cookie, or of
    // a solved challenge, sent again in the same window is handed over once. The store counts
    // each ticket once whatever is handed over; this only spares it the copies. Direct-mapped and
    // fixed in size: a ticket pushed out by another is handed over again.
    struct window_tickets {
        struct entry {
            std::uint64_t ticket = 0;
            std::int64_t window = -1;
        };
        std::vector<entry> slots = std::vector<entry>(std::size_t{1} << 14);
        // Whether (ticket, window) is new here; remembers it.
        bool first_in(std::uint64_t ticket, std::int64_t window);
    };
    window_tickets counted_;
    // The admitted tickets whose late renewal (engine::decide) this worker handed over at once,
    // by their new window: copies of one cookie replayed in the last seconds of its session hand
    // over once, not on every request. Smaller: late renewals are rare.
    window_tickets late_handed_{std::vector<window_tickets::entry>(std::size_t{1} << 10)};
    std::shared_ptr<const state_snapshot> snap_;
    std::uint64_t snap_version_ = ~0ull;
    std::uint64_t engine_generation_ = 0;
    std::vector<room_view> views_;
    delta_set deltas_;
    room_state empty_;
};

class engine {
  public:
    // `overrides`: the node's run-time room switches, which win over the config and events.
    // `gate`: the node's origin health; while it is closed nobody new is admitted.
    explicit engine(config::snapshot cfg, windowing win = {},
                    std::shared_ptr<room_overrides> overrides = nullptr,
                    std::shared_ptr<const origin_gate> gate = nullptr);
    engine(const engine&) = delete;
    engine& operator=(const engine&) = delete;

    const config::config& config() const { return *cfg_; }
    const std::vector<compiled_room>& rooms() const { return rooms_; }
    const compiled_room* find(std::string_view room_id) const;
    std::uint64_t generation() const { return generation_; }

    // Step 1: the room of a request, or pass (unmatched / bypassed). The gateway then reads the
    // room's cookie (_cfwaitingroom[_suffix]) and calls decide.
    route_result route(const request_view& req) const;

    // Step 2: the decision for a routed request. `valid_cookie` is the decrypted payload when
    // the cookie was valid for this room, null otherwise (a new visitor). `solved`: the request
    // carries a valid solution of the challenge in `valid_cookie` (checked by the caller, which
    // holds the cookie's sealed value the challenge is bound to).
    decision decide(const compiled_room& room, worker_state& ws, const payload* valid_cookie,
                    std::int64_t now_ms, rng& random, attempt at = attempt::first,
                    bool solved = false) const;

    // Both steps, for callers that resolve the cookie up front (tests, simulator).
    decision decide(const request_view& req, worker_state& ws, const payload* valid_cookie,
                    std::int64_t now_ms, rng& random, attempt at = attempt::first) const;

    // Origin command `revoke`: ends the session once, however often it is replayed (the store
    // frees its place on the first revocation of the ticket and every node then refuses the
    // session's cookies). The returned payload is that of a new arrival at `now` (a fresh
    // ticket, back of the queue when queueing, counted at its first request). Set it.
    payload revoke(const compiled_room& room, worker_state& ws, const payload& current,
                   std::int64_t now_ms, rng& random) const;

    room_status status(const compiled_room& room, const room_state& state,
                       std::int64_t now_ms) const;

    // How `valid_cookie` (opened for `room`) stands at `now_ms` on the worker of `ws`. Reads no
    // counter; a revoked session's cookie is worth nothing, as decide() treats it.
    cookie_standing standing(const compiled_room& room, worker_state& ws,
                             const payload& valid_cookie, std::int64_t now_ms) const;

  private:
    // `c` carries a refused ticket (on any node, or on this worker since its last snapshot): a
    // session the origin revoked, or a queue place an admission spent. It holds no place.
    static bool refused_ticket(const worker_state& ws, const room_state& st, const payload& c);
    // The active window an admitted visitor's check-in at `at_ms` was counted in: its size is
    // the one in force then (an event's session_duration changes it), so that a move takes the
    // visitor out of the window it was put in.
    std::int64_t filed_window(const compiled_room& r, std::int64_t at_ms) const;
    // A new visitor's arrival bucket at `now`: now's window, or in a shuffled prequeue a window
    // of the prequeue span drawn by the ticket.
    std::int64_t arrival_bucket(const event_phase& ph, std::int64_t now_ms,
                                std::uint64_t ticket) const;
    // The challenge a new visitor who would be queued gets instead of a place (rooms with
    // `challenge`): `pending`'s while it is fresh, a new one otherwise.
    void challenge(const compiled_room& r, const settings& s, const event_phase& ph,
                   const room_state& st, const payload* pending, std::int64_t now_ms, rng& random,
                   decision& d) const;
    void fill_page(const compiled_room& r, const settings& s, const event_phase& ph,
                   const room_state& st, std::int64_t bucket, std::int64_t now_ms, bool eligible,
                   decision& d) const;

    config::snapshot cfg_;
    windowing win_;
    // A renewal out of a window the store lets go within this long (product ms) is handed over
    // at once: two sync intervals, one for a worker that missed a sync's flush, and a second.
    std::int64_t late_renewal_ms_ = 0;
    std::shared_ptr<room_overrides> overrides_;
    std::shared_ptr<const origin_gate> gate_;
    std::uint64_t generation_;
    router router_;
    std::vector<compiled_room> rooms_;
};

// The stable id carried in cookies for an event (FNV-1a of its name, never 0).
std::uint32_t event_id_of(const config::event& ev);

}  // namespace waitroom::room

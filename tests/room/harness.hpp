#pragma once
// Test harness for the admission engine: one node with the local store, a manual clock, a seeded
// RNG and visitors that carry their cookie like a browser (kept only when the gateway would set
// it). Rooms are built in code. More nodes of the same store: harness(first, "node-b").

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "waitroom/config/config.hpp"
#include "waitroom/room/engine.hpp"
#include "waitroom/state/local_store.hpp"
#include "waitroom/state/sync_task.hpp"
#include "waitroom/util/clock.hpp"

#include "support/decide.hpp"

namespace waitroom::room_testing {

using namespace std::chrono_literals;

// A small room: the five fields of the setup screen, everything else default.
inline config::room make_room(std::string id, std::uint32_t active, std::uint32_t per_minute) {
    config::room r;
    r.id = id;
    r.name = "Room " + id;
    r.path = "/";
    r.total_active_users = active;
    r.new_users_per_minute = per_minute;
    r.session_duration = std::chrono::minutes{5};
    return r;
}

struct visitor {
    std::optional<cookie::payload> cookie;
    bool admitted() const { return cookie && cookie->accepted_at > 0; }
};

class harness {
  public:
    // Starts on a minute boundary so window arithmetic in tests is easy to read.
    explicit harness(std::vector<config::room> rooms, std::uint64_t seed = 42)
        : clock_(util::sys_time{std::chrono::seconds{1'800'000'000 - 1'800'000'000 % 60}}),
          store_(own_store_),
          sync_(node_, store_, state::sync_options{}),
          ws_(node_),
          rng_(seed) {
        auto cfg = std::make_shared<config::config>();
        cfg->rooms = std::move(rooms);
        set_config(cfg);
        sync();
    }
    // Another node of `first`'s room: the same rooms and store, at the same time, its own
    // node id, snapshot, slots and worker. Move its clock with set_time_ms(first.now()).
    harness(harness& first, std::string node_id, std::uint64_t seed = 43)
        : clock_(util::sys_time{std::chrono::milliseconds{first.now()}}),
          store_(first.store_),
          sync_(node_, store_, peer_options(std::move(node_id))),
          ws_(node_),
          rng_(seed) {
        set_config(std::make_shared<config::config>(first.cfg()));
        sync();
    }

    void set_config(std::shared_ptr<config::config> cfg) {
        cfg_ = cfg;
        engine_ = std::make_shared<room::engine>(cfg_, room::windowing{}, nullptr, gate_);
        sync_.set_engine(engine_);
    }
    config::config& cfg() { return *cfg_; }
    // Rebuilds the engine after a test changed cfg() (what a reload or PATCH does).
    void reload() { set_config(std::make_shared<config::config>(*cfg_)); }

    std::int64_t now() const { return util::unix_ms(clock_.now()); }
    std::int64_t start() const { return start_; }
    void advance(std::chrono::milliseconds d) { clock_.advance(d); }
    void set_time_ms(std::int64_t ms) { clock_.set(util::sys_time{std::chrono::milliseconds{ms}}); }

    // Worker deltas → store → new snapshot and lease.
    void sync() {
        ws_.flush();
        sync_.run_once(now());
    }

    // One request of `v` to room `room_id`, with the gateway's top-up dance; `v` keeps the
    // cookie the answer sets.
    // `solved`: the request carries a valid solution of the challenge in `v`'s cookie.
    // A new visitor queued is counted when it comes back with the cookie it was given, which
    // its browser does within seconds (its first Refresh): visit() takes both requests as one
    // visit, at one instant, and answers the second. visit_once() sends the one request.
    room::decision visit(visitor& v, const std::string& room_id = "", bool solved = false) {
        room::decision d = visit_once(v, room_id, solved);
        const std::uint32_t arrival = room::visitor_flags::uncounted;
        const std::uint32_t not_arrival =
            room::visitor_flags::flagged | room::visitor_flags::challenged;
        if (d.what == room::action::queue && d.cookie_changed && d.cookie.accepted_at == 0 &&
            (d.cookie.flags & arrival) != 0 && (d.cookie.flags & not_arrival) == 0) {
            d = visit_once(v, room_id);
        }
        return d;
    }
    room::decision visit_once(visitor& v, const std::string& room_id = "", bool solved = false) {
        room::decision d = decide(v, room_id, solved);
        if (d.cookie_changed) {
            v.cookie = d.cookie;
        }
        return d;
    }

    // The origin answers `revoke` to a request of `v` (admitted): `v` keeps the cookie the
    // gateway sets on that answer.
    void revoke(visitor& v, const std::string& room_id = "") {
        const room::compiled_room* r =
            room_id.empty() ? &engine_->rooms().front() : engine_->find(room_id);
        v.cookie = engine_->revoke(*r, ws_, *v.cookie, now(), rng_);
    }

    room::engine& engine() { return *engine_; }
    // The origin's health as the engine reads it (open unless a test closes it).
    room::origin_gate& gate() { return *gate_; }
    room::worker_state& worker() { return ws_; }
    room::node_state& node() { return node_; }
    state::local_store& store() { return store_; }
    state::sync_task& sync_task() { return sync_; }
    room::rng& rng() { return rng_; }
    const room::room_state& state(const std::string& id) {
        static const room::room_state empty;
        auto snap = node_.snapshot();
        keep_ = snap;
        const room::room_state* s = snap->find(id);
        return s != nullptr ? *s : empty;
    }
    int top_ups() const { return top_ups_; }

  private:
    static state::sync_options peer_options(std::string node_id) {
        state::sync_options o;
        o.node_id = std::move(node_id);
        return o;
    }
    room::decision decide(const visitor& v, const std::string& room_id, bool solved) {
        const room::compiled_room* r =
            room_id.empty() ? &engine_->rooms().front() : engine_->find(room_id);
        const cookie::payload* c = v.cookie ? &*v.cookie : nullptr;
        return test::decide_with_top_ups(
            *engine_, *r, ws_, c, now(), rng_,
            [&] {
                ++top_ups_;
                sync_.top_up(r->id(), now(), [](bool) {});
            },
            solved);
    }

    std::shared_ptr<room::origin_gate> gate_ = std::make_shared<room::origin_gate>();
    util::manual_clock clock_;
    std::int64_t start_ = util::unix_ms(clock_.now());
    std::shared_ptr<config::config> cfg_;
    std::shared_ptr<room::engine> engine_;
    room::node_state node_;
    state::local_store own_store_;  // unused by a peer node
    state::local_store& store_;
    state::sync_task sync_;
    room::worker_state ws_;
    room::rng rng_;
    std::shared_ptr<const room::state_snapshot> keep_;
    int top_ups_ = 0;
};

}  // namespace waitroom::room_testing

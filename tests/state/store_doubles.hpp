#pragma once
// Test doubles for the state tests: a fixed start time, an engine with the one room `shop`, and
// one embedded store wrapped with the faults a networked store has (down, calls or answers in
// flight, an answer lost after the store applied the call).

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "support/room_config.hpp"
#include "waitroom/config/config.hpp"
#include "waitroom/room/engine.hpp"
#include "waitroom/state/error.hpp"
#include "waitroom/state/local_store.hpp"
#include "waitroom/state/sync_task.hpp"

namespace waitroom::test {

using namespace waitroom::state;  // the store interface these doubles implement

// A minute boundary, so window arithmetic in the tests starts clean.
inline constexpr std::int64_t t0 = 1'800'000'000'000 - 1'800'000'000'000 % 60'000;

// Two rooms: "shop" (total_active_users `shop`, as many new users a minute) on /, and "bad"
// (`bad` and `bad`) on /bad, for the tests of a room the store fails alone.
inline std::shared_ptr<room::engine> make_two_room_engine(std::uint32_t shop, std::uint32_t bad) {
    auto cfg = test::shop_config(shop, shop);
    config::room r = cfg->rooms[0];
    r.id = "bad";
    r.name = "Bad";
    r.path = "/bad";
    r.total_active_users = bad;
    r.new_users_per_minute = bad;
    cfg->rooms.push_back(r);
    return std::make_shared<room::engine>(cfg);
}

inline std::shared_ptr<room::engine> make_engine(std::uint32_t active, std::uint32_t per_minute,
                                                 config::duration session = std::chrono::minutes{
                                                     5}) {
    auto cfg = test::shop_config(active, per_minute);
    cfg->rooms[0].session_duration = session;
    return std::make_shared<room::engine>(cfg);
}

// The embedded store (its own, or one shared by several nodes) behind switches:
// - down: every call fails at once with errc::unavailable (an outage);
// - hold_calls: calls reach the store only at release_all() (a request in flight);
// - hold_answers: the store applies a sync now, its answer arrives at release_all();
// - lose_next: the next sync is applied but answered with `lose_with` (a lost reply: a timeout;
//   or an answer that did not parse, as when one room's script failed after others ran);
// - lose_next_top_up: the same for the next top-up.
class scripted_store final : public store {
  public:
    scripted_store() : inner(own_) {}
    explicit scripted_store(local_store& shared) : inner(shared) {}

    void sync(node_report report, sync_handler done) override {
        ++sync_calls;
        batches.push_back(report.rooms.empty() ? report.batch
                                               : batch_of(report, report.rooms.front()));
        if (hold_calls) {
            pending.push_back([this, report = std::move(report), done = std::move(done)]() mutable {
                apply_sync(std::move(report), std::move(done));
            });
            return;
        }
        apply_sync(std::move(report), std::move(done));
    }

    void top_up(top_up_request req, top_up_handler done) override {
        ++top_up_calls;
        top_up_requests.push_back(req);
        if (hold_calls) {
            pending.push_back([this, req = std::move(req), done = std::move(done)]() mutable {
                apply_top_up(std::move(req), std::move(done));
            });
            return;
        }
        apply_top_up(std::move(req), std::move(done));
    }

    void write_overrides(override_write w, override_handler done) override {
        if (down) {
            override_result r;
            r.ec = errc::unavailable;
            done(std::move(r));
            return;
        }
        inner.write_overrides(std::move(w), std::move(done));
    }

    // Runs what is held, in order; what it holds anew waits for the next call.
    void release_all() {
        auto p = std::move(pending);
        pending.clear();
        for (auto& f : p) {
            f();
        }
    }

  private:
    local_store own_;

  public:
    local_store& inner;
    bool down = false;
    bool hold_calls = false;
    bool hold_answers = false;
    bool lose_next = false;
    std::error_code lose_with = make_error_code(errc::timeout);
    bool lose_next_top_up = false;
    int sync_calls = 0;
    int top_up_calls = 0;
    std::vector<top_up_request> top_up_requests;  // in call order
    std::vector<std::uint64_t> batches;  // each sync's batch id (its first room's), in call order
    std::vector<std::function<void()>> pending;

  private:
    void apply_sync(node_report report, sync_handler done) {
        if (down) {
            sync_result r;
            r.ec = errc::unavailable;
            done(std::move(r));
            return;
        }
        inner.sync(std::move(report), [this, done = std::move(done)](sync_result r) mutable {
            if (lose_next) {
                lose_next = false;
                r = sync_result{lose_with, {}};
            }
            if (hold_answers) {
                pending.push_back(
                    [done = std::move(done), r = std::move(r)]() mutable { done(std::move(r)); });
                return;
            }
            done(std::move(r));
        });
    }

    void apply_top_up(top_up_request req, top_up_handler done) {
        if (down) {
            top_up_result r;
            r.ec = errc::unavailable;
            done(r);
            return;
        }
        inner.top_up(std::move(req), [this, done = std::move(done)](top_up_result r) {
            if (lose_next_top_up) {
                lose_next_top_up = false;
                r = top_up_result{make_error_code(errc::timeout), 0};
            }
            done(r);
        });
    }
};

// The embedded store failing some rooms alone, as Redis does when one room's key is clobbered
// or its answer does not parse, while the other rooms' scripts run:
// - refuse: the room's script fails before any write (nothing applied), errc::room_failed;
// - lose: the room is applied, its answer is an error all the same (outcome unknown).
// Top-ups of a refused room fail too.
class room_failing_store final : public store {
  public:
    explicit room_failing_store(local_store& shared) : inner(shared) {}

    void sync(node_report report, sync_handler done) override {
        ++sync_calls;
        node_report pass = report;
        pass.rooms.clear();
        for (const auto& r : report.rooms) {
            if (!refuse.contains(r.room)) {
                pass.rooms.push_back(r);
            }
        }
        sync_result applied;
        inner.sync(std::move(pass), [&](sync_result r) { applied = std::move(r); });
        sync_result out;
        std::size_t k = 0;
        for (const auto& r : report.rooms) {
            room_grant g;
            if (!refuse.contains(r.room)) {
                g = std::move(applied.rooms[k++]);
            }
            if (refuse.contains(r.room) || lose.contains(r.room)) {
                g = room_grant{};
                g.room = r.room;
                g.ec = make_error_code(errc::room_failed);
                ++failed_rooms;
            }
            out.rooms.push_back(std::move(g));
        }
        lose.clear();
        done(std::move(out));
    }

    void top_up(top_up_request req, top_up_handler done) override {
        if (refuse.contains(req.room)) {
            done(top_up_result{make_error_code(errc::room_failed), 0});
            return;
        }
        inner.top_up(std::move(req), std::move(done));
    }

    local_store& inner;
    std::set<std::string> refuse;
    std::set<std::string> lose;  // cleared after each sync
    int sync_calls = 0;
    int failed_rooms = 0;  // room answers that were failures
};

// One node on its own embedded store: the engine, the node's state and its sync task.
struct one_node {
    explicit one_node(std::shared_ptr<room::engine> e) : eng(std::move(e)) {
        sync.set_engine(eng);
    }
    std::shared_ptr<room::engine> eng;
    room::node_state node;
    state::local_store st;
    state::sync_task sync{node, st, {}};
};

}  // namespace waitroom::test

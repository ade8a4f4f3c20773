// Per-request cost of the room check (DESIGN.md §5): what the gateway does for one request, from
// the Cookie header to the decision. Targets: verify a cookie + decide < 1 µs; issue a cookie
// (decide for a new visitor + seal + Set-Cookie) < 2 µs. The room state comes from a real sync
// against the embedded store, so the decision reads the same snapshot and slot pool as in
// production.

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "waitroom/config/config.hpp"
#include "waitroom/cookie/codec.hpp"
#include "waitroom/cookie/http_cookie.hpp"
#include "waitroom/room/engine.hpp"
#include "waitroom/state/local_store.hpp"
#include "waitroom/state/sync_task.hpp"

namespace {

using namespace waitroom;

// Window-aligned, so a visitor seen at t1 + 100 is in the same window as the requests below.
constexpr std::int64_t t0 = 1'800'000'000'000 - 1'800'000'000'000 % 60'000;
constexpr std::int64_t t1 = t0 + 20'000;
constexpr std::int64_t now_ms = t1 + 500;
const util::sys_time now_tp{std::chrono::milliseconds{now_ms}};

std::shared_ptr<const cookie::key_ring> bench_ring() {
    cookie::key k;
    k.id = "k1";
    for (std::size_t i = 0; i < cookie::key_size; ++i) {
        k.secret[i] = static_cast<std::uint8_t>(i * 5 + 3);
    }
    return std::make_shared<const cookie::key_ring>(std::vector<cookie::key>{k});
}

config::room make_room(std::string id, std::string path, std::uint32_t limit) {
    config::room r;
    r.id = std::move(id);
    r.name = r.id;
    r.host = "shop.example.com";
    r.path = std::move(path);
    r.total_active_users = limit;
    r.new_users_per_minute = limit;
    r.cookie_suffix = r.id;
    config::bypass_rule statics;  // a rule to check, as most rooms have
    statics.type = config::bypass_rule::kind::path_prefix;
    statics.value = r.path + "/static/";
    r.bypass.push_back(statics);
    return r;
}

// One node with two rooms: `shop` with room to spare (admits), `full` at its limit with a queue
// in an older bucket (queues). Both states come from syncs with the embedded store.
struct fixture {
    std::shared_ptr<const cookie::key_ring> ring = bench_ring();
    std::shared_ptr<room::engine> eng;
    room::node_state node;
    state::local_store store;
    std::unique_ptr<state::sync_task> sync;
    std::unique_ptr<room::worker_state> ws;
    room::rng rng{42};
    cookie::payload admitted;  // a `shop` visitor admitted at t1 + 100
    cookie::payload queued;    // a `full` visitor queued at t1 + 100 behind an older bucket

    fixture() {
        auto cfg = std::make_shared<config::config>();
        cfg->rooms.push_back(make_room("shop", "/checkout", 2'000'000'000));
        cfg->rooms.push_back(make_room("full", "/tickets", 100));
        eng = std::make_shared<room::engine>(cfg);
        sync = std::make_unique<state::sync_task>(node, store, state::sync_options{});
        sync->set_engine(eng);
        ws = std::make_unique<room::worker_state>(node);
        sync->run_once(t0);
        const room::compiled_room& full = *eng->find("full");
        for (int i = 0; i < 150; ++i) {  // 100 admitted, 50 queued in bucket t0
            eng->decide(full, *ws, nullptr, t0 + 100, rng, room::attempt::after_second_top_up);
        }
        ws->flush();
        sync->run_once(t1);
        admitted = eng->decide(*eng->find("shop"), *ws, nullptr, t1 + 100, rng).cookie;
        room::decision q = eng->decide(full, *ws, nullptr, t1 + 100, rng);
        queued = q.cookie;
        ws->flush();
        sync->run_once(t1 + 200);
        // The new-visitor benchmark admits one per iteration: keep the lease usable for
        // the whole run (no sync runs while measuring), and never ask for a top-up.
        node.pool("shop").add(1'000'000'000);
        node.pool("shop").extend_until(now_ms + 1'000'000);
        node.pool("full").suspend_top_ups_until(now_ms + 1'000'000);
        if (q.what != room::action::queue || queued.accepted_at != 0) {
            throw std::runtime_error("fixture: the full room did not queue");
        }
    }
};

// `path` is a canonical match path, as the gateway hands it over.
room::request_view request(std::string_view path) {
    room::request_view r;
    r.method = "GET";
    r.host = "shop.example.com";
    r.path = path;
    return r;
}

const room::compiled_room* eng_room(fixture& f, std::string_view target) {
    return f.eng->route(request(target)).room;
}

// The gateway's step for one request with a cookie: route, find our cookie, open it, decide.
template <class Check>
void verify_and_decide(benchmark::State& state, fixture& f, std::string_view target,
                       const cookie::payload& visitor, Check check) {
    const room::compiled_room& r = *eng_room(f, target);
    const std::string name = cookie::cookie_name(r.config().cookie_suffix);
    const std::string header = "_ga=GA1.2.3.4; theme=dark; " + name + "=" +
                               cookie::encode(*f.ring, visitor).value() + "; session=abc";
    const room::request_view req = request(target);
    const std::chrono::milliseconds session = r.config().session_duration;
    for (auto _ : state) {
        room::route_result rr = f.eng->route(req);
        auto value = cookie::find_cookie(header, name);
        auto c = cookie::decode(*f.ring, value.value_or(""), rr.room->id(), now_tp, session);
        room::decision d = f.eng->decide(*rr.room, *f.ws, c ? &*c : nullptr, now_ms, f.rng);
        if (!check(d)) {
            state.SkipWithError("unexpected decision");
            break;
        }
        benchmark::DoNotOptimize(d);
    }
}

// An admitted visitor in the window of their last check-in: the cookie is kept as it is.
void BM_VerifyCookieAndDecideAdmitted(benchmark::State& state) {
    fixture f;
    verify_and_decide(state, f, "/checkout/cart", f.admitted, [](const room::decision& d) {
        return d.what == room::action::admit && !d.cookie_changed;
    });
}
BENCHMARK(BM_VerifyCookieAndDecideAdmitted);

// A queued visitor behind an older bucket refreshes: the decision fills the queue page values.
void BM_VerifyCookieAndDecideQueued(benchmark::State& state) {
    fixture f;
    verify_and_decide(state, f, "/tickets/buy", f.queued,
                      [](const room::decision& d) { return d.what == room::action::queue; });
}
BENCHMARK(BM_VerifyCookieAndDecideQueued);

// A new visitor without a cookie is admitted and gets one: decide, seal, Set-Cookie.
void BM_IssueCookieForNewVisitor(benchmark::State& state) {
    fixture f;
    const room::request_view req = request("/checkout/cart");
    const room::compiled_room& shop = *f.eng->find("shop");
    const std::string name = cookie::cookie_name(shop.config().cookie_suffix);
    const std::string header = "_ga=GA1.2.3.4; theme=dark";
    for (auto _ : state) {
        room::route_result rr = f.eng->route(req);
        auto value = cookie::find_cookie(header, name);
        benchmark::DoNotOptimize(value);
        room::decision d = f.eng->decide(*rr.room, *f.ws, nullptr, now_ms, f.rng);
        if (d.what != room::action::admit || !d.cookie_changed) {
            state.SkipWithError("new visitor not admitted");
            break;
        }
        auto sealed = cookie::encode(*f.ring, d.cookie);
        std::string set_cookie = cookie::set_cookie_value(
            name, sealed.value(), std::chrono::seconds{d.cookie_max_age_seconds},
            shop.config().cookie_attrs, true);
        benchmark::DoNotOptimize(set_cookie);
    }
}
BENCHMARK(BM_IssueCookieForNewVisitor);

// The decision alone, without the cookie work, to see where the time goes.
void BM_DecideOnlyAdmitted(benchmark::State& state) {
    fixture f;
    const room::compiled_room& shop = *f.eng->find("shop");
    for (auto _ : state) {
        room::decision d = f.eng->decide(shop, *f.ws, &f.admitted, now_ms, f.rng);
        benchmark::DoNotOptimize(d);
    }
}
BENCHMARK(BM_DecideOnlyAdmitted);

void BM_RouteOnly(benchmark::State& state) {
    fixture f;
    const room::request_view req = request("/checkout/cart");
    for (auto _ : state) {
        room::route_result rr = f.eng->route(req);
        benchmark::DoNotOptimize(rr);
    }
}
BENCHMARK(BM_RouteOnly);

}  // namespace

BENCHMARK_MAIN();

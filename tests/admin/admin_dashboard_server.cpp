// Not a test by itself: the admin listener on 127.0.0.1 port 0 with a fake backend whose numbers
// move, for the dashboard's browser test (tests/browser/dashboard.test.mjs) and a look by hand.
//   admin_dashboard_server [--token TOKEN]
// Prints "listening PORT" once bound; runs until its standard input closes.
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <thread>

#include "admin/admin_fake_backend.hpp"
#include "waitroom/metrics/room_history.hpp"
#include "waitroom/admin/admin_server.hpp"

namespace {

using namespace waitroom;
using admin::admin_room_status;
using admin::room_queue_status;

admin_room_status room(std::string id, room_queue_status st, std::int64_t limit,
                       std::int64_t rate) {
    admin_room_status s;
    s.id = std::move(id);
    s.status = st;
    s.total_active_users = limit;
    s.new_users_per_minute = rate;
    s.nodes = 2;
    s.suspended = st == room_queue_status::suspended;
    return s;
}

// Smooth, deterministic movement so the charts have shapes to draw.
void animate(admin_room_status& r, double t) {
    auto wave = [t](double period, double phase) { return std::sin(t / period + phase); };
    if (r.id == "shop") {
        r.estimated_total_active_users = std::lround(480 + 20 * wave(3, 0));
        r.estimated_queued_users = std::lround(320 + 140 * wave(5, 1));
        r.admitted_this_minute = std::lround(185 + 15 * wave(2, 2));
    } else if (r.id == "launch") {
        r.estimated_total_active_users = std::lround(40 + 10 * wave(4, 0));
        r.estimated_queued_users = std::lround(900 + 300 * (t / (t + 20)) + 40 * wave(3, 0));
        r.admitted_this_minute = 0;
    } else if (r.id == "docs") {
        r.estimated_total_active_users = std::lround(120 + 60 * wave(4, 2));
        r.estimated_queued_users = 0;
        r.admitted_this_minute = std::lround(60 + 25 * wave(3, 1));
    } else {
        r.estimated_total_active_users = 0;
        r.estimated_queued_users = 0;
        r.admitted_this_minute = 0;
    }
    if (r.status == room_queue_status::suspended) {
        r.max_estimated_time_minutes = 0;
    } else if (r.new_users_per_minute > 0) {
        r.max_estimated_time_minutes =
            (r.estimated_queued_users + r.new_users_per_minute - 1) / r.new_users_per_minute;
    }
}

// Half an hour of a room's minutes, made by the real registry and history from deterministic
// observations, so the analytics charts have shapes and the CSV has rows.
std::vector<metrics::minute_row> past_half_hour(const std::string& id, std::int64_t now_ms,
                                                double scale) {
    metrics::metric_set ms(1);
    const auto& m = ms.room(id);
    metrics::room_history h;
    const std::int64_t start = now_ms - 30 * 60'000;
    h.record(start, metrics::read_room(m));
    for (int step = 1; step <= 90; ++step) {  // every 20 s
        const double t = step / 9.0;
        const int admitted = static_cast<int>(std::lround(scale * (6 + 3 * std::sin(t))));
        m.admitted.inc(0, admitted + 2);
        m.admitted_from_queue.inc(0, admitted);
        if (step % 7 == 0) {
            m.admitted_out_of_order.inc(0, 1);
        }
        for (int i = 0; i < admitted; ++i) {
            m.queue_wait.observe(0, 120 + 90 * std::sin(t + i) + 40 * i);
            m.estimate_error.observe(0, 25 * std::sin(t * 1.7 + i) + 10 - 4 * i);
        }
        if (step % 3 == 0) {
            m.abandoned.inc(0, 1 + step % 4);
            m.session_duration.observe(0, 240 + 60 * std::cos(t));
        }
        if (step % 11 == 0) {
            m.revoked.inc(0, 1);
            m.flagged.inc(0, step % 2);
        }
        auto reading = metrics::read_room(m);
        reading.queued_users = std::lround(scale * (300 + 100 * std::sin(t)));
        h.record(start + step * 20'000, reading);
    }
    return h.rows(0, now_ms + 60'000);
}

}  // namespace

int main(int argc, char** argv) {
    std::optional<std::string> token;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--token" && i + 1 < argc) {
            token = argv[++i];
        } else {
            std::fprintf(stderr, "usage: %s [--token TOKEN]\n", argv[0]);
            return 2;
        }
    }

    auto backend = std::make_shared<test::fake_admin_backend>();
    backend->add_room(room("shop", room_queue_status::queueing, 500, 200));
    auto launch = room("launch", room_queue_status::event_prequeueing, 300, 100);
    launch.event_id = 2026;
    launch.queue_all = true;
    backend->add_room(launch);
    backend->add_room(room("docs", room_queue_status::not_queueing, 1000, 400));
    backend->add_room(room("legacy", room_queue_status::suspended, 50, 20));
    backend->set_metrics("# fake backend\n");
    const std::int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                    std::chrono::system_clock::now().time_since_epoch())
                                    .count();
    backend->set_now(now_ms);
    backend->set_rows("shop", past_half_hour("shop", now_ms, 1.0));
    backend->set_rows("launch", past_half_hour("launch", now_ms, 0.3));
    backend->add_event("launch", "spring launch", {now_ms - 20 * 60'000, now_ms + 60 * 60'000});

    boost::asio::io_context ioc;
    admin::admin_server server(ioc, backend);
    server.set_token(token);
    server.start({boost::asio::ip::make_address("127.0.0.1"), 0});

    auto start = std::chrono::steady_clock::now();
    boost::asio::steady_timer timer(ioc);
    std::function<void()> tick = [&] {
        double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        backend->update([t](admin_room_status& r) { animate(r, t); });
        backend->set_now(std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count());
        timer.expires_after(std::chrono::milliseconds(200));
        timer.async_wait([&](boost::system::error_code ec) {
            if (!ec) {
                tick();
            }
        });
    };
    tick();

    std::printf("listening %u\n", static_cast<unsigned>(server.local_endpoint().port()));
    std::fflush(stdout);

    // The driving test closes our stdin (or dies): then stop.
    std::thread watcher([&] {
        std::string line;
        while (std::getline(std::cin, line)) {
        }
        boost::asio::post(ioc, [&] {
            timer.cancel();
            server.stop();
            ioc.stop();
        });
    });
    ioc.run();
    watcher.join();
    return 0;
}

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

    boost::asio::io_context ioc;
    admin::admin_server server(ioc, backend);
    server.set_token(token);
    server.start({boost::asio::ip::make_address("127.0.0.1"), 0});

    auto start = std::chrono::steady_clock::now();
    boost::asio::steady_timer timer(ioc);
    std::function<void()> tick = [&] {
        double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        backend->update([t](admin_room_status& r) { animate(r, t); });
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

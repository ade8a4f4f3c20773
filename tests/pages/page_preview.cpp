// Renders every built-in queue and reject page, in a few states, to OUT_DIR as HTML files so a
// person (or a headless browser) can look at them. Not a test.

#include "waitroom/pages/page_renderer.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

int main(int argc, char** argv) {
    using namespace waitroom;
    if (argc != 2) {
        std::fprintf(stderr, "usage: page_preview OUT_DIR\n");
        return 2;
    }
    const std::filesystem::path out = argv[1];
    std::filesystem::create_directories(out);

    config::config cfg;
    for (const auto lang : pages::page_templates::languages()) {
        config::room r;
        r.id = std::string(lang);
        r.name = "Shop checkout";
        r.default_template_language = std::string(lang);
        cfg.rooms.push_back(r);
    }
    auto loaded = pages::page_templates::load(cfg);
    if (!loaded.ok()) {
        for (const auto& p : loaded.problems) {
            std::fprintf(stderr, "%s\n", p.to_string().c_str());
        }
        return 1;
    }
    pages::page_renderer renderer(loaded.templates);

    room::page_model fifo;
    fifo.room_name = "Shop checkout";
    fifo.in_waiting_room = true;
    fifo.queue_position = 137;
    fifo.wait_time_known = true;
    fifo.wait_time = 12;
    fifo.wait_time_formatted = "12 minutes";
    fifo.wait_time_hour_minutes = 12;
    fifo.queue_is_full = true;
    fifo.last_updated_ms = 1795326000000;  // 2026-11-22T05:40:00Z
    fifo.refresh_interval_seconds = 20;

    room::page_model random = fifo;
    random.queueing_method = "random";
    random.is_fifo_queue = false;
    random.is_random_queue = true;
    random.wait_time_25_percentile = 4;
    random.wait_time_50_percentile = 9;
    random.wait_time_75_percentile = 15;

    room::page_model prequeue = fifo;
    prequeue.wait_time_known = false;
    prequeue.queue_all = true;
    prequeue.is_event_prequeueing = true;
    prequeue.time_until_event_start = 95;
    prequeue.time_until_event_start_formatted = "1 hour 35 minutes";

    room::page_model paused = fifo;
    paused.wait_time_known = false;
    paused.queue_all = true;

    for (const auto lang : pages::page_templates::languages()) {
        const std::string l(lang);
        const auto write = [&](const std::string& name, const pages::page_body& body) {
            std::ofstream(out / (name + "." + l + ".html"), std::ios::binary) << body->identity;
        };
        write("queue-fifo", renderer.queue_page(l, "", {1, 1}, fifo));
        write("queue-random", renderer.queue_page(l, "", {1, 2}, random));
        write("queue-prequeue", renderer.queue_page(l, "", {1, 3}, prequeue));
        write("queue-paused", renderer.queue_page(l, "", {1, 4}, paused));
        write("reject", renderer.reject_page(l, {1, 5}, fifo));
    }
    std::printf("%s\n", out.c_str());
    return 0;
}

// The access log's line per request, to tell whether nlohmann::json would do for it: the
// gateway's own writer against the same line made with nlohmann::json (invalid UTF-8 replaced),
// both handed to an spdlog logger with a null sink, for a plain request and a hostile one (a
// 2 KiB target of invalid bytes and control characters).

#include <benchmark/benchmark.h>
#include <spdlog/logger.h>
#include <spdlog/sinks/null_sink.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <string>

#include "waitroom/util/access_log.hpp"

namespace {

using waitroom::util::access_log;
using waitroom::util::access_record;

std::shared_ptr<spdlog::logger> null_logger() {
    auto l =
        std::make_shared<spdlog::logger>("bench", std::make_shared<spdlog::sinks::null_sink_st>());
    l->set_pattern("%v");
    return l;
}

const std::string plain_target = "/products/shoes/running?size=42&colour=blue";
const std::string hostile_target = [] {
    std::string t = "/";
    for (int i = 0; i < 1024; ++i) {
        t += static_cast<char>(0xC3 + (i % 7));  // lead bytes without their continuation
        t += static_cast<char>(i % 32);          // control characters
    }
    return t;
}();

access_record record(const std::string& target) {
    access_record r;
    r.remote = "203.0.113.7";
    r.method = "GET";
    r.target = target;
    r.host = "shop.example";
    r.status = 200;
    r.bytes_sent = 5120;
    r.duration = std::chrono::microseconds{412};
    r.room = "shop";
    r.decision = "admit";
    r.unix_ms = 1'800'000'000'123;
    return r;
}

void own_writer(benchmark::State& state, const std::string& target) {
    access_log log(null_logger());
    const auto r = record(target);
    for (auto _ : state) {
        log.write(r);
    }
}

void with_nlohmann(benchmark::State& state, const std::string& target) {
    auto logger = null_logger();
    const auto r = record(target);
    for (auto _ : state) {
        nlohmann::json j;
        j["ts"] = r.unix_ms;
        j["remote"] = r.remote;
        j["method"] = r.method;
        j["target"] = r.target.substr(0, access_log::max_field_bytes);
        j["host"] = r.host.substr(0, access_log::max_field_bytes);
        j["status"] = r.status;
        j["bytes"] = r.bytes_sent;
        j["us"] = r.duration.count();
        j["room"] = r.room;
        j["decision"] = r.decision;
        logger->info(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    }
}

BENCHMARK_CAPTURE(own_writer, plain, plain_target);
BENCHMARK_CAPTURE(with_nlohmann, plain, plain_target);
BENCHMARK_CAPTURE(own_writer, hostile, hostile_target);
BENCHMARK_CAPTURE(with_nlohmann, hostile, hostile_target);

}  // namespace

BENCHMARK_MAIN();

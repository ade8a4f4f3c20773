#include "waitroom/server/logging.hpp"

#include <spdlog/async.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace waitroom::server {

void init_logging() {
    // stderr keeps stdout free for `access_log: "-"`; scripts and tests parse these lines.
    auto logger = spdlog::stderr_logger_mt("waitroomd");
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
    logger->flush_on(spdlog::level::info);
    spdlog::set_default_logger(std::move(logger));
}

std::optional<spdlog::level::level_enum> parse_level(const std::string& name) {
    static constexpr std::pair<const char*, spdlog::level::level_enum> names[] = {
        {"trace", spdlog::level::trace}, {"debug", spdlog::level::debug},
        {"info", spdlog::level::info},   {"warn", spdlog::level::warn},
        {"error", spdlog::level::err},   {"critical", spdlog::level::critical},
        {"off", spdlog::level::off},
    };
    for (const auto& [n, level] : names) {
        if (name == n) {
            return level;
        }
    }
    return std::nullopt;
}

void apply_level(const std::string& name) {
    if (auto level = parse_level(name)) {
        spdlog::set_level(*level);
    } else {
        spdlog::warn("logging.level: unknown level '{}', keeping '{}'", name,
                     spdlog::level::to_string_view(spdlog::get_level()));
    }
}

std::shared_ptr<util::access_log> open_access_log(const std::string& where) {
    if (where.empty()) {
        return nullptr;
    }
    // One background thread writes; a full queue drops the oldest line instead of stalling a
    // worker (the access log must never slow the request path).
    static constexpr std::size_t queue_lines = 64 * 1024;
    if (!spdlog::thread_pool()) {
        spdlog::init_thread_pool(queue_lines, 1);
    }
    std::shared_ptr<spdlog::logger> logger;
    if (where == "-") {
        logger = spdlog::create_async_nb<spdlog::sinks::stdout_sink_mt>("access");
    } else {
        logger = spdlog::create_async_nb<spdlog::sinks::basic_file_sink_mt>("access", where);
    }
    logger->set_pattern("%v");
    logger->set_level(spdlog::level::info);
    return std::make_shared<util::access_log>(std::move(logger));
}

}  // namespace waitroom::server

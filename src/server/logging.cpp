#include "waitroom/server/logging.hpp"

#include <spdlog/async.h>
#include <spdlog/details/file_helper.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <mutex>

namespace waitroom::server {

namespace {

// How long an access-log line may sit in the file buffer: `tail -f` sees it within this, and
// the logger's thread still writes in blocks under load instead of one syscall per line.
constexpr auto access_log_flush_interval = std::chrono::seconds{1};

// A file sink that reopens its file at the same path on request: spdlog 1.10's basic_file_sink
// cannot, and after logrotate renames the file it would write to the renamed one for ever. A
// request only sets a flag; the logger's own thread reopens at its next flush, under the sink's
// mutex (no line is being written meanwhile) and in order with the lines queued before it.
class reopenable_file_sink final : public spdlog::sinks::base_sink<std::mutex> {
  public:
    explicit reopenable_file_sink(const std::string& path)
        : file_(std::make_unique<spdlog::details::file_helper>()) {
        file_->open(path);
    }

    void request_reopen() { reopen_.store(true, std::memory_order_release); }

  protected:
    void sink_it_(const spdlog::details::log_msg& msg) override {
        spdlog::memory_buf_t line;
        formatter_->format(msg, line);
        file_->write(line);
    }

    void flush_() override {
        if (reopen_.exchange(false, std::memory_order_acq_rel)) {
            reopen();
        }
        file_->flush();
    }

  private:
    void reopen() {
        // The new file is opened before the old one is let go: when it cannot be (a full disk,
        // a removed folder), the lines keep going to the old file rather than nowhere.
        auto fresh = std::make_unique<spdlog::details::file_helper>();
        try {
            fresh->open(file_->filename());
        } catch (const spdlog::spdlog_ex& e) {
            spdlog::error("access log: cannot reopen '{}': {}; still writing to the old file",
                          file_->filename(), e.what());
            return;
        }
        file_ = std::move(fresh);  // the old file is flushed and closed here
        spdlog::info("access log reopened: {}", file_->filename());
    }

    std::unique_ptr<spdlog::details::file_helper> file_;
    std::atomic<bool> reopen_{false};
};

}  // namespace

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
        // The daemon's own log only: spdlog::set_level would also quiet the access log, which
        // records every request whatever this level is.
        spdlog::default_logger()->set_level(*level);
    } else {
        spdlog::warn("logging.level: unknown level '{}', keeping '{}'", name,
                     spdlog::level::to_string_view(spdlog::default_logger()->level()));
    }
}

void log_level_changed(const std::string& from, const std::string& to) {
    auto& logger = *spdlog::default_logger();
    if (logger.level() == spdlog::level::off) {
        return;
    }
    const auto text = fmt::format("reload: logging.level {} -> {}", from, to);
    if (logger.should_log(spdlog::level::info)) {
        logger.info(text);
        return;
    }
    // Past the logger's level, straight to its sinks (which keep theirs at trace).
    const spdlog::details::log_msg msg(logger.name(), spdlog::level::info, text);
    for (const auto& sink : logger.sinks()) {
        sink->log(msg);
        sink->flush();
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
        logger = spdlog::create_async_nb<reopenable_file_sink>("access", where);
        spdlog::flush_every(access_log_flush_interval);
    }
    logger->set_pattern("%v");
    logger->set_level(spdlog::level::info);
    return std::make_shared<util::access_log>(std::move(logger));
}

bool reopen_access_log(const util::access_log& log) {
    bool any = false;
    for (const auto& sink : log.logger().sinks()) {
        if (auto file = std::dynamic_pointer_cast<reopenable_file_sink>(sink)) {
            file->request_reopen();
            any = true;
        }
    }
    if (any) {
        // An async logger's flush is a message queued behind every line written so far: the
        // logger's thread writes those to the old file, then reopens.
        log.logger().flush();
    }
    return any;
}

}  // namespace waitroom::server

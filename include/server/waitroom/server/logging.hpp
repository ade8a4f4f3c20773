#pragma once
// Process logging: the main logger (stderr, level from `logging.level`) and the optional access
// log (`logging.access_log`), which runs on an spdlog async logger so that writing it never
// blocks a worker thread, and which reopens its file on request for logrotate.

#include <memory>
#include <optional>
#include <string>

#include <spdlog/common.h>

#include "waitroom/util/access_log.hpp"

namespace waitroom::server {

// Makes the default spdlog logger write to stderr with the house pattern. Call once, early.
void init_logging();

// The level named by `logging.level`, or nullopt for an unknown name.
std::optional<spdlog::level::level_enum> parse_level(const std::string& name);

// Sets the default logger's level; an unknown name keeps the current level and logs a warning.
void apply_level(const std::string& name);

// Logs "reload: logging.level <from> -> <to>" at info once the new level is in force, even when
// that level hides info lines (not when it is "off"): a quieter level would otherwise hide the
// line that says it took effect.
void log_level_changed(const std::string& from, const std::string& to);

// Opens the access log: "" = off (returns null), "-" = stdout, otherwise a file appended to.
// Throws spdlog::spdlog_ex when the file cannot be opened (a startup error).
std::shared_ptr<util::access_log> open_access_log(const std::string& where);

// Reopens the access log file at its configured path (REOPEN_LOGS_SIGNAL, after logrotate
// renamed it). The reopen runs on the logger's own thread, in order with the lines: a line
// queued after this call goes to a new file at the path, and one already written stays in the
// renamed file. Logs "access log reopened" (or why not) when done. False when `log` writes to
// no file (stdout), so there is nothing to reopen.
bool reopen_access_log(const util::access_log& log);

}  // namespace waitroom::server

#pragma once
// The gateway as a process: worker threads (one io_context and one gateway::worker each),
// listeners resolved once for all workers, and the control loop that handles signals — reload
// on RELOAD_SIGNAL, drain and exit on GRACEFUL_SHUTDOWN_SIGNALS, reopen the access log on
// REOPEN_LOGS_SIGNAL. Only this module creates threads or handles signals.

#include <csignal>
#include <memory>
#include <string>
#include <vector>

#include "waitroom/config/config.hpp"
#include "waitroom/config/load.hpp"

namespace waitroom::server {

// Reloads the configuration file in place (nghttpx names signals for their purpose).
inline constexpr int RELOAD_SIGNAL = SIGHUP;
// Stops accepting, lets in-flight requests finish (up to limits.drain_timeout), then exits.
inline constexpr int GRACEFUL_SHUTDOWN_SIGNALS[] = {SIGTERM, SIGINT};
// Reopens the access log file at its configured path, after logrotate renamed it.
inline constexpr int REOPEN_LOGS_SIGNAL = SIGUSR1;

// Loads and validates a configuration file completely: the YAML and every page template it
// names. What `check`, the start and a reload all use.
config::load_result load_config(const std::string& path);

// What `waitroomd check` finds: load_config's result, and besides it the files it names opened as
// a start would open them (TLS certificates and keys: readable, each key matching its
// certificate, not expired). Such errors are put in `loaded.problems` (and `loaded.cfg` is then
// null); `warnings` are for the operator only (a certificate that expires soon).
struct check_result {
    config::load_result loaded;
    std::vector<config::problem> warnings;
};
check_result check_config(const std::string& path);

class server {
  public:
    // `config_path` is the file `cfg` came from; a reload reads it again.
    server(std::string config_path, config::snapshot cfg);
    ~server();
    server(const server&) = delete;
    server& operator=(const server&) = delete;

    // Starts the workers and blocks until a graceful shutdown has finished. Returns the
    // process exit code: 0 after a shutdown, 1 when startup failed (the reason is logged).
    int run();

    // Starts a graceful shutdown as a signal would; any thread.
    void stop();

  private:
    struct impl;
    std::unique_ptr<impl> impl_;
};

}  // namespace waitroom::server

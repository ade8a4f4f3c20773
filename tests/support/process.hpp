#pragma once
// Whole-process test helpers: free loopback ports, temporary config files, and a spawned
// `waitroomd` (or any program) with its stdout/stderr captured to files. A `child_process`
// that is still running when it goes out of scope is killed and reaped, so a failing test
// leaves no stray process behind.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace waitroom::test {

// Path of the waitroomd binary under test (set by CMake).
std::string waitroomd_path();

// A loopback port that refuses connections for as long as this lives: bound, never listened
// on, so that no test running beside it can take it (a port released at once was taken, once).
class closed_port {
  public:
    closed_port();
    ~closed_port();
    closed_port(const closed_port&) = delete;
    closed_port& operator=(const closed_port&) = delete;
    std::uint16_t port() const { return port_; }

  private:
    int fd_ = -1;
    std::uint16_t port_ = 0;
};

// True once 127.0.0.1:port accepts a TCP connection, polling until `timeout`.
bool wait_port_open(std::uint16_t port, std::chrono::milliseconds timeout);

// A fresh folder under the system temp folder, removed with everything in it on destruction.
class temp_dir {
  public:
    temp_dir();
    ~temp_dir();
    temp_dir(const temp_dir&) = delete;
    temp_dir& operator=(const temp_dir&) = delete;

    const std::filesystem::path& path() const { return path_; }
    // Writes `content` to `name` inside the folder (mode 0600) and returns its full path.
    std::string write(const std::string& name, std::string_view content) const;

  private:
    std::filesystem::path path_;
};

class child_process {
  public:
    // Starts `program` with `args` (argv[1..]) via posix_spawn, stdout and stderr redirected to
    // files in `log_dir`. Throws std::runtime_error when it cannot start.
    child_process(const std::string& program, const std::vector<std::string>& args,
                  const std::filesystem::path& log_dir);
    // Kills (SIGKILL) and reaps the process if it is still running.
    ~child_process();
    child_process(const child_process&) = delete;
    child_process& operator=(const child_process&) = delete;

    pid_t pid() const { return pid_; }
    bool running();
    void send_signal(int sig) const;

    // Waits for the process to end: its exit code, 128 + signal when killed by one, or
    // nullopt when it is still running after `timeout`.
    std::optional<int> wait_exit(std::chrono::milliseconds timeout);

    std::string stdout_text() const;
    std::string stderr_text() const;
    // Polls stdout+stderr until `needle` appears, the process exits, or `timeout` passes.
    bool wait_for_output(std::string_view needle, std::chrono::milliseconds timeout);
    // How many times `needle` occurs in stdout+stderr.
    std::size_t count_output(std::string_view needle) const;

    // Resident set size in KiB (VmRSS from /proc/PID/status); 0 when unknown.
    std::uint64_t rss_kib() const;

  private:
    pid_t pid_ = -1;
    std::optional<int> exit_code_;
    std::filesystem::path out_path_;
    std::filesystem::path err_path_;
};

// Result of running a program to completion.
struct run_result {
    int exit_code = -1;
    std::string out;
    std::string err;
};

// Runs `program args...` and waits up to `timeout` (then kills it and fails the result with
// exit code -1).
run_result run_to_exit(const std::string& program, const std::vector<std::string>& args,
                       std::chrono::milliseconds timeout = std::chrono::seconds{30});

// `waitroomd` started with `-c config_path`, waited for until it logs its listener URL.
class daemon {
  public:
    daemon(const std::string& config_path, const std::filesystem::path& log_dir);

    // Waits for the "listening on http://HOST:PORT" line; returns the port, or 0 when the
    // daemon did not announce one within `timeout` (it may have exited; see output()).
    std::uint16_t wait_listening(std::chrono::milliseconds timeout = std::chrono::seconds{15});
    child_process& process() { return proc_; }
    std::string output() const { return proc_.stdout_text() + proc_.stderr_text(); }

  private:
    child_process proc_;
};

}  // namespace waitroom::test

#pragma once
// Test support for the Redis store: a real `redis-server` on a free loopback port, started by
// the test and killed at teardown, `redis-cli` for looking inside, and a helper that runs an
// io_context until a store call has answered.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace waitroom::test {

inline std::uint16_t free_loopback_port() {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    socklen_t len = sizeof a;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
        ::close(fd);
        throw std::runtime_error("no free loopback port");
    }
    ::close(fd);
    return ntohs(a.sin_port);
}

inline bool loopback_port_open(std::uint16_t port) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(fd);
    return ok;
}

class redis_server {
  public:
    explicit redis_server(std::vector<std::string> extra = {})
        : port_(free_loopback_port()), extra_(std::move(extra)) {
        start();
    }
    ~redis_server() { kill(); }
    redis_server(const redis_server&) = delete;
    redis_server& operator=(const redis_server&) = delete;

    std::uint16_t port() const { return port_; }
    bool running() const { return pid_ > 0; }

    // Starts (again) on the same port; waits until it accepts connections.
    void start() {
        std::vector<std::string> args{
            "redis-server", "--port", std::to_string(port_), "--bind", "127.0.0.1",  "--save", "",
            "--appendonly", "no",     "--daemonize",         "no",     "--loglevel", "warning"};
        args.insert(args.end(), extra_.begin(), extra_.end());
        std::vector<char*> argv;
        for (auto& a : args) {
            argv.push_back(a.data());
        }
        argv.push_back(nullptr);
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_addclosefrom_np(&fa, 3);  // no socket of the test goes along
        int rc = posix_spawnp(&pid_, "redis-server", &fa, nullptr, argv.data(), environ);
        posix_spawn_file_actions_destroy(&fa);
        if (rc != 0) {
            pid_ = -1;
            throw std::runtime_error("cannot start redis-server");
        }
        for (int i = 0; i < 500 && !loopback_port_open(port_); ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds{10});
        }
        if (!loopback_port_open(port_)) {
            throw std::runtime_error("redis-server did not open its port");
        }
    }
    // SIGKILL and reap: the server is gone at once, as in a crash.
    void kill() {
        if (pid_ > 0) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
            pid_ = -1;
        }
    }
    void pause() const { ::kill(pid_, SIGSTOP); }
    void resume() const { ::kill(pid_, SIGCONT); }

    // Runs `redis-cli -p PORT args...` and returns its output, trimmed.
    std::string cli(const std::string& args, const std::string& auth = "") const {
        std::string cmd = "redis-cli -p " + std::to_string(port_) + " " +
                          (auth.empty() ? "" : "--no-auth-warning -a " + auth + " ") + args;
        std::string out;
        if (FILE* p = ::popen(cmd.c_str(), "r")) {
            char buf[4096];
            std::size_t n = 0;
            while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) {
                out.append(buf, n);
            }
            ::pclose(p);
        }
        while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) {
            out.pop_back();
        }
        return out;
    }

  private:
    std::uint16_t port_;
    std::vector<std::string> extra_;
    pid_t pid_ = -1;
};

// Runs `ioc` until `ready()` holds, one handler at a time; gives up after `limit` of idleness.
template <class Pred>
bool run_until(boost::asio::io_context& ioc, Pred ready,
               std::chrono::milliseconds limit = std::chrono::seconds{10}) {
    ioc.restart();
    while (!ready()) {
        if (ioc.run_one_for(limit) == 0) {
            return ready();
        }
    }
    return true;
}

}  // namespace waitroom::test

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
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace waitroom::test {

// Binds a TCP socket to 127.0.0.1:`port` (0: any free port) and returns the port it got, or 0
// when the port is taken. The socket is closed again.
inline std::uint16_t bind_loopback(std::uint16_t port) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    socklen_t len = sizeof a;
    const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
                    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
    ::close(fd);
    return ok ? ntohs(a.sin_port) : 0;
}

inline std::uint16_t free_loopback_port() {
    if (auto p = bind_loopback(0)) {
        return p;
    }
    throw std::runtime_error("no free loopback port");
}

// A free loopback port below 55536 whose cluster bus port (+10000) is free too: Redis Cluster
// listens on both.
inline std::uint16_t free_cluster_port() {
    for (int i = 0; i < 1000; ++i) {
        auto p = static_cast<std::uint16_t>(20000 + (::getpid() * 131 + i * 977) % 25000);
        if (bind_loopback(p) != 0 && bind_loopback(static_cast<std::uint16_t>(p + 10000)) != 0) {
            return p;
        }
    }
    throw std::runtime_error("no free port pair for a cluster node");
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
    // `conf`: a config file read first (a sentinel needs one it can rewrite).
    explicit redis_server(std::vector<std::string> extra = {}, std::string conf = "",
                          std::uint16_t port = 0)
        : port_(port != 0 ? port : free_loopback_port()),
          extra_(std::move(extra)),
          conf_(std::move(conf)) {
        start();
    }
    ~redis_server() { kill(); }
    redis_server(const redis_server&) = delete;
    redis_server& operator=(const redis_server&) = delete;

    std::uint16_t port() const { return port_; }
    bool running() const { return pid_ > 0; }

    // Starts (again) on the same port; waits until it accepts connections.
    void start() {
        std::vector<std::string> args{"redis-server"};
        if (!conf_.empty()) {
            args.push_back(conf_);
        }
        args.insert(args.end(),
                    {"--port", std::to_string(port_), "--bind", "127.0.0.1", "--save", "",
                     "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning"});
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
    std::string conf_;
    pid_t pid_ = -1;
};

// A folder of the test's own, removed with everything in it at the end.
class scratch_dir {
  public:
    scratch_dir() {
        std::string t = (std::filesystem::temp_directory_path() / "waitroom-redis-XXXXXX").string();
        if (::mkdtemp(t.data()) == nullptr) {
            throw std::runtime_error("mkdtemp failed");
        }
        path_ = t;
    }
    ~scratch_dir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    scratch_dir(const scratch_dir&) = delete;
    scratch_dir& operator=(const scratch_dir&) = delete;
    std::string file(const std::string& name) const { return (path_ / name).string(); }

  private:
    std::filesystem::path path_;
};

// Redis Sentinel on loopback: a master, its replica and three sentinels that watch it as
// `name` (quorum 2), tuned to fail over within a few seconds of losing the master.
class sentinel_set {
  public:
    explicit sentinel_set(std::string name = "wr-master") : name_(std::move(name)) {
        servers_.push_back(std::make_unique<redis_server>());
        servers_.push_back(std::make_unique<redis_server>(std::vector<std::string>{
            "--replicaof", "127.0.0.1", std::to_string(servers_[0]->port())}));
        for (int i = 0; i < 3; ++i) {
            const std::string conf = dir_.file("sentinel-" + std::to_string(i) + ".conf");
            std::ofstream(conf) << "sentinel monitor " << name_ << " 127.0.0.1 "
                                << servers_[0]->port() << " 2\n"
                                << "sentinel down-after-milliseconds " << name_ << " 1000\n"
                                << "sentinel failover-timeout " << name_ << " 3000\n";
            sentinels_.push_back(
                std::make_unique<redis_server>(std::vector<std::string>{"--sentinel"}, conf));
        }
        // Ready when the replica has synced and every sentinel knows it.
        for (int i = 0; i < 500; ++i) {
            bool ok = servers_[1]->cli("INFO replication").find("master_link_status:up") !=
                      std::string::npos;
            for (auto& s : sentinels_) {
                ok = ok && s->cli("SENTINEL REPLICAS " + name_).find(
                               std::to_string(servers_[1]->port())) != std::string::npos;
            }
            if (ok) {
                return;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds{20});
        }
        throw std::runtime_error("the sentinels did not see the replica");
    }

    const std::string& name() const { return name_; }
    redis_server& server(std::size_t i) { return *servers_.at(i); }  // 0: first master
    redis_server& sentinel(std::size_t i) { return *sentinels_.at(i); }
    // The port the first sentinel names as master now (0 when it names none).
    std::uint16_t named_master() const {
        std::string out = sentinels_[0]->cli("SENTINEL GET-MASTER-ADDR-BY-NAME " + name_);
        auto nl = out.rfind('\n');
        try {
            return nl == std::string::npos ? 0 : static_cast<std::uint16_t>(std::stoi(out.substr(nl + 1)));
        } catch (const std::exception&) {
            return 0;
        }
    }

  private:
    std::string name_;
    scratch_dir dir_;
    std::vector<std::unique_ptr<redis_server>> servers_;
    std::vector<std::unique_ptr<redis_server>> sentinels_;
};

// Redis Cluster on loopback: three masters (no replicas) formed with `redis-cli --cluster
// create`, so each holds a third of the hash slots.
class cluster_set {
  public:
    cluster_set() {
        for (int i = 0; i < 3; ++i) {
            auto port = free_cluster_port();
            nodes_.push_back(std::make_unique<redis_server>(
                std::vector<std::string>{"--cluster-enabled", "yes", "--cluster-config-file",
                                         dir_.file("nodes-" + std::to_string(port) + ".conf"),
                                         "--cluster-node-timeout", "2000"},
                "", port));
        }
        std::string cmd = "redis-cli --cluster create";
        for (auto& n : nodes_) {
            cmd += " 127.0.0.1:" + std::to_string(n->port());
        }
        cmd += " --cluster-replicas 0 --cluster-yes >/dev/null 2>&1";
        if (std::system(cmd.c_str()) != 0) {
            throw std::runtime_error("redis-cli --cluster create failed");
        }
        for (int i = 0; i < 500; ++i) {
            bool ok = true;
            for (auto& n : nodes_) {
                ok = ok && n->cli("CLUSTER INFO").find("cluster_state:ok") != std::string::npos;
            }
            if (ok) {
                return;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds{20});
        }
        throw std::runtime_error("the cluster did not come up");
    }

    redis_server& node(std::size_t i) { return *nodes_.at(i); }
    std::string id(std::size_t i) { return node(i).cli("CLUSTER MYID"); }
    // The node that serves `key` now (the others answer MOVED).
    std::size_t owner_of(const std::string& key) {
        for (std::size_t i = 0; i < nodes_.size(); ++i) {
            std::string out = node(i).cli("EXISTS '" + key + "'");
            if (out == "0" || out == "1") {
                return i;
            }
        }
        return nodes_.size();
    }
    // Moves `slot` and its keys from node `from` to node `to` as redis-cli's resharding does:
    // IMPORTING and MIGRATING, MIGRATE of every key, then the new owner told to every node.
    // `between` runs after the keys moved and before the owner changes (the ASK window).
    template <class Between>
    void migrate(unsigned slot, std::size_t from, std::size_t to, Between between) {
        const std::string s = std::to_string(slot);
        node(to).cli("CLUSTER SETSLOT " + s + " IMPORTING " + id(from));
        node(from).cli("CLUSTER SETSLOT " + s + " MIGRATING " + id(to));
        for (;;) {
            std::string keys = node(from).cli("CLUSTER GETKEYSINSLOT " + s + " 100");
            if (keys.empty()) {
                break;
            }
            std::string list;
            std::istringstream in(keys);
            std::string k;
            while (in >> k) {
                list += " " + k;
            }
            node(from).cli("MIGRATE 127.0.0.1 " + std::to_string(node(to).port()) +
                           " \"\" 0 5000 KEYS" + list);
        }
        between();
        for (std::size_t i = 0; i < nodes_.size(); ++i) {
            node(i).cli("CLUSTER SETSLOT " + s + " NODE " + id(to));
        }
    }

  private:
    scratch_dir dir_;
    std::vector<std::unique_ptr<redis_server>> nodes_;
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

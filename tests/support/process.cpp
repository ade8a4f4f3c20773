#include "support/process.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <thread>

extern char** environ;

namespace waitroom::test {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string waitroomd_path() {
#ifdef WAITROOMD_PATH
    return WAITROOMD_PATH;
#else
    return "waitroomd";
#endif
}

namespace {

int loopback_socket(std::uint16_t port, bool connect_it) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        throw std::system_error(errno, std::generic_category(), "socket");
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    int rc = connect_it ? ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr)
                        : ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    if (rc != 0) {
        ::close(fd);
        return -1;
    }
    return fd;
}

std::string read_file(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace

closed_port::closed_port() : fd_(loopback_socket(0, false)) {
    if (fd_ < 0) {
        throw std::runtime_error("closed_port: cannot bind 127.0.0.1:0");
    }
    sockaddr_in addr{};
    socklen_t len = sizeof addr;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
}

closed_port::~closed_port() { ::close(fd_); }

bool wait_port_open(std::uint16_t port, std::chrono::milliseconds timeout) {
    // Tries at least once, so a zero timeout asks "does it accept right now?".
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        int fd = loopback_socket(port, true);
        if (fd >= 0) {
            ::close(fd);
            return true;
        }
        if (std::chrono::steady_clock::now() >= deadline) {
            return false;
        }
        std::this_thread::sleep_for(20ms);
    }
}

temp_dir::temp_dir() {
    std::string tmpl = (fs::temp_directory_path() / "waitroom-test-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) {
        throw std::system_error(errno, std::generic_category(), "mkdtemp");
    }
    path_ = tmpl;
}

temp_dir::~temp_dir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
}

std::string temp_dir::write(const std::string& name, std::string_view content) const {
    auto p = path_ / name;
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    out.close();
    if (!out) {
        throw std::runtime_error("cannot write " + p.string());
    }
    // Owner only, as a secret file must be (the daemon refuses keys and tokens others can
    // read); tests of that rule loosen the mode themselves.
    fs::permissions(p, fs::perms::owner_read | fs::perms::owner_write);
    return p.string();
}

child_process::child_process(const std::string& program, const std::vector<std::string>& args,
                             const fs::path& log_dir) {
    static std::atomic<unsigned> counter{0};
    auto n = std::to_string(counter.fetch_add(1));
    auto base = fs::path(program).filename().string();
    out_path_ = log_dir / (base + "-" + n + ".stdout");
    err_path_ = log_dir / (base + "-" + n + ".stderr");

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_path_.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_path_.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    // Nothing else of the test process goes with it: Asio opens sockets without CLOEXEC, and a
    // daemon that inherited a test origin's listener kept that port open (queued connections
    // nobody answered) after the test had stopped the origin.
    posix_spawn_file_actions_addclosefrom_np(&actions, STDERR_FILENO + 1);

    // The child starts with default signal handling and nothing blocked, whatever the test
    // process (gtest, a test origin thread) did to its own.
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none;
    sigemptyset(&none);
    sigset_t defaults;
    sigemptyset(&defaults);
    for (int sig : {SIGHUP, SIGINT, SIGTERM, SIGPIPE, SIGCHLD}) {
        sigaddset(&defaults, sig);
    }
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

    std::vector<std::string> argv_storage;
    argv_storage.push_back(program);
    argv_storage.insert(argv_storage.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_storage) {
        argv.push_back(a.data());
    }
    argv.push_back(nullptr);

    int rc = ::posix_spawn(&pid_, program.c_str(), &actions, &attr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) {
        pid_ = -1;
        throw std::system_error(rc, std::generic_category(), "posix_spawn " + program);
    }
}

child_process::~child_process() {
    if (pid_ > 0 && !exit_code_) {
        ::kill(pid_, SIGKILL);
        int status = 0;
        ::waitpid(pid_, &status, 0);
    }
}

bool child_process::running() {
    return !wait_exit(0ms).has_value();
}

void child_process::send_signal(int sig) const {
    if (pid_ > 0 && !exit_code_) {
        ::kill(pid_, sig);
    }
}

std::optional<int> child_process::wait_exit(std::chrono::milliseconds timeout) {
    if (exit_code_) {
        return exit_code_;
    }
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        int status = 0;
        pid_t r = ::waitpid(pid_, &status, WNOHANG);
        if (r == pid_) {
            exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            return exit_code_;
        }
        if (std::chrono::steady_clock::now() >= deadline) {
            return std::nullopt;
        }
        std::this_thread::sleep_for(10ms);
    }
}

std::string child_process::stdout_text() const {
    return read_file(out_path_);
}
std::string child_process::stderr_text() const {
    return read_file(err_path_);
}

bool child_process::wait_for_output(std::string_view needle, std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        if (count_output(needle) > 0) {
            return true;
        }
        if (exit_code_ || std::chrono::steady_clock::now() >= deadline) {
            return false;
        }
        // Notices an exit so that a daemon that failed to start does not cost the full wait.
        wait_exit(20ms);
    }
}

std::size_t child_process::count_output(std::string_view needle) const {
    std::string all = stdout_text() + stderr_text();
    std::size_t n = 0;
    for (auto pos = all.find(needle); pos != std::string::npos;
         pos = all.find(needle, pos + needle.size())) {
        ++n;
    }
    return n;
}

std::uint64_t child_process::rss_kib() const {
    std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("VmRSS:", 0) == 0) {
            return std::strtoull(line.c_str() + 6, nullptr, 10);
        }
    }
    return 0;
}

run_result run_to_exit(const std::string& program, const std::vector<std::string>& args,
                       std::chrono::milliseconds timeout) {
    temp_dir logs;
    run_result r;
    {
        child_process p(program, args, logs.path());
        auto code = p.wait_exit(timeout);
        r.exit_code = code.value_or(-1);
        r.out = p.stdout_text();
        r.err = p.stderr_text();
    }
    return r;
}

daemon::daemon(const std::string& config_path, const fs::path& log_dir)
    : proc_(waitroomd_path(), {"-c", config_path}, log_dir) {}

std::uint16_t daemon::wait_listening(std::chrono::milliseconds timeout) {
    static const std::regex listening(R"(listening on https?://[^ \n]*:(\d+))");
    if (!proc_.wait_for_output("listening on ", timeout)) {
        return 0;
    }
    std::smatch m;
    std::string text = output();
    if (!std::regex_search(text, m, listening)) {
        return 0;
    }
    return static_cast<std::uint16_t>(std::stoi(m[1].str()));
}

}  // namespace waitroom::test

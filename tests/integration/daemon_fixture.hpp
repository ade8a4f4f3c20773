#pragma once
// A running `waitroomd` in front of an in-process test origin, both on loopback ports, for the
// whole-process tests. The config is written to a temp folder; the daemon is killed (if still
// running) and the folder removed when the test ends.

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>

#include "http_client.hpp"
#include "support/poll.hpp"
#include "support/process.hpp"
#include "support/test_origin.hpp"

namespace waitroom::test {

// A config for a daemon on 127.0.0.1 (port 0: it announces the port it got) in front of
// `origin_url`. `extra` is appended as more top-level YAML. The admin listener is off unless
// `extra` configures it (its default address is a fixed port, which parallel tests would share).
inline std::string proxy_config(const std::string& origin_url, const std::string& extra = "") {
    const bool has_admin = extra.find("admin:") != std::string::npos;
    return std::string(has_admin ? "" : "admin: {listen: \"\"}\n") +
           "listen: [\"127.0.0.1:0\"]\n"
           "origin: {url: \"" +
           origin_url +
           "\", connect_timeout: 2s, timeout: 2s}\n"
           "threads: 2\n"
           "limits: {header_timeout: 1s, max_header_bytes: 8192, drain_timeout: 10s}\n"
           "logging: {level: info}\n" +
           extra;
}

// `yaml` (from proxy_config) with origin.timeout set to `timeout`: for tests that hold a slow
// response in flight across a drain, which a loaded machine must not turn into a 504.
// Throws when `yaml` has no such setting: a test would otherwise run on the 2 s it meant to leave.
inline std::string with_origin_timeout(std::string yaml, const std::string& timeout) {
    const std::string from = ", timeout: 2s}";
    const auto at = yaml.find(from);
    if (at == std::string::npos) {
        throw std::invalid_argument("with_origin_timeout: no origin timeout of 2s in the config");
    }
    yaml.replace(at, from.size(), ", timeout: " + timeout + "}");
    return yaml;
}

// True when the response came from the test origin's /hello route.
inline bool from_origin(const http_response& r) {
    return r.status == 200 && r.body == "hello, world\n";
}

// True for the room's queue page (the default template) with this status.
inline bool is_queue_page(const http_response& r, unsigned status = 200) {
    return r.status == status && r.body.find("You are in line") != std::string::npos;
}

// A response in one line, for failure messages.
inline std::string describe(const http_response& r) {
    return std::to_string(r.status) + " " + r.error + " " + r.body.substr(0, 120);
}

class daemon_test : public ::testing::Test {
  protected:
    // Writes `yaml` as config.yaml and starts the daemon; fails the test when it does not
    // announce a listener.
    void start(const std::string& yaml) {
        config_path_ = dir_.write("config.yaml", yaml);
        daemon_ = std::make_unique<daemon>(config_path_, dir_.path());
        port_ = daemon_->wait_listening();
        ASSERT_NE(port_, 0) << "waitroomd did not start:\n" << daemon_->output();
    }
    void start_default() { start(proxy_config(origin_.url())); }

    // The admin listener's port as the daemon announces it; 0 (and a test failure) when it
    // does not.
    std::uint16_t announced_admin_port() {
        if (!proc().wait_for_output("admin listening on", std::chrono::seconds{10})) {
            ADD_FAILURE() << "no admin listener announced:\n" << output();
            return 0;
        }
        static const std::regex re(R"(admin listening on http://127\.0\.0\.1:(\d+))");
        std::smatch m;
        const std::string text = output();
        if (!std::regex_search(text, m, re)) {
            ADD_FAILURE() << text;
            return 0;
        }
        return static_cast<std::uint16_t>(std::stoi(m[1].str()));
    }

    child_process& proc() { return daemon_->process(); }
    std::string output() const { return daemon_->output(); }

    test_origin origin_;
    temp_dir dir_;
    std::string config_path_;
    std::unique_ptr<daemon> daemon_;
    std::uint16_t port_ = 0;
};

// The value of one series in a Prometheus text body (`series` is "name{labels}"); 0 when absent.
inline double metric(const std::string& text, const std::string& series) {
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        if (line.size() > series.size() && line.compare(0, series.size(), series) == 0 &&
            line[series.size()] == ' ') {
            return std::stod(line.substr(series.size() + 1));
        }
    }
    return 0;
}

}  // namespace waitroom::test

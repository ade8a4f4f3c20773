// Signals sent to a running waitroomd: reload on SIGHUP, drain and exit on SIGTERM/SIGINT,
// reopen the access log on SIGUSR1 (logrotate).

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "daemon_fixture.hpp"

namespace waitroom::test {
namespace {

using namespace std::chrono_literals;

class Signals : public daemon_test {};

// Polls until `pred` holds or `timeout` passes.
bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds timeout = 10s) {
    return poll_until(timeout, 10ms, pred);
}

std::string read_file(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

TEST_F(Signals, ReloadWithABrokenFileKeepsServingWithTheOldConfig) {
    start_default();
    ASSERT_EQ(http_get(port_, "/hello").status, 200u);

    dir_.write("config.yaml", "listen: [\"127.0.0.1:0\"\norigin: {url: 42, colour: blue}\n");
    proc().send_signal(SIGHUP);
    ASSERT_TRUE(proc().wait_for_output("keeping the previous configuration", 10s)) << output();

    EXPECT_TRUE(proc().running());
    auto r = http_get(port_, "/hello");
    EXPECT_EQ(r.status, 200u) << r.error;
    EXPECT_EQ(r.body, "hello, world\n");
}

TEST_F(Signals, ReloadWithAGoodFileAppliesIt) {
    start_default();
    ASSERT_EQ(http_get(port_, "/hello").status, 200u);

    test_origin second;
    dir_.write("config.yaml", proxy_config(second.url()));
    proc().send_signal(SIGHUP);
    ASSERT_TRUE(proc().wait_for_output("configuration reloaded", 10s)) << output();

    auto r = http_get(port_, "/hello");
    EXPECT_EQ(r.status, 200u) << r.error;
    EXPECT_EQ(second.requests(), 1u);
    EXPECT_EQ(origin_.requests(), 1u);
}

TEST_F(Signals, TerminateLetsAnInFlightSlowResponseFinishThenExitsCleanly) {
    start(with_origin_timeout(proxy_config(origin_.url()), "10s"));
    client_connection c(port_);
    ASSERT_TRUE(c.connected());
    ASSERT_TRUE(c.write_raw("GET /slow?ms=1500 HTTP/1.1\r\nHost: shop.test\r\n\r\n"));
    ASSERT_TRUE(eventually([&] { return origin_.requests() == 1; })) << output();

    proc().send_signal(SIGTERM);
    auto r = c.read_response();
    EXPECT_EQ(r.error, "");
    EXPECT_EQ(r.status, 200u);
    EXPECT_EQ(r.body, "slow\n");

    auto code = proc().wait_exit(15s);
    ASSERT_TRUE(code.has_value()) << "still running after SIGTERM:\n" << output();
    EXPECT_EQ(*code, 0) << output();
}

TEST_F(Signals, InterruptStopsAnIdleDaemonWithExitCodeZero) {
    start_default();
    proc().send_signal(SIGINT);
    auto code = proc().wait_exit(15s);
    ASSERT_TRUE(code.has_value()) << "still running after SIGINT:\n" << output();
    EXPECT_EQ(*code, 0) << output();
}

TEST_F(Signals, TerminateStopsAcceptingWhileAnInFlightRequestFinishes) {
    start(with_origin_timeout(proxy_config(origin_.url()), "10s"));
    client_connection c(port_);
    ASSERT_TRUE(c.connected());
    ASSERT_TRUE(c.write_raw("GET /slow?ms=3000 HTTP/1.1\r\nHost: shop.test\r\n\r\n"));
    ASSERT_TRUE(eventually([&] { return origin_.requests() == 1; })) << output();

    proc().send_signal(SIGTERM);
    ASSERT_TRUE(proc().wait_for_output("draining", 5s)) << output();
    // The listeners close while the slow response (3 s; origin.timeout is 10 s) is on its way.
    EXPECT_TRUE(eventually([&] { return !wait_port_open(port_, 0ms); }, 2s));
    EXPECT_TRUE(proc().running());

    auto r = c.read_response();
    EXPECT_EQ(r.status, 200u) << r.error;
    auto code = proc().wait_exit(15s);
    ASSERT_TRUE(code.has_value()) << output();
    EXPECT_EQ(*code, 0);
}

TEST_F(Signals, ReopenAfterLogrotateRenamedTheAccessLogWritesNewLinesToANewFile) {
    const auto log = dir_.path() / "access.log";
    const auto rotated = dir_.path() / "access.log.1";
    std::string yaml = proxy_config(origin_.url());
    const std::string logging = "logging: {level: info}";
    ASSERT_NE(yaml.find(logging), std::string::npos);
    yaml.replace(yaml.find(logging), logging.size(),
                 "logging: {level: info, access_log: \"" + log.string() + "\"}");
    start(yaml);
    ASSERT_NE(port_, 0);

    ASSERT_EQ(http_get(port_, "/hello?line=before").status, 200u);
    // The line is written by the logger's thread and flushed within a second.
    ASSERT_TRUE(eventually([&] { return read_file(log).find("line=before") != std::string::npos; }))
        << output();

    std::filesystem::rename(log, rotated);  // what logrotate does before it signals
    proc().send_signal(SIGUSR1);
    ASSERT_TRUE(proc().wait_for_output("access log reopened", 10s)) << output();
    EXPECT_TRUE(std::filesystem::exists(log));

    ASSERT_EQ(http_get(port_, "/hello?line=after").status, 200u);
    ASSERT_TRUE(eventually([&] { return read_file(log).find("line=after") != std::string::npos; }))
        << output();
    const std::string fresh = read_file(log);
    const std::string old = read_file(rotated);
    EXPECT_EQ(fresh.find("line=before"), std::string::npos) << fresh;
    EXPECT_NE(old.find("line=before"), std::string::npos) << old;
    EXPECT_EQ(old.find("line=after"), std::string::npos) << old;
    EXPECT_TRUE(proc().running());
}

// logging.level is the daemon's own log; the access log records every request whatever it is.
TEST_F(Signals, ReloadToAQuieterLogLevelKeepsTheAccessLog) {
    const auto log = dir_.path() / "access.log";
    auto with_level = [&](const std::string& level) {
        std::string yaml = proxy_config(origin_.url());
        const std::string logging = "logging: {level: info}";
        yaml.replace(yaml.find(logging), logging.size(),
                     "logging: {level: " + level + ", access_log: \"" + log.string() + "\"}");
        return yaml;
    };
    start(with_level("info"));
    ASSERT_NE(port_, 0);
    dir_.write("config.yaml", with_level("error"));
    proc().send_signal(SIGHUP);
    // Printed once the new level is in force, past that level.
    ASSERT_TRUE(proc().wait_for_output("reload: logging.level info -> error", 10s)) << output();

    ASSERT_EQ(http_get(port_, "/hello?line=after-reload").status, 200u);
    EXPECT_TRUE(eventually(
        [&] { return read_file(log).find("line=after-reload") != std::string::npos; }))
        << read_file(log);
}

TEST_F(Signals, ReopenWithoutAnAccessLogIsHarmless) {
    start_default();
    proc().send_signal(SIGUSR1);
    ASSERT_TRUE(proc().wait_for_output("no access log file to reopen", 10s)) << output();
    EXPECT_TRUE(proc().running());
    EXPECT_EQ(http_get(port_, "/hello").status, 200u);
}

}  // namespace
}  // namespace waitroom::test

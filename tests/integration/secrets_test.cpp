// Secrets and the admin listener's exposure, as a whole process: passwords stay out of every
// log line, key and token files open to others are refused, a non-loopback admin listener needs
// a token, and an admin API without a token answers only loopback Host names.

#include <sys/stat.h>

#include <csignal>
#include <regex>
#include <string>

#include "daemon_fixture.hpp"

namespace waitroom::test {
namespace {

using namespace std::chrono_literals;

constexpr std::string_view password = "hunter2-Pa55word";
constexpr const char* cookie_key = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

class Secrets : public daemon_test {
  protected:
    // The admin listener's port, from its "admin listening on" line.
    std::uint16_t admin_port() {
        if (!proc().wait_for_output("admin listening on", 10s)) {
            return 0;
        }
        static const std::regex re(R"(admin listening on http://127\.0\.0\.1:(\d+))");
        std::smatch m;
        std::string text = output();
        if (!std::regex_search(text, m, re)) {
            return 0;
        }
        return static_cast<std::uint16_t>(std::stoi(m[1].str()));
    }
};

TEST_F(Secrets, RedisPasswordAppearsInNoLogLineNorCheckOutput) {
    const std::string key = dir_.write("k1.key", std::string(cookie_key) + "\n");
    const closed_port store;  // nothing answers: the daemon starts in degraded mode
    const std::string url = "redis://app:" + std::string(password) +
                            "@127.0.0.1:" + std::to_string(store.port()) + "/0";
    const std::string state = "cookie: {keys: [{id: k1, secret_file: \"" + key + "\"}]}\n" +
                              "state: {backend: redis, url: \"" + url +
                              "\", sync_interval: 50ms, timeout: 50ms}\n" +
                              "rooms:\n  - {name: Shop, total_active_users: 5, "
                              "new_users_per_minute: 5}\n";
    start(proxy_config(origin_.url(), state));
    ASSERT_NE(port_, 0);
    // The store is unreachable: the daemon syncs its room and logs its degraded mode; a reload
    // with another password logs the state change.
    ASSERT_TRUE(proc().wait_for_output("degraded", 10s)) << output();
    const std::string other = "other-" + std::string(password);
    std::string reloaded = state;
    reloaded.replace(reloaded.find(password), password.size(), other);
    dir_.write("config.yaml", proxy_config(origin_.url(), reloaded));
    proc().send_signal(SIGHUP);
    ASSERT_TRUE(proc().wait_for_output("configuration reloaded", 10s)) << output();

    const std::string log = output();
    EXPECT_NE(log.find("redis://app:***@127.0.0.1:"), std::string::npos) << log;
    EXPECT_EQ(log.find(password), std::string::npos) << log;

    // `check` of a file with the password and a problem elsewhere prints neither the password
    // nor the URL's user info.
    const std::string bad =
        dir_.write("bad.yaml", "state: {backend: redis, url: \"" + url + "\"}\n" +
                                   "cookie: {keys: [{id: k1, secret_file: \"" + key + "\"}]}\n" +
                                   "limits: {max_header_bytes: lots}\n");
    auto r = run_to_exit(waitroomd_path(), {"check", "-c", bad});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("limits.max_header_bytes"), std::string::npos) << r.err;
    EXPECT_EQ((r.out + r.err).find(password), std::string::npos) << r.out << r.err;
    const std::string malformed = dir_.write(
        "malformed.yaml", "state: {backend: redis, url: \"redis://app:" + std::string(password) +
                              "@127.0.0.1:99999/0\"}\n");
    r = run_to_exit(waitroomd_path(), {"check", "-c", malformed});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("state.url"), std::string::npos) << r.err;
    EXPECT_EQ((r.out + r.err).find(password), std::string::npos) << r.out << r.err;
}

TEST_F(Secrets, NonLoopbackAdminListenerWithoutATokenDoesNotStart) {
    const std::string path =
        dir_.write("config.yaml", proxy_config(origin_.url(), "admin: {listen: \"0.0.0.0:0\"}\n"));
    auto r = run_to_exit(waitroomd_path(), {"check", "-c", path});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find(path + ":6:17: admin.listen: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("needs a token"), std::string::npos) << r.err;
    auto run = run_to_exit(waitroomd_path(), {"-c", path}, 10s);
    EXPECT_EQ(run.exit_code, 1) << run.err;

    const std::string ok =
        dir_.write("ok.yaml", proxy_config(origin_.url(),
                                           "admin: {listen: \"0.0.0.0:0\", token_env: "
                                           "WAITROOM_TEST_ADMIN_TOKEN}\n"));
    EXPECT_EQ(run_to_exit(waitroomd_path(), {"check", "-c", ok}).exit_code, 0);
}

TEST_F(Secrets, KeyOrTokenFileReadableByOthersIsRefusedNamingFileAndMode) {
    const std::string key = dir_.write("k1.key", std::string(cookie_key) + "\n");
    const std::string token = dir_.write("admin.token", "s3cret-token\n");
    ::chmod(key.c_str(), 0644);
    ::chmod(token.c_str(), 0640);
    const std::string path = dir_.write(
        "config.yaml",
        proxy_config(origin_.url(), "cookie: {keys: [{id: k1, secret_file: \"" + key +
                                        "\"}]}\nadmin: {listen: \"127.0.0.1:0\", token_file: \"" +
                                        token + "\"}\n"));
    auto r = run_to_exit(waitroomd_path(), {"-c", path}, 10s);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("cookie.keys[0].secret_file: " + key + " has mode 0644"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("admin.token_file: " + token + " has mode 0640"), std::string::npos)
        << r.err;
    EXPECT_EQ(r.err.find(cookie_key), std::string::npos) << r.err;

    ::chmod(key.c_str(), 0600);
    ::chmod(token.c_str(), 0400);
    start(proxy_config(origin_.url(), "cookie: {keys: [{id: k1, secret_file: \"" + key +
                                          "\"}]}\nadmin: {listen: \"127.0.0.1:0\", token_file: \"" +
                                          token + "\"}\n"));
    EXPECT_NE(port_, 0);
}

TEST_F(Secrets, AdminApiWithoutATokenAnswersOnlyLoopbackHostNames) {
    start(proxy_config(origin_.url(),
                       "admin: {listen: \"127.0.0.1:0\", allowed_hosts: [admin.internal]}\n"));
    const std::uint16_t admin = admin_port();
    ASSERT_NE(admin, 0) << output();
    auto get = [&](const std::string& host) {
        client_connection c(admin);
        http::request<http::string_body> req{http::verb::get, "/rooms", 11};
        req.set(http::field::host, host);
        return c.request(std::move(req));
    };
    const std::string port = std::to_string(admin);
    for (const std::string& host :
         {"127.0.0.1:" + port, "localhost:" + port, "[::1]:" + port, "admin.internal:" + port}) {
        EXPECT_EQ(get(host).status, 200u) << host;
    }
    for (const std::string& host :
         {"rebind.evil.test:" + port, std::string("evil.test"), "10.0.0.1:" + port}) {
        auto r = get(host);
        EXPECT_EQ(r.status, 421u) << host << ": " << describe(r);
    }
}

}  // namespace
}  // namespace waitroom::test

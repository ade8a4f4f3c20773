// Loading and validating configuration files: the shipped files load, defaults are filled, and
// every problem of a bad file is reported with its exact `file:line:column: path: message`.

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "waitroom/config/load.hpp"
#include "waitroom/config/values.hpp"

namespace waitroom::config {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// A fresh folder per test that stands for the config file's folder.
class ConfigDir : public ::testing::Test {
  protected:
    void SetUp() override {
        static int counter = 0;
        dir_ = fs::temp_directory_path() / ("waitroom-config-test-" + std::to_string(::getpid()) +
                                            "-" + std::to_string(counter++));
        fs::create_directories(dir_);
    }
    void TearDown() override {
        std::error_code ec;
        fs::remove_all(dir_, ec);
    }

    void write(const std::string& rel, const std::string& text) {
        fs::create_directories((dir_ / rel).parent_path());
        std::ofstream(dir_ / rel) << text;
    }

    load_result load(std::string_view yaml) {
        return load_string(yaml, "config.yaml", dir_.string());
    }

    // The problems as `waitroomd check` prints them.
    static std::vector<std::string> messages(const load_result& r) {
        std::vector<std::string> out;
        for (const auto& p : r.problems) {
            out.push_back(p.to_string());
        }
        return out;
    }

    fs::path dir_;
};

using Config = ConfigDir;

// ---------------------------------------------------------------- good files

TEST_F(Config, SmallestRoomLoadsWithEveryDefault) {
    auto r = load(R"yaml(rooms:
  - name: Shop Checkout
    total_active_users: 200
    new_users_per_minute: 100
)yaml");
    ASSERT_TRUE(r.ok()) << format_problems(r.problems);
    const config& c = *r.cfg;
    ASSERT_EQ(c.listen.size(), 1u);
    EXPECT_EQ(c.listen[0].host, "0.0.0.0");
    EXPECT_EQ(c.listen[0].port, 8080);
    EXPECT_FALSE(c.listen[0].tls);
    EXPECT_EQ(c.origin.host, "127.0.0.1");
    EXPECT_EQ(c.origin.port, 3000);
    EXPECT_EQ(c.threads, 0u);
    EXPECT_EQ(c.node.datacenter, "local");
    EXPECT_FALSE(c.node.id.empty());
    EXPECT_TRUE(c.cookie.keys.empty());
    EXPECT_EQ(c.cookie.key_file, (dir_ / "waitroom.key").lexically_normal().string());
    EXPECT_EQ(c.state.backend, state_backend::local);
    EXPECT_EQ(c.admin.listen, "127.0.0.1:9090");
    EXPECT_EQ(c.limits.max_header_bytes, 16u * 1024);
    EXPECT_EQ(c.testing.time_scale, 1.0);
    EXPECT_EQ(c.base_dir, dir_.lexically_normal().string());
    ASSERT_EQ(c.rooms.size(), 1u);
    const room& room = c.rooms[0];
    EXPECT_EQ(room.id, "shop-checkout");
    EXPECT_EQ(room.name, "Shop Checkout");
    EXPECT_EQ(room.host, "");
    EXPECT_EQ(room.path, "/");
    EXPECT_EQ(room.total_active_users, 200u);
    EXPECT_EQ(room.new_users_per_minute, 100u);
    EXPECT_EQ(room.session_duration, 5min);
    EXPECT_EQ(room.method, queueing_method::fifo);
    EXPECT_EQ(room.queueing_status_code, 200);
    EXPECT_EQ(room.refresh_interval, 20s);
    EXPECT_FALSE(room.json_response_enabled);
    EXPECT_FALSE(room.admission_sound_enabled);
    EXPECT_EQ(room.default_template_language, "en-US");
    EXPECT_EQ(room.cookie_attrs.samesite, same_site::auto_);
    EXPECT_FALSE(room.revoke_enabled);
    EXPECT_EQ(room.abuse, abuse_action::off);
    EXPECT_EQ(c.cookie.bind, cookie_binding::none);
}

TEST_F(Config, ReadsAbuseActionAndCookieBinding) {
    auto r = load(R"yaml(cookie: {bind: prefix}
rooms:
  - {name: a, total_active_users: 1, new_users_per_minute: 1, abuse_action: log}
  - {name: b, path: /b, total_active_users: 1, new_users_per_minute: 1, abuse_action: slow}
  - {name: c, path: /c, total_active_users: 1, new_users_per_minute: 1, abuse_action: infinite_queue}
  - {name: d, path: /d, total_active_users: 1, new_users_per_minute: 1, abuse_action: "off"}
)yaml");
    ASSERT_TRUE(r.ok()) << format_problems(r.problems);
    EXPECT_EQ(r.cfg->cookie.bind, cookie_binding::prefix);
    EXPECT_EQ(r.cfg->rooms[0].abuse, abuse_action::log);
    EXPECT_EQ(r.cfg->rooms[1].abuse, abuse_action::slow);
    EXPECT_EQ(r.cfg->rooms[2].abuse, abuse_action::infinite_queue);
    EXPECT_EQ(r.cfg->rooms[3].abuse, abuse_action::off);
}

TEST_F(Config, BadAbuseActionAndCookieBindingNameTheirPlaceAndTheChoices) {
    auto r = load(R"yaml(cookie:
  bind: subnet
rooms:
  - name: shop
    total_active_users: 1
    new_users_per_minute: 1
    abuse_action: block
)yaml");
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(messages(r),
              (std::vector<std::string>{
                  "config.yaml:2:9: cookie.bind: must be one of none, prefix",
                  "config.yaml:7:19: rooms[0].abuse_action: must be one of off, log, slow, "
                  "infinite_queue",
              }));
}

TEST_F(Config, ReadsAChallengeAndFillsItsDefaults) {
    auto r = load(R"yaml(rooms:
  - {name: a, total_active_users: 1, new_users_per_minute: 1,
     challenge: {enabled: true, min_difficulty: 10, max_difficulty: 20}}
  - {name: b, path: /b, total_active_users: 1, new_users_per_minute: 1, challenge: {enabled: true}}
  - {name: c, path: /c, total_active_users: 1, new_users_per_minute: 1}
)yaml");
    ASSERT_TRUE(r.ok()) << format_problems(r.problems);
    EXPECT_TRUE(r.cfg->rooms[0].challenge.enabled);
    EXPECT_EQ(r.cfg->rooms[0].challenge.min_difficulty, 10u);
    EXPECT_EQ(r.cfg->rooms[0].challenge.max_difficulty, 20u);
    EXPECT_TRUE(r.cfg->rooms[1].challenge.enabled);
    EXPECT_EQ(r.cfg->rooms[1].challenge.min_difficulty, 14u);
    EXPECT_EQ(r.cfg->rooms[1].challenge.max_difficulty, 18u);
    EXPECT_FALSE(r.cfg->rooms[2].challenge.enabled) << "off by default";
}

TEST_F(Config, BadChallengesNameTheirPlaceAndTheBounds) {
    auto r = load(R"yaml(rooms:
  - name: shop
    total_active_users: 1
    new_users_per_minute: 1
    challenge:
      enabled: yes please
      min_difficulty: 0
      max_difficulty: 25
      bits: 3
  - name: two
    path: /two
    total_active_users: 1
    new_users_per_minute: 1
    challenge: {min_difficulty: 20, max_difficulty: 12}
  - name: three
    path: /three
    total_active_users: 1
    new_users_per_minute: 1
    challenge: true
)yaml");
    EXPECT_FALSE(r.ok());
    const auto m = messages(r);
    const auto has = [&](std::string_view prefix) {
        return std::any_of(m.begin(), m.end(),
                           [&](const std::string& s) { return s.rfind(prefix, 0) == 0; });
    };
    EXPECT_TRUE(has("config.yaml:9:7: rooms[0].challenge.bits: ")) << format_problems(r.problems);
    EXPECT_TRUE(has("config.yaml:6:16: rooms[0].challenge.enabled: "))
        << format_problems(r.problems);
    EXPECT_TRUE(has("config.yaml:7:23: rooms[0].challenge.min_difficulty: "))
        << format_problems(r.problems);
    EXPECT_TRUE(has("config.yaml:8:23: rooms[0].challenge.max_difficulty: "))
        << format_problems(r.problems);
    EXPECT_TRUE(
        has("config.yaml:14:53: rooms[1].challenge.max_difficulty: min_difficulty (20) "
            "must not exceed max_difficulty (12)"))
        << format_problems(r.problems);
    EXPECT_TRUE(has("config.yaml:19:16: rooms[2].challenge: ")) << format_problems(r.problems);
}

TEST_F(Config, AdmissionSoundIsARoomSwitchThatTakesOnlyABoolean) {
    auto on = load(R"yaml(rooms:
  - {name: Shop, total_active_users: 1, new_users_per_minute: 1, admission_sound_enabled: true}
)yaml");
    ASSERT_TRUE(on.ok()) << format_problems(on.problems);
    EXPECT_TRUE(on.cfg->rooms[0].admission_sound_enabled);

    auto bad = load(R"yaml(rooms:
  - {name: Shop, total_active_users: 1, new_users_per_minute: 1, admission_sound_enabled: loud}
)yaml");
    EXPECT_EQ(messages(bad), (std::vector<std::string>{
                                 "config.yaml:2:91: rooms[0].admission_sound_enabled: must be "
                                 "true or false"}));
}

TEST_F(Config, EmptyFileIsAllDefaults) {
    auto r = load("");
    ASSERT_TRUE(r.ok()) << format_problems(r.problems);
    EXPECT_TRUE(r.cfg->rooms.empty());
}

TEST_F(Config, DefaultConfigFileLoadsWithASmallDemoRoom) {
    auto r = load_file(WAITROOM_SOURCE_DIR "/config/waitroom.yaml");
    ASSERT_TRUE(r.ok()) << format_problems(r.problems);
    const config& c = *r.cfg;
    ASSERT_EQ(c.listen.size(), 1u);
    EXPECT_EQ(c.listen[0].host, "127.0.0.1");
    EXPECT_EQ(c.listen[0].port, 8080);
    EXPECT_EQ(c.origin.url, "http://127.0.0.1:3000");
    EXPECT_EQ(c.admin.listen, "127.0.0.1:9090");
    EXPECT_EQ(
        c.cookie.key_file,
        (fs::absolute(WAITROOM_SOURCE_DIR "/config") / "waitroom.key").lexically_normal().string());
    ASSERT_EQ(c.rooms.size(), 1u);
    const room& room = c.rooms[0];
    EXPECT_EQ(room.name, "Demo shop");
    EXPECT_EQ(room.id, "demo-shop");
    EXPECT_EQ(room.path, "/");
    EXPECT_EQ(room.total_active_users, 3u);
    EXPECT_EQ(room.new_users_per_minute, 30u);
    EXPECT_EQ(room.session_duration, 2min);
    EXPECT_EQ(room.refresh_interval, 10s);
    EXPECT_TRUE(room.json_response_enabled);
}

TEST_F(Config, MultiNodeExampleUsesRedisWithSharedKeys) {
    auto r = load_file(WAITROOM_SOURCE_DIR "/config/examples/multi-node.yaml");
    ASSERT_TRUE(r.ok()) << format_problems(r.problems);
    const config& c = *r.cfg;
    EXPECT_EQ(c.state.backend, state_backend::redis);
    EXPECT_EQ(c.state.redis_host, "10.0.0.10");
    EXPECT_EQ(c.state.redis_port, 6379);
    ASSERT_EQ(c.cookie.keys.size(), 1u);
    EXPECT_EQ(c.cookie.keys[0].id, "k1");
    EXPECT_EQ(c.cookie.keys[0].secret_env, "WAITROOM_COOKIE_KEY_K1");
    EXPECT_EQ(c.admin.token_env, "WAITROOM_ADMIN_TOKEN");
}

TEST_F(Config, FullExampleLoadsEveryKey) {
    auto r = load_file(WAITROOM_SOURCE_DIR "/config/examples/full.yaml");
    ASSERT_TRUE(r.ok()) << format_problems(r.problems);
    const config& c = *r.cfg;
    const fs::path examples = fs::absolute(WAITROOM_SOURCE_DIR "/config/examples");
    auto in_dir = [&](const char* rel) { return (examples / rel).lexically_normal().string(); };

    ASSERT_EQ(c.listen.size(), 4u);
    EXPECT_FALSE(c.listen[1].proxy_protocol);
    EXPECT_TRUE(c.listen[3].proxy_protocol);
    ASSERT_TRUE(c.listen[2].tls);
    ASSERT_EQ(c.listen[2].tls->certificates.size(), 2u);
    EXPECT_EQ(c.listen[2].tls->certificates[1].key, in_dir("tls/wildcard/privkey.pem"));
    ASSERT_EQ(c.trusted_proxies.size(), 2u);
    EXPECT_EQ(c.trusted_proxies[0].prefix_len, 96u + 8);
    EXPECT_EQ(c.trusted_proxies[1].prefix_len, 48u);
    EXPECT_EQ(c.forwarded_headers, forwarded_mode::overwrite);
    EXPECT_EQ(c.listen[1].host, "::");
    EXPECT_EQ(c.listen[1].port, 8443);
    ASSERT_TRUE(c.listen[1].tls);
    ASSERT_EQ(c.listen[1].tls->certificates.size(), 1u);
    EXPECT_EQ(c.listen[1].tls->certificates[0].cert, in_dir("tls/fullchain.pem"));
    EXPECT_EQ(c.listen[1].tls->certificates[0].key, in_dir("tls/privkey.pem"));
    EXPECT_EQ(c.listen[1].tls->min_version, tls_version::v1_2);
    EXPECT_EQ(c.listen[1].tls->ciphers,
              "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256");
    EXPECT_TRUE(c.listen[1].http2);
    EXPECT_FALSE(c.listen[0].h2c);

    EXPECT_TRUE(c.origin.tls);
    EXPECT_EQ(c.origin.host, "shop.internal");
    EXPECT_EQ(c.origin.host_header, host_header_mode::client);
    EXPECT_EQ(c.origin.unknown_hosts, unknown_hosts_policy::reject);
    EXPECT_EQ(c.origin.port, 8443);
    EXPECT_EQ(c.origin.base_path, "/app");
    EXPECT_EQ(c.origin.connect_timeout, 3s);
    EXPECT_EQ(c.origin.max_connections, 128u);
    EXPECT_EQ(c.origin.pool_wait_timeout, 5s);
    EXPECT_EQ(c.origin.max_pool_waiters, 512u);
    EXPECT_EQ(c.origin.ca_file, in_dir("tls/origin-ca.pem"));
    EXPECT_EQ(c.threads, 4u);
    EXPECT_EQ(c.node.id, "edge-1");
    EXPECT_EQ(c.node.datacenter, "eu-west");
    ASSERT_EQ(c.cookie.keys.size(), 2u);
    EXPECT_EQ(c.cookie.keys[1].secret_file, in_dir("keys/k1.key"));
    EXPECT_EQ(c.state.timeout, 500ms);
    EXPECT_EQ(c.admin.token_file, in_dir("admin.token"));
    EXPECT_EQ(c.logging.access_log, in_dir("logs/access.jsonl"));
    EXPECT_EQ(c.limits.max_header_bytes, 16u * 1024);
    EXPECT_EQ(c.limits.max_body_bytes, 1ull << 30);
    EXPECT_EQ(c.limits.request_buffer, 128u * 1024);
    EXPECT_EQ(c.limits.body_min_rate, 8u * 1024);
    EXPECT_EQ(c.limits.tunnel_idle_timeout, 10min);
    EXPECT_EQ(c.limits.body_deadline, 15min);
    EXPECT_EQ(c.limits.response_min_rate, 2u * 1024);
    EXPECT_EQ(c.limits.request_buffer_budget, 64u << 20);
    EXPECT_EQ(c.origin.max_connections_per_client, 16u);

    ASSERT_EQ(c.rooms.size(), 2u);
    const room& shop = c.rooms[0];
    EXPECT_EQ(shop.id, "shop");
    EXPECT_EQ(shop.host, "shop.example.com");
    EXPECT_EQ(shop.path, "/checkout");
    ASSERT_EQ(shop.additional_routes.size(), 2u);
    EXPECT_EQ(shop.additional_routes[0].host, "api.example.com");
    EXPECT_EQ(shop.additional_routes[1].host, "");
    EXPECT_EQ(shop.custom_page_html, in_dir("../../templates/queue.en-US.html"));
    EXPECT_EQ(shop.cookie_suffix, "shop");
    EXPECT_TRUE(shop.revoke_enabled);
    ASSERT_EQ(shop.bypass.size(), 6u);
    EXPECT_EQ(shop.bypass[0].type, bypass_rule::kind::path_prefix);
    EXPECT_EQ(shop.bypass[1].type, bypass_rule::kind::header);
    EXPECT_EQ(shop.bypass[1].header_value, "hc-3c0b6a9e51f24d7f");
    EXPECT_EQ(shop.bypass[2].header_value, "partner-acme-7f2e91d4c8");
    EXPECT_EQ(shop.bypass[3].type, bypass_rule::kind::ip);
    EXPECT_EQ(shop.bypass[3].prefix_len, 104u);
    EXPECT_EQ(shop.bypass[4].prefix_len, 32u);
    EXPECT_EQ(shop.bypass[5].value, "OPTIONS");
    ASSERT_EQ(shop.events.size(), 1u);
    const event& ev = shop.events[0];
    EXPECT_EQ(ev.name, "launch");
    EXPECT_EQ(ev.prequeue_start_time, parse_rfc3339("2026-12-01T09:50:00Z"));
    EXPECT_EQ(ev.event_end_time - ev.event_start_time, 2h);
    EXPECT_EQ(ev.total_active_users, 1000u);
    EXPECT_EQ(ev.session_duration, duration{10min});
    EXPECT_EQ(ev.queueing_method, queueing_method::random);
    EXPECT_TRUE(ev.shuffle_at_event_start);
    EXPECT_EQ(c.rooms[1].id, "support");
}

TEST_F(Config, ListenerTakesASingleStringAndIpv6) {
    auto r = load(R"yaml(listen: "[::1]:0"
origin: {url: "http://[::1]:3000"}
)yaml");
    ASSERT_TRUE(r.ok()) << format_problems(r.problems);
    ASSERT_EQ(r.cfg->listen.size(), 1u);
    EXPECT_EQ(r.cfg->listen[0].host, "::1");
    EXPECT_EQ(r.cfg->listen[0].port, 0);
    EXPECT_EQ(r.cfg->origin.host, "::1");
}

TEST_F(Config, HostIsLoweredAndStarMeansAnyHost) {
    auto r = load(R"yaml(rooms:
  - {name: a, host: Shop.Example.COM, total_active_users: 1, new_users_per_minute: 1}
  - {name: b, host: "*", path: /b, total_active_users: 1, new_users_per_minute: 1}
)yaml");
    ASSERT_TRUE(r.ok()) << format_problems(r.problems);
    EXPECT_EQ(r.cfg->rooms[0].host, "shop.example.com");
    EXPECT_EQ(r.cfg->rooms[1].host, "");
}

TEST_F(Config, ThreadsAcceptsAutoOrACount) {
    auto a = load("threads: auto\n");
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(a.cfg->threads, 0u);
    auto b = load("threads: 3\n");
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(b.cfg->threads, 3u);
    EXPECT_EQ(messages(load("threads: many\n")),
              std::vector<std::string>{
                  "config.yaml:1:10: threads: must be \"auto\" or a positive number of threads"});
}

TEST_F(Config, LoadFileResolvesPathsAgainstTheFilesFolder) {
    write("site/page.html", "hi");
    write("site/waitroom.yaml", R"yaml(rooms:
  - {name: a, total_active_users: 1, new_users_per_minute: 1, custom_page_html: page.html}
)yaml");
    auto r = load_file((dir_ / "site/waitroom.yaml").string());
    ASSERT_TRUE(r.ok()) << format_problems(r.problems);
    EXPECT_EQ(r.cfg->rooms[0].custom_page_html, (dir_ / "site/page.html").string());
    EXPECT_EQ(r.cfg->source_path, (dir_ / "site/waitroom.yaml").string());
}

// ---------------------------------------------------------------- bad files

TEST_F(Config, MissingFileIsReportedWithoutPosition) {
    auto r = load_file((dir_ / "nope.yaml").string());
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(messages(r), std::vector<std::string>{(dir_ / "nope.yaml").string() +
                                                    ": cannot read the file: No such file or "
                                                    "directory"});
}

TEST_F(Config, ReportsTheExampleFromTheDesign) {
    auto r = load(R"yaml(listen: ["0.0.0.0:8080"]
rooms:
  - name: one
    path: /one
    total_active_users: 10
    new_users_per_minute: 10
  - name: two
    path: /two
    total_active_users: 0
    new_users_per_minute: 10
)yaml");
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(messages(r),
              std::vector<std::string>{
                  "config.yaml:9:25: rooms[1].total_active_users: must be a positive integer"});
}

TEST_F(Config, ReportsEveryProblemInOneFileInDocumentOrder) {
    auto r = load(R"yaml(listen: ["0.0.0.0"]
origin:
  url: ftp://origin
threads: 0
rooms:
  - name: shop
    totl_active_users: 10
    new_users_per_minute: -5
    session_duration: 300
    queueing_method: lifo
    queueing_status_code: 503
)yaml");
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(messages(r),
              (std::vector<std::string>{
                  "config.yaml:1:10: listen[0]: must be \"host:port\" or \"[IPv6]:port\", like "
                  "0.0.0.0:8080 or [::]:8080",
                  "config.yaml:3:8: origin.url: must be a URL like http://127.0.0.1:3000 or "
                  "https://shop.internal/base (http or https, no query)",
                  "config.yaml:4:10: threads: must be \"auto\" or a positive number of threads",
                  "config.yaml:6:5: rooms[0].total_active_users: is required",
                  "config.yaml:7:5: rooms[0].totl_active_users: unknown key; did you mean "
                  "total_active_users?",
                  "config.yaml:8:27: rooms[0].new_users_per_minute: must be a positive integer",
                  "config.yaml:9:23: rooms[0].session_duration: must be a duration like 90s or "
                  "5m; a bare number has no unit (did you mean 300s?)",
                  "config.yaml:10:22: rooms[0].queueing_method: must be one of fifo, random, "
                  "passthrough, reject",
                  "config.yaml:11:27: rooms[0].queueing_status_code: must be one of 200, 202, 429",
              }));
    EXPECT_EQ(format_problems({r.problems[0], r.problems[2]}),
              "config.yaml:1:10: listen[0]: must be \"host:port\" or \"[IPv6]:port\", like "
              "0.0.0.0:8080 or [::]:8080\n"
              "config.yaml:4:10: threads: must be \"auto\" or a positive number of threads\n");
}

TEST_F(Config, UnknownKeysAnywhereAreErrors) {
    auto r = load(R"yaml(lisen: ["0.0.0.0:8080"]
limits: {max_header_byte: 8KiB}
rooms:
  - name: a
    total_active_users: 1
    new_users_per_minute: 1
    cookie_attributes: {samesite: lax, httponly: true}
    colour: blue
)yaml");
    EXPECT_EQ(messages(r),
              (std::vector<std::string>{
                  "config.yaml:1:1: lisen: unknown key; did you mean listen?",
                  "config.yaml:2:10: limits.max_header_byte: unknown key; did you mean "
                  "max_header_bytes?",
                  "config.yaml:7:40: rooms[0].cookie_attributes.httponly: unknown key",
                  "config.yaml:8:5: rooms[0].colour: unknown key",
              }));
}

TEST_F(Config, DuplicateKeysAreErrors) {
    auto r = load(R"yaml(threads: 2
threads: 3
)yaml");
    EXPECT_EQ(messages(r), std::vector<std::string>{
                               "config.yaml:2:1: threads: duplicate key (first set on line 1)"});
}

TEST_F(Config, BadDurationsSizesAndNumbersNameTheExpectedForm) {
    auto r = load(R"yaml(origin: {timeout: 5 minutes}
limits:
  max_header_bytes: 16 KB
  max_body_bytes: lots
  drain_timeout: 0s
  header_timeout: 0s
state: {sync_interval: 1ms}
testing: {time_scale: fast}
)yaml");
    EXPECT_EQ(messages(r),
              (std::vector<std::string>{
                  "config.yaml:1:19: origin.timeout: must be a duration like 90s or 5m",
                  "config.yaml:3:21: limits.max_header_bytes: must be a size like 16KiB, 1MiB or "
                  "a number of bytes",
                  "config.yaml:4:19: limits.max_body_bytes: must be a size like 16KiB, 1MiB or a "
                  "number of bytes",
                  "config.yaml:6:19: limits.header_timeout: must be at least 1ms",
                  "config.yaml:7:24: state.sync_interval: must be at least 10ms",
                  "config.yaml:8:23: testing.time_scale: must be a number greater than 0 (at most "
                  "1000000)",
              }));
}

TEST_F(Config, BufferRateAndWaitLimitsAreChecked) {
    auto r = load(R"yaml(origin: {pool_wait_timeout: 0s, max_pool_waiters: -1}
limits:
  request_buffer: 1KiB
  body_min_rate: fast
  tunnel_idle_timeout: 30
)yaml");
    EXPECT_EQ(messages(r),
              (std::vector<std::string>{
                  "config.yaml:1:29: origin.pool_wait_timeout: must be at least 1ms",
                  "config.yaml:1:51: origin.max_pool_waiters: must be an integer ≥ 0",
                  "config.yaml:3:19: limits.request_buffer: must be at least 16384 bytes",
                  "config.yaml:4:18: limits.body_min_rate: must be a size like 16KiB, 1MiB or a "
                  "number of bytes",
                  "config.yaml:5:24: limits.tunnel_idle_timeout: must be a duration like 90s or "
                  "5m; a bare number has no unit (did you mean 30s?)",
              }));
    auto ok = load("origin: {max_pool_waiters: 0}\nlimits: {body_min_rate: 0}\n");
    ASSERT_TRUE(ok.ok()) << format_problems(ok.problems);
    EXPECT_EQ(ok.cfg->origin.max_pool_waiters, 0u);
    EXPECT_EQ(ok.cfg->limits.body_min_rate, 0u);
}

TEST_F(Config, BodyDeadlineAndResponseRateAreChecked) {
    auto r = load("limits:\n  body_deadline: 10\n  response_min_rate: -1\n");
    EXPECT_EQ(messages(r),
              (std::vector<std::string>{
                  "config.yaml:2:18: limits.body_deadline: must be a duration like 90s or 5m; a "
                  "bare number has no unit (did you mean 10s?)",
                  "config.yaml:3:22: limits.response_min_rate: must be a size like 16KiB, 1MiB or "
                  "a number of bytes",
              }));
    auto ok = load("limits: {body_deadline: 0s, response_min_rate: 0}\n");
    ASSERT_TRUE(ok.ok()) << format_problems(ok.problems);
    EXPECT_EQ(ok.cfg->limits.body_deadline, 0s);
    EXPECT_EQ(ok.cfg->limits.response_min_rate, 0u);
    auto defaults = load("threads: 1\n");
    ASSERT_TRUE(defaults.ok()) << format_problems(defaults.problems);
    EXPECT_EQ(defaults.cfg->limits.body_deadline, 10min);
    EXPECT_EQ(defaults.cfg->limits.response_min_rate, 4u * 1024);
    EXPECT_EQ(defaults.cfg->limits.request_buffer_budget, 32u << 20);
}

TEST_F(Config, PerClientCapAndBufferBudgetAreChecked) {
    auto r = load(
        "origin: {max_connections_per_client: many}\nlimits: {request_buffer_budget: "
        "lots}\n");
    EXPECT_EQ(messages(r),
              (std::vector<std::string>{
                  "config.yaml:1:38: origin.max_connections_per_client: must be an integer ≥ 0",
                  "config.yaml:2:33: limits.request_buffer_budget: must be a size like 16KiB, "
                  "1MiB or a number of bytes",
              }));
    auto ok = load("origin: {max_connections_per_client: 0}\nlimits: {request_buffer_budget: 0}\n");
    ASSERT_TRUE(ok.ok()) << format_problems(ok.problems);
    EXPECT_EQ(client_connection_cap(ok.cfg->origin), 0u);
    EXPECT_EQ(ok.cfg->limits.request_buffer_budget, 0u);
}

TEST_F(Config, PerClientCapDefaultsToAQuarterOfThePool) {
    auto by_default = load("threads: 1\n");
    ASSERT_TRUE(by_default.ok()) << format_problems(by_default.problems);
    EXPECT_EQ(client_connection_cap(by_default.cfg->origin), 64u);
    auto small = load("origin: {max_connections: 3}\n");
    ASSERT_TRUE(small.ok()) << format_problems(small.problems);
    EXPECT_EQ(client_connection_cap(small.cfg->origin), 1u);
    auto set = load("origin: {max_connections: 8, max_connections_per_client: 5}\n");
    ASSERT_TRUE(set.ok()) << format_problems(set.problems);
    EXPECT_EQ(client_connection_cap(set.cfg->origin), 5u);
}

TEST_F(Config, TunnelCapDefaultsToHalfThePoolAndIsChecked) {
    auto by_default = load("threads: 1\n");
    ASSERT_TRUE(by_default.ok()) << format_problems(by_default.problems);
    EXPECT_EQ(tunnel_cap(by_default.cfg->origin), 128u);
    auto one = load("origin: {max_connections: 1}\n");
    ASSERT_TRUE(one.ok()) << format_problems(one.problems);
    EXPECT_EQ(tunnel_cap(one.cfg->origin), 1u);
    auto set = load("origin: {max_connections: 8, max_tunnels: 0}\n");
    ASSERT_TRUE(set.ok()) << format_problems(set.problems);
    EXPECT_EQ(tunnel_cap(set.cfg->origin), 0u);
    auto bad = load("origin: {max_tunnels: -3}\n");
    EXPECT_EQ(
        messages(bad),
        (std::vector<std::string>{"config.yaml:1:23: origin.max_tunnels: must be an integer ≥ 0"}));
}

TEST_F(Config, SizesAcceptUnits) {
    auto r = load(R"yaml(limits: {max_header_bytes: 8KiB, max_body_bytes: 1MiB}
testing: {time_scale: 60}
)yaml");
    ASSERT_TRUE(r.ok()) << format_problems(r.problems);
    EXPECT_EQ(r.cfg->limits.max_header_bytes, 8192u);
    EXPECT_EQ(r.cfg->limits.max_body_bytes, 1048576u);
    EXPECT_EQ(r.cfg->testing.time_scale, 60.0);
}

TEST_F(Config, BadUrlsAndAddressesAreErrors) {
    auto r = load(R"yaml(listen:
  - "::1:8080"
  - {address: "0.0.0.0:8443", tls: {cert: c.pem}}
origin: {url: "http://origin:99999"}
state: {backend: redis, url: "http://redis"}
cookie: {keys: [{id: k1, secret_env: K1}]}
admin: {listen: localhost}
)yaml");
    EXPECT_EQ(messages(r),
              (std::vector<std::string>{
                  "config.yaml:2:5: listen[0]: must be \"host:port\" or \"[IPv6]:port\", like "
                  "0.0.0.0:8080 or [::]:8080",
                  "config.yaml:3:36: listen[1].tls.key: is required (a PEM file)",
                  "config.yaml:4:15: origin.url: must be a URL like http://127.0.0.1:3000 or "
                  "https://shop.internal/base (http or https, no query)",
                  "config.yaml:5:30: state.url: must be a URL like "
                  "redis://[user:password@]127.0.0.1:6379/0 (in the user and password, write @ / "
                  "? # % as %40 %2F %3F %23 %25)",
                  "config.yaml:7:17: admin.listen: must be \"host:port\" or \"[IPv6]:port\", "
                  "like 0.0.0.0:8080 or [::]:8080",
              }));
}

TEST_F(Config, OtherSectionsCheckTheirValues) {
    auto r = load(R"yaml(listen: []
origin: {max_connections: 0, verify_tls: yes}
node: {id: "edge 1"}
admin: {token_file: admin.token, token_env: TOKEN}
logging: {level: verbose}
limits: {max_connections: 99999999999}
rooms:
  - {name: a, total_active_users: 2000000000, new_users_per_minute: 1}
)yaml");
    EXPECT_EQ(messages(r),
              (std::vector<std::string>{
                  "config.yaml:1:9: listen: must list at least one address, like 0.0.0.0:8080",
                  "config.yaml:2:27: origin.max_connections: must be a positive integer",
                  "config.yaml:2:42: origin.verify_tls: must be true or false",
                  "config.yaml:3:12: node.id: must be 1 to 64 characters of A-Z a-z 0-9 _ . -",
                  "config.yaml:4:45: admin.token_env: set only one of token_file and token_env",
                  "config.yaml:5:18: logging.level: must be one of trace, debug, info, warn, "
                  "error, critical, off",
                  "config.yaml:6:27: limits.max_connections: must be a positive integer no larger "
                  "than 10000000",
                  "config.yaml:8:35: rooms[0].total_active_users: must be a positive integer no "
                  "larger than 1000000000",
              }));
}

TEST_F(Config, NonLoopbackAdminListenerWithoutATokenIsAnError) {
    auto r = load(R"yaml(admin: {listen: "0.0.0.0:9090"}
)yaml");
    EXPECT_EQ(messages(r), (std::vector<std::string>{
                               "config.yaml:1:17: admin.listen: a listener other than loopback "
                               "(127.0.0.1, [::1], localhost) needs a token: set admin.token_file "
                               "or admin.token_env",
                           }));
    for (const char* listen : {"[::]:9090", "10.1.2.3:9090", "admin.internal:9090"}) {
        auto other = load(std::string("admin: {listen: \"") + listen + "\"}\n");
        EXPECT_FALSE(other.ok()) << listen;
    }
}

TEST_F(Config, NonLoopbackAdminListenerWithATokenLoads) {
    auto r = load(R"yaml(admin: {listen: "0.0.0.0:9090", token_env: WAITROOM_ADMIN_TOKEN}
)yaml");
    ASSERT_TRUE(r.ok()) << format_problems(r.problems);
    write("admin.token", "t0ken\n");
    fs::permissions(dir_ / "admin.token", fs::perms::owner_read | fs::perms::owner_write);
    auto f = load(R"yaml(admin: {listen: "[::]:9090", token_file: admin.token}
)yaml");
    ASSERT_TRUE(f.ok()) << format_problems(f.problems);
}

TEST_F(Config, LoopbackAdminListenerNeedsNoToken) {
    for (const char* listen : {"127.0.0.1:9090", "127.0.0.2:0", "[::1]:9090", "localhost:9090"}) {
        auto r = load(std::string("admin: {listen: \"") + listen + "\"}\n");
        EXPECT_TRUE(r.ok()) << listen << ": " << format_problems(r.problems);
    }
}

TEST_F(Config, AdminAllowedHostsAreBareNamesKeptLowercase) {
    auto r = load(R"yaml(admin: {allowed_hosts: [Admin.Internal, "10.0.0.5", "[fd00::1]"]}
)yaml");
    ASSERT_TRUE(r.ok()) << format_problems(r.problems);
    EXPECT_EQ(r.cfg->admin.allowed_hosts,
              (std::vector<std::string>{"admin.internal", "10.0.0.5", "fd00::1"}));
    auto bad = load(R"yaml(admin:
  allowed_hosts: ["admin.internal:9090", "http://x", "", {a: 1}]
)yaml");
    EXPECT_EQ(messages(bad),
              (std::vector<std::string>{
                  "config.yaml:2:19: admin.allowed_hosts[0]: must be a host name or address "
                  "without port, like admin.internal",
                  "config.yaml:2:42: admin.allowed_hosts[1]: must be a host name or address "
                  "without port, like admin.internal",
                  "config.yaml:2:54: admin.allowed_hosts[2]: must be a host name or address "
                  "without port, like admin.internal",
                  "config.yaml:2:58: admin.allowed_hosts[3]: must be a string",
              }));
}

TEST_F(Config, SecretFilesOpenToGroupOrOthersAreErrorsNamingFileAndMode) {
    write("keys/k1.key", "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n");
    write("admin.token", "t0ken\n");
    write("own.key", "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n");
    fs::permissions(dir_ / "keys/k1.key", fs::perms(0644));
    fs::permissions(dir_ / "admin.token", fs::perms(0640));
    fs::permissions(dir_ / "own.key", fs::perms(0604));
    const std::string k1 = (dir_ / "keys/k1.key").string();
    const std::string token = (dir_ / "admin.token").string();
    const std::string own = (dir_ / "own.key").string();
    auto r = load(R"yaml(cookie: {keys: [{id: k1, secret_file: keys/k1.key}]}
admin: {token_file: admin.token}
)yaml");
    EXPECT_EQ(messages(r),
              (std::vector<std::string>{
                  "config.yaml:1:39: cookie.keys[0].secret_file: " + k1 +
                      " has mode 0644: a secret file must not be open to its group or others "
                      "(chmod 600 " +
                      k1 + ")",
                  "config.yaml:2:21: admin.token_file: " + token +
                      " has mode 0640: a secret file must not be open to its group or others "
                      "(chmod 600 " +
                      token + ")",
              }));
    auto generated = load("cookie: {key_file: own.key}\n");
    ASSERT_EQ(generated.problems.size(), 1u);
    EXPECT_NE(generated.problems[0].to_string().find("cookie.key_file: " + own + " has mode 0604"),
              std::string::npos)
        << generated.problems[0].to_string();

    fs::permissions(dir_ / "keys/k1.key", fs::perms(0600));
    fs::permissions(dir_ / "admin.token", fs::perms(0400));
    fs::permissions(dir_ / "own.key", fs::perms(0600));
    EXPECT_TRUE(load(R"yaml(cookie: {keys: [{id: k1, secret_file: keys/k1.key}]}
admin: {token_file: admin.token}
)yaml")
                    .ok());
    EXPECT_TRUE(load("cookie: {key_file: own.key}\n").ok());
}

TEST_F(Config, RedisPasswordIsKeptOutOfTheUrl) {
    auto r =
        load(R"yaml(state: {backend: redis, url: "redis://app:pa%2Fss%40word@db.internal:6380/2"}
cookie: {keys: [{id: k1, secret_env: K1}]}
)yaml");
    ASSERT_TRUE(r.ok()) << format_problems(r.problems);
    EXPECT_EQ(r.cfg->state.url, "redis://app:***@db.internal:6380/2");
    EXPECT_EQ(r.cfg->state.redis_username, "app");
    EXPECT_EQ(r.cfg->state.redis_password, "pa/ss@word");
    EXPECT_EQ(r.cfg->state.redis_host, "db.internal");
    // Unescaped, the same password is refused, and the refusal does not repeat it.
    auto raw = load(R"yaml(state: {backend: redis, url: "redis://app:pa/ss@word@db.internal:6380/2"}
cookie: {keys: [{id: k1, secret_env: K1}]}
)yaml");
    ASSERT_FALSE(raw.ok());
    const std::string text = format_problems(raw.problems);
    EXPECT_NE(text.find("state.url: must be a URL"), std::string::npos) << text;
    EXPECT_EQ(text.find("ss@word"), std::string::npos) << text;
}

TEST_F(Config, EventTemplateMustExistToo) {
    write("ok.html", "ok");
    auto r = load(R"yaml(rooms:
  - name: a
    total_active_users: 1
    new_users_per_minute: 1
    custom_page_html: ok.html
    events:
      - name: e
        event_start_time: "2026-12-01T10:00:00Z"
        event_end_time: "2026-12-01T11:00:00Z"
        custom_page_html: /nonexistent/event.html
)yaml");
    EXPECT_EQ(messages(r), std::vector<std::string>{
                               "config.yaml:10:27: rooms[0].events[0].custom_page_html: file not "
                               "found: /nonexistent/event.html"});
}

TEST_F(Config, RedisBackendWithoutCookieKeysIsAnError) {
    auto r = load(R"yaml(state:
  backend: redis
  url: redis://127.0.0.1:6379/0
)yaml");
    EXPECT_EQ(messages(r), std::vector<std::string>{
                               "config.yaml:2:12: state.backend: redis needs cookie.keys: every "
                               "node must share the same cookie keys"});
}

TEST_F(Config, CookieKeysNeedAnIdAndExactlyOneSecret) {
    auto r = load(R"yaml(cookie:
  keys:
    - {id: k1, secret_file: k1.key, secret_env: K1}
    - {id: k1, secret_env: K2}
    - {secret_env: K3}
    - {id: much-too-long, secret_env: K4}
    - {id: k5}
)yaml");
    EXPECT_EQ(messages(r),
              (std::vector<std::string>{
                  "config.yaml:3:49: cookie.keys[0]: needs exactly one of secret_file or "
                  "secret_env",
                  "config.yaml:4:12: cookie.keys[1].id: duplicate key id \"k1\" (also "
                  "cookie.keys[0])",
                  "config.yaml:5:7: cookie.keys[2].id: is required",
                  "config.yaml:6:12: cookie.keys[3].id: must be 1 to 8 characters of A-Z a-z 0-9 "
                  "_ -",
                  "config.yaml:7:7: cookie.keys[4]: needs exactly one of secret_file or "
                  "secret_env",
              }));
}

TEST_F(Config, RoomValuesAreCheckedAgainstTheirAllowedSets) {
    auto r = load(R"yaml(rooms:
  - name: a
    id: "a b"
    host: "shop example"
    path: checkout
    total_active_users: 1
    new_users_per_minute: 1
    disable_session_renewal: maybe
    default_template_language: en-GB
    cookie_suffix: "x;y"
    cookie_attributes: {samesite: none, secure: never}
    enabled_origin_commands: [revoke, purge]
    json_response_enabled: 1
    refresh_interval: 20
)yaml");
    EXPECT_EQ(
        messages(r),
        (std::vector<std::string>{
            "config.yaml:3:9: rooms[0].id: must be 1 to 64 characters of A-Z a-z 0-9 _ -",
            "config.yaml:4:11: rooms[0].host: must be a host name like shop.example.com, or \"*\" "
            "for any",
            "config.yaml:5:11: rooms[0].path: must be a path starting with \"/\" (no spaces, ? or "
            "#)",
            "config.yaml:8:30: rooms[0].disable_session_renewal: must be true or false",
            "config.yaml:9:32: rooms[0].default_template_language: must be one of en-US, es-ES, "
            "de-DE, fr-FR, it-IT, ja-JP, ko-KR, pt-BR, zh-CN, zh-TW, nl-NL, pl-PL, ru-RU, tr-TR, "
            "id-ID, fa-IR",
            "config.yaml:10:20: rooms[0].cookie_suffix: must be up to 64 characters of A-Z a-z "
            "0-9 _ -",
            "config.yaml:11:49: rooms[0].cookie_attributes.secure: must be auto or always when "
            "samesite is none (browsers drop the cookie otherwise)",
            "config.yaml:12:39: rooms[0].enabled_origin_commands[1]: must be one of revoke",
            "config.yaml:13:28: rooms[0].json_response_enabled: must be true or false",
            "config.yaml:14:23: rooms[0].refresh_interval: must be a duration like 90s or 5m; a "
            "bare number has no unit (did you mean 20s?)",
        }));
}

TEST_F(Config, RoomIdsAndRoutesMustBeUnique) {
    auto r = load(R"yaml(rooms:
  - {name: Shop, total_active_users: 1, new_users_per_minute: 1}
  - {name: shop, path: /x, total_active_users: 1, new_users_per_minute: 1}
  - name: other
    total_active_users: 1
    new_users_per_minute: 1
  - name: third
    path: /third
    additional_routes: [{host: a.example, path: /y}, {path: /x}, {path: /third}]
    total_active_users: 1
    new_users_per_minute: 1
)yaml");
    EXPECT_EQ(messages(r),
              (std::vector<std::string>{
                  "config.yaml:3:12: rooms[1].id: duplicate room id \"shop\" (also rooms[0]); set "
                  "a distinct id",
                  "config.yaml:4:5: rooms[2].path: route */ is already used by rooms[0]",
                  "config.yaml:9:54: rooms[3].additional_routes[1]: route */x is already used by "
                  "rooms[1]",
                  "config.yaml:9:66: rooms[3].additional_routes[2]: route */third is listed twice "
                  "in this room",
              }));
}

TEST_F(Config, RoutingKeysLoadAndNonCanonicalPathsAreErrors) {
    auto good = load(
        R"yaml(origin: {url: "http://127.0.0.1:3000/app", host_header: origin, unknown_hosts: pass}
rooms:
  - {name: a, path: /Shop, case_insensitive_paths: true, total_active_users: 1, new_users_per_minute: 1}
)yaml");
    ASSERT_TRUE(good.ok()) << format_problems(good.problems);
    EXPECT_EQ(good.cfg->origin.host_header, host_header_mode::origin);
    EXPECT_EQ(good.cfg->origin.unknown_hosts, unknown_hosts_policy::pass);
    EXPECT_TRUE(good.cfg->rooms[0].case_insensitive_paths);
    auto defaults = load("");
    ASSERT_TRUE(defaults.ok());
    EXPECT_EQ(defaults.cfg->origin.host_header, host_header_mode::client);
    EXPECT_EQ(defaults.cfg->origin.unknown_hosts, unknown_hosts_policy::reject);

    auto r = load(
        R"yaml(origin: {url: "http://127.0.0.1:3000/a//b", host_header: vhost, unknown_hosts: drop}
rooms:
  - name: a
    path: /%73hop
    total_active_users: 1
    new_users_per_minute: 1
    additional_routes: [{path: /x/../y}]
    bypass: [{path_prefix: /static;v=1}]
)yaml");
    const std::string hint =
        "must be a canonical path like /shop: no empty, . or .. segments, no ;parameters, no "
        "escaped letters, digits or -._~, escapes in upper-case hex (see README, Routing)";
    EXPECT_EQ(messages(r),
              (std::vector<std::string>{
                  "config.yaml:1:15: origin.url: " + hint,
                  "config.yaml:1:58: origin.host_header: must be one of client, origin",
                  "config.yaml:1:80: origin.unknown_hosts: must be one of reject, pass",
                  "config.yaml:4:11: rooms[0].path: " + hint,
                  "config.yaml:7:32: rooms[0].additional_routes[0].path: " + hint,
                  "config.yaml:8:28: rooms[0].bypass[0].path_prefix: " + hint,
              }));
}

TEST_F(Config, BadBypassRulesAreErrors) {
    auto r = load(R"yaml(rooms:
  - name: a
    total_active_users: 1
    new_users_per_minute: 1
    bypass:
      - ip: 10.0.0.0/33
      - ip: "2001:db8::/200"
      - {path_prefix: /x, method: GET}
      - path_prefix: static/
      - {method: GET, value: x}
      - {ip: 192.168.0.0/16}
)yaml");
    EXPECT_EQ(messages(r),
              (std::vector<std::string>{
                  "config.yaml:6:13: rooms[0].bypass[0].ip: must be an IP address or CIDR like "
                  "10.0.0.0/8 or 2001:db8::/32",
                  "config.yaml:7:13: rooms[0].bypass[1].ip: must be an IP address or CIDR like "
                  "10.0.0.0/8 or 2001:db8::/32",
                  "config.yaml:8:9: rooms[0].bypass[2]: needs exactly one of path_prefix, header, "
                  "ip, method",
                  "config.yaml:9:22: rooms[0].bypass[3].path_prefix: must be a path starting with "
                  "\"/\"",
                  "config.yaml:10:30: rooms[0].bypass[4].value: is allowed only with header",
              }));
}

TEST_F(Config, HeaderBypassNeedsASecretOfSixteenCharacters) {
    auto r = load(R"yaml(rooms:
  - name: a
    total_active_users: 1
    new_users_per_minute: 1
    bypass:
      - header: X-Health-Check
      - {header: X-Partner, value: acme}
      - {header: X-Partner, value: "123456789012345 "}
      - {header: X-Partner, value: "12345678901234\t5"}
      - {header: X-Partner, value: [a]}
      - {header: X-Partner, value: "0123456789abcdef"}
)yaml");
    EXPECT_EQ(messages(r),
              (std::vector<std::string>{
                  "config.yaml:6:9: rooms[0].bypass[0].value: is required with header: a secret "
                  "of at least 16 characters",
                  "config.yaml:7:36: rooms[0].bypass[1].value: must be a secret of at least 16 "
                  "characters, without leading or trailing spaces",
                  "config.yaml:8:36: rooms[0].bypass[2].value: must be a secret of at least 16 "
                  "characters, without leading or trailing spaces",
                  "config.yaml:9:36: rooms[0].bypass[3].value: must not hold control characters",
                  "config.yaml:10:36: rooms[0].bypass[4].value: must be a string",
              }));
}

TEST_F(Config, TrustedProxiesForwardedHeadersAndProxyProtocolAreChecked) {
    auto r = load(R"yaml(listen:
  - {address: "127.0.0.1:0", proxy_protocol: yes please}
trusted_proxies: [10.0.0.0/8, 10.0.0.0/33, ::1, nonsense]
forwarded_headers: keep
)yaml");
    EXPECT_EQ(messages(r),
              (std::vector<std::string>{
                  "config.yaml:2:46: listen[0].proxy_protocol: must be true or false",
                  "config.yaml:3:31: trusted_proxies[1]: must be an IP address or CIDR like "
                  "10.0.0.0/8 or 2001:db8::/32",
                  "config.yaml:3:49: trusted_proxies[3]: must be an IP address or CIDR like "
                  "10.0.0.0/8 or 2001:db8::/32",
                  "config.yaml:4:20: forwarded_headers: must be one of overwrite, append",
              }));
    auto ok = load("trusted_proxies: [10.0.0.0/8, \"::1\"]\nforwarded_headers: append\n");
    ASSERT_TRUE(ok.ok()) << format_problems(ok.problems);
    EXPECT_EQ(ok.cfg->trusted_proxies.size(), 2u);
    EXPECT_EQ(ok.cfg->forwarded_headers, forwarded_mode::append);
    auto none = load("listen: [\"127.0.0.1:0\"]\n");
    ASSERT_TRUE(none.ok());
    EXPECT_TRUE(none.cfg->trusted_proxies.empty());
    EXPECT_EQ(none.cfg->forwarded_headers, forwarded_mode::overwrite);
    EXPECT_FALSE(none.cfg->listen[0].proxy_protocol);
}

TEST_F(Config, BadEventTimesAndOverlapsAreErrors) {
    auto r = load(R"yaml(rooms:
  - name: a
    total_active_users: 1
    new_users_per_minute: 1
    events:
      - name: first
        event_start_time: "2026-12-01T10:00:00Z"
        event_end_time: "2026-12-01T12:00:00Z"
      - name: second
        prequeue_start_time: "2026-12-01T11:30:00Z"
        event_start_time: "2026-12-01T13:00:00+01:00"
        event_end_time: "2026-12-01T14:00:00Z"
      - name: backwards
        event_start_time: "2026-12-02T10:00:00Z"
        event_end_time: "2026-12-02T09:00:00Z"
      - name: late prequeue
        prequeue_start_time: "2026-12-03T10:30:00Z"
        event_start_time: "2026-12-03T10:00:00Z"
        event_end_time: "2026-12-03T11:00:00Z"
      - name: bad time
        event_start_time: "2026-12-04 10:00"
        event_end_time: 2026-12-04T11:00:00Z
      - name: first
        event_start_time: "2026-12-05T10:00:00Z"
        event_end_time: "2026-12-05T11:00:00Z"
)yaml");
    EXPECT_EQ(messages(r),
              (std::vector<std::string>{
                  "config.yaml:9:9: rooms[0].events[1]: overlaps rooms[0].events[0] \"first\", "
                  "which runs until 2026-12-01T12:00:00Z (events of a room must not overlap, "
                  "prequeue included)",
                  "config.yaml:15:25: rooms[0].events[2].event_end_time: must be after "
                  "event_start_time",
                  "config.yaml:17:30: rooms[0].events[3].prequeue_start_time: must not be after "
                  "event_start_time",
                  "config.yaml:21:27: rooms[0].events[4].event_start_time: must be an RFC 3339 "
                  "time like 2026-12-01T10:00:00Z or 2026-12-01T11:00:00+01:00",
                  "config.yaml:23:15: rooms[0].events[5].name: duplicate event name \"first\" "
                  "(also rooms[0].events[0])",
              }));
}

TEST_F(Config, EventsNeedANameAndBothTimes) {
    auto r = load(R"yaml(rooms:
  - name: a
    total_active_users: 1
    new_users_per_minute: 1
    events:
      - {event_start_time: "2026-12-01T10:00:00Z", total_active_users: 0}
)yaml");
    EXPECT_EQ(messages(r),
              (std::vector<std::string>{
                  "config.yaml:6:9: rooms[0].events[0].name: is required",
                  "config.yaml:6:9: rooms[0].events[0].event_end_time: is required",
                  "config.yaml:6:72: rooms[0].events[0].total_active_users: must be a positive "
                  "integer",
              }));
}

TEST_F(Config, MissingTemplateFileIsAnError) {
    auto r = load(R"yaml(rooms:
  - name: a
    total_active_users: 1
    new_users_per_minute: 1
    custom_page_html: templates/missing.html
)yaml");
    EXPECT_EQ(messages(r), std::vector<std::string>{
                               "config.yaml:5:23: rooms[0].custom_page_html: file not found: " +
                               (dir_ / "templates/missing.html").string()});
}

TEST_F(Config, TemplateThatIsAFolderIsAnError) {
    fs::create_directories(dir_ / "templates");
    auto r = load(R"yaml(rooms:
  - {name: a, total_active_users: 1, new_users_per_minute: 1, custom_page_html: templates}
)yaml");
    EXPECT_EQ(messages(r),
              std::vector<std::string>{
                  "config.yaml:2:81: rooms[0].custom_page_html: is a folder, not a file: " +
                  (dir_ / "templates").string()});
}

TEST_F(Config, YamlSyntaxErrorIsReportedWithItsPosition) {
    auto r = load(R"yaml(rooms:
  - name: a
   total_active_users: 1
)yaml");
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(messages(r), std::vector<std::string>{
                               "config.yaml:3:4: YAML syntax error: end of sequence not found"});
    EXPECT_EQ(messages(load("threads: auto: 2\n")),
              std::vector<std::string>{"config.yaml:1:14: YAML syntax error: illegal map value"});
}

TEST_F(Config, EmptyValueIsReportedAtItsKey) {
    auto r = load(R"yaml(rooms:
  - name: a
    total_active_users:
    new_users_per_minute: 1
)yaml");
    EXPECT_EQ(messages(r),
              std::vector<std::string>{
                  "config.yaml:3:5: rooms[0].total_active_users: must be a positive integer"});
}

TEST_F(Config, WrongShapesAreErrors) {
    auto r = load(R"yaml(origin: http://127.0.0.1:3000
rooms:
  name: a
)yaml");
    EXPECT_EQ(messages(r), (std::vector<std::string>{
                               "config.yaml:1:9: origin: must be a mapping of keys to values",
                               "config.yaml:3:3: rooms: must be a list",
                           }));
    EXPECT_EQ(messages(load("- a\n- b\n")),
              std::vector<std::string>{"config.yaml:1:1: must be a mapping of keys to values"});
}

TEST_F(Config, SentinelsAndClusterNodesAreListsOfHostPort) {
    auto s = load(R"yaml(state:
  backend: redis
  url: "redis://:pw@unused:6379/2"
  sentinels: ["10.0.0.1:26379", "sentinel-b.internal:26379"]
  master_name: shop-master
cookie: {keys: [{id: k1, secret_env: K1}]}
)yaml");
    ASSERT_TRUE(s.ok()) << format_problems(s.problems);
    EXPECT_EQ(s.cfg->state.sentinels,
              (std::vector<std::string>{"10.0.0.1:26379", "sentinel-b.internal:26379"}));
    EXPECT_EQ(s.cfg->state.master_name, "shop-master");
    EXPECT_EQ(s.cfg->state.redis_password, "pw");
    EXPECT_EQ(s.cfg->state.redis_db, 2u);
    EXPECT_TRUE(s.cfg->state.cluster_nodes.empty());

    auto c = load(R"yaml(state: {backend: redis, cluster_nodes: ["127.0.0.1:7000", "[::1]:7001"]}
cookie: {keys: [{id: k1, secret_env: K1}]}
)yaml");
    ASSERT_TRUE(c.ok()) << format_problems(c.problems);
    EXPECT_EQ(c.cfg->state.cluster_nodes,
              (std::vector<std::string>{"127.0.0.1:7000", "[::1]:7001"}));
}

TEST_F(Config, SentinelAndClusterSettingsThatCannotWorkAreRefused) {
    auto r = load(R"yaml(state:
  backend: redis
  sentinels: ["10.0.0.1", "h:0", 7, "ok:26379"]
cookie: {keys: [{id: k1, secret_env: K1}]}
)yaml");
    EXPECT_EQ(messages(r),
              (std::vector<std::string>{
                  "config.yaml:3:14: state.master_name: is required with state.sentinels (the "
                  "name the sentinels monitor)",
                  "config.yaml:3:15: state.sentinels[0]: must be \"host:port\", like "
                  "127.0.0.1:26379",
                  "config.yaml:3:27: state.sentinels[1]: must be \"host:port\", like "
                  "127.0.0.1:26379",
                  "config.yaml:3:34: state.sentinels[2]: must be \"host:port\", like "
                  "127.0.0.1:26379",
              }));
    EXPECT_EQ(messages(load(R"yaml(state: {backend: redis, master_name: m, cluster_nodes: []}
cookie: {keys: [{id: k1, secret_env: K1}]}
)yaml")),
              (std::vector<std::string>{
                  "config.yaml:1:38: state.master_name: needs state.sentinels (the sentinels "
                  "that know the master)",
                  "config.yaml:1:56: state.cluster_nodes: must list at least one \"host:port\"",
              }));
    EXPECT_EQ(messages(load(R"yaml(state:
  backend: redis
  url: "redis://127.0.0.1:6379/3"
  sentinels: ["a:1"]
  master_name: m
  cluster_nodes: ["b:2"]
cookie: {keys: [{id: k1, secret_env: K1}]}
)yaml")),
              (std::vector<std::string>{
                  "config.yaml:6:18: state.cluster_nodes: cannot go with state.sentinels: a "
                  "cluster fails over by itself",
                  "config.yaml:6:18: state.cluster_nodes: needs database 0 in state.url: Redis "
                  "Cluster has no other",
              }));
    EXPECT_EQ(messages(load("state: {sentinels: [\"a:1\"], master_name: m}\n")),
              (std::vector<std::string>{
                  "config.yaml:1:20: state.sentinels: needs state.backend: redis",
                  "config.yaml:1:42: state.master_name: needs state.backend: redis",
              }));
}

// ---------------------------------------------------------------- TLS listeners

TEST_F(Config, ATlsListenerTakesSeveralCertificatesAndItsVersionAndCiphers) {
    auto r = load(R"yaml(listen:
  - address: "0.0.0.0:8443"
    tls:
      certificates: [{cert: a.pem, key: a.key}, {cert: b.pem, key: b.key}]
      min_version: "1.3"
      ciphers: ECDHE-RSA-AES128-GCM-SHA256
    http2: false
  - {address: "0.0.0.0:8080", h2c: true}
)yaml");
    ASSERT_TRUE(r.ok()) << format_problems(r.problems);
    const auto& tls = *r.cfg->listen[0].tls;
    ASSERT_EQ(tls.certificates.size(), 2u);
    EXPECT_EQ(tls.certificates[1].cert, (dir_ / "b.pem").string());
    EXPECT_EQ(tls.certificates[1].key, (dir_ / "b.key").string());
    EXPECT_EQ(tls.certificates[1].key_at.path, "listen[0].tls.certificates[1].key");
    EXPECT_EQ(tls.certificates[1].key_at.line, 4);
    EXPECT_EQ(tls.certificates[1].cert_at.path, "listen[0].tls.certificates[1].cert");
    EXPECT_EQ(tls.min_version, tls_version::v1_3);
    EXPECT_EQ(tls.ciphers, "ECDHE-RSA-AES128-GCM-SHA256");
    EXPECT_FALSE(r.cfg->listen[0].http2);
    EXPECT_TRUE(r.cfg->listen[1].h2c);
    EXPECT_FALSE(r.cfg->listen[1].tls);
}

TEST_F(Config, TheSingleCertificateFormIsOneCertificateWithTheDefaults) {
    auto r = load(R"yaml(listen:
  - {address: "0.0.0.0:8443", tls: {cert: c.pem, key: c.key}}
)yaml");
    ASSERT_TRUE(r.ok()) << format_problems(r.problems);
    const auto& tls = *r.cfg->listen[0].tls;
    ASSERT_EQ(tls.certificates.size(), 1u);
    EXPECT_EQ(tls.certificates[0].cert_at.path, "listen[0].tls.cert");
    EXPECT_EQ(tls.certificates[0].key_at.path, "listen[0].tls.key");
    EXPECT_EQ(tls.min_version, tls_version::v1_2);
    EXPECT_EQ(tls.ciphers, default_tls_ciphers);
    EXPECT_TRUE(r.cfg->listen[0].http2);
    EXPECT_FALSE(r.cfg->listen[0].h2c);
}

TEST_F(Config, BadTlsSettingsAreErrorsAtTheirPlace) {
    auto r = load(R"yaml(listen:
  - {address: "127.0.0.1:1", tls: {cert: c.pem, key: c.key, certificates: [{cert: a, key: b}]}}
  - {address: "127.0.0.1:2", tls: {certificates: []}}
  - {address: "127.0.0.1:3", tls: {certificates: [{cert: a.pem}, {cert: b, key: c, pin: x}]}}
  - {address: "127.0.0.1:4", tls: {cert: c, key: k, min_version: "1.1", ciphers: "NOPE:NADA"}}
  - {address: "127.0.0.1:5", http2: true}
  - {address: "127.0.0.1:6", tls: {cert: c, key: k}, h2c: true}
  - {address: "127.0.0.1:7", tls: }
)yaml");
    EXPECT_EQ(messages(r),
              (std::vector<std::string>{
                  "config.yaml:2:35: listen[0].tls: give either cert and key, or certificates, "
                  "not both",
                  "config.yaml:3:50: listen[1].tls.certificates: must list at least one "
                  "{cert, key}",
                  "config.yaml:4:51: listen[2].tls.certificates[0].key: is required (a PEM file)",
                  "config.yaml:4:84: listen[2].tls.certificates[1].pin: unknown key",
                  "config.yaml:5:66: listen[3].tls.min_version: must be one of 1.2, 1.3",
                  "config.yaml:5:82: listen[3].tls.ciphers: must be an OpenSSL cipher list that "
                  "names at least one TLS 1.2 cipher, like "
                  "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256",
                  "config.yaml:6:37: listen[4].http2: applies to TLS listeners only (plain "
                  "listeners: h2c)",
                  "config.yaml:7:59: listen[5].h2c: applies to plain listeners only (TLS "
                  "listeners: http2)",
                  "config.yaml:8:30: listen[6].tls: needs cert and key, or certificates: "
                  "[{cert, key}, ...]",
              }));
}

}  // namespace
}  // namespace waitroom::config

namespace waitroom::config {
namespace {

TEST_F(Config, ReadsSeveralOriginServersWithTheirWeightsBalancingAndHealth) {
    auto r = load_string(R"yaml(
origin:
  servers:
    - {url: "http://10.0.0.1:8080", weight: 3}
    - {url: "https://app-2.internal/base"}
  balance: round_robin
  eject_after: 4
  eject_time: 2s
  max_eject_time: 1m
  health_check: {path: "/up?full=1", interval: 2s, timeout: 500ms, healthy: 3, unhealthy: 2}
)yaml",
                         "config.yaml", ".");
    ASSERT_TRUE(r.ok()) << r.problems.front().to_string();
    const auto& o = r.cfg->origin;
    ASSERT_EQ(o.servers.size(), 2u);
    EXPECT_EQ(o.servers[0].host, "10.0.0.1");
    EXPECT_EQ(o.servers[0].port, 8080);
    EXPECT_EQ(o.servers[0].weight, 3u);
    EXPECT_TRUE(o.servers[1].tls);
    EXPECT_EQ(o.servers[1].port, 443);
    EXPECT_EQ(o.servers[1].base_path, "/base");
    EXPECT_EQ(o.servers[1].weight, 1u);
    EXPECT_EQ(o.url, "http://10.0.0.1:8080");  // the first server, for the logs
    EXPECT_EQ(o.balance, balance_policy::round_robin);
    EXPECT_EQ(o.eject_after, 4u);
    EXPECT_EQ(o.eject_time, 2s);
    EXPECT_EQ(o.max_eject_time, 60s);
    EXPECT_TRUE(o.health_check.enabled);
    EXPECT_EQ(o.health_check.path, "/up?full=1");
    EXPECT_EQ(o.health_check.interval, 2s);
    EXPECT_EQ(o.health_check.timeout, 500ms);
    EXPECT_EQ(o.health_check.healthy, 3u);
    EXPECT_EQ(o.health_check.unhealthy, 2u);
}

TEST_F(Config, AnOriginUrlAloneIsOneServerBalancedByLeastRequestWithoutHealthChecks) {
    auto r = load_string("origin: {url: \"http://127.0.0.1:9000\"}\n", "config.yaml", ".");
    ASSERT_TRUE(r.ok());
    const auto servers = server_list(r.cfg->origin);
    ASSERT_EQ(servers.size(), 1u);
    EXPECT_EQ(servers[0].port, 9000);
    EXPECT_EQ(r.cfg->origin.balance, balance_policy::least_request);
    EXPECT_EQ(r.cfg->origin.eject_after, 5u);
    EXPECT_FALSE(r.cfg->origin.health_check.enabled);
}

TEST_F(Config, RefusesBadOriginServersWithTheirPlaceAndKey) {
    auto r = load_string(R"yaml(
origin:
  url: "http://127.0.0.1:3000"
  servers:
    - {url: "ftp://x"}
    - {url: "http://a:1", weight: 0}
    - {weight: 2}
    - {url: "http://a:1"}
  balance: fastest
  health_check: {path: healthz, interval: 1s, timeout: 2s}
)yaml",
                         "config.yaml", ".");
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(messages(r),
              (std::vector<std::string>{
                  "config.yaml:5:5: origin.servers: set only one of origin.url (one server) and "
                  "origin.servers",
                  "config.yaml:5:13: origin.servers[0].url: must be a URL like "
                  "http://127.0.0.1:3000 or https://shop.internal/base (http or https, no query)",
                  "config.yaml:6:35: origin.servers[1].weight: must be an integer from 1 to 1000",
                  "config.yaml:7:7: origin.servers[2].url: is required",
                  "config.yaml:8:13: origin.servers[3].url: names the same server as an earlier "
                  "item",
                  "config.yaml:9:12: origin.balance: must be one of round_robin, least_request",
                  "config.yaml:10:24: origin.health_check.path: must be a path like /healthz (at "
                  "most 1024 characters: letters, digits and / - . _ ~ % ? = & + : @ ! $ ' ( ) * "
                  ", ;)",
                  "config.yaml:10:56: origin.health_check.timeout: must not be longer than "
                  "interval (1s): a probe ends before the next one starts",
              }));
}

TEST_F(Config, RefusesAnEmptyListOfOriginServers) {
    auto r = load_string("origin: {servers: []}\n", "config.yaml", ".");
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(messages(r), (std::vector<std::string>{
                               "config.yaml:1:19: origin.servers: must list at least one server "
                               "({url: ..., weight: 1})"}));
}

}  // namespace
}  // namespace waitroom::config

// HTTP/2 at the edge, as a whole process: waitroomd on a TLS listener (ALPN h2) in front of the
// in-process HTTP/1.1 test origin. Real clients (curl --http2, nghttp, h2load) take the room's
// paths; a raw client (support/h2_raw_client.hpp) sends what they would not: variant paths and
// authorities at a full room, malformed fields, and every flood and bound a hostile client can
// push against. Each bound is held with the daemon's memory flat and other clients served.

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "daemon_fixture.hpp"
#include "support/h2_raw_client.hpp"

namespace waitroom::test {
namespace {

using namespace std::chrono_literals;
using clock = std::chrono::steady_clock;

constexpr std::uint64_t rss_margin_kib = 8 * 1024;  // growth allowed across an attack
constexpr std::uint32_t reset_burst = 200;          // h2_limits::reset_burst

// The full path of `name` on PATH; "" when it is not installed.
std::string program(const std::string& name) {
    const char* path = std::getenv("PATH");
    std::istringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
    std::string dir;
    while (std::getline(dirs, dir, ':')) {
        const auto candidate = std::filesystem::path(dir) / name;
        if (::access(candidate.c_str(), X_OK) == 0) {
            return candidate.string();
        }
    }
    return {};
}

// One room on every host and path, full after one visitor, with a path and a header bypass;
// it answers JSON clients and takes the origin's revoke command.
constexpr const char* shop_room =
    "  - {name: Shop, total_active_users: 1, new_users_per_minute: 100, session_duration: 5m,\n"
    "     refresh_interval: 20s, queueing_status_code: 202, json_response_enabled: true,\n"
    "     enabled_origin_commands: [revoke],\n"
    "     bypass: [{path_prefix: /static/},\n"
    "              {header: X-Health-Check, value: \"health-secret-0123456789\"}]}\n";

// One room for host shop.example.com on /shop, full after one visitor.
constexpr const char* host_path_room =
    "  - {name: Hosted, host: shop.example.com, path: /shop, total_active_users: 1,\n"
    "     new_users_per_minute: 100, session_duration: 5m}\n";

// A response curl received.
struct curl_reply {
    int exit_code = -1;
    std::string version;  // %{http_version}: "2" for HTTP/2
    unsigned status = 0;
    std::string head;  // the response head as curl dumped it
    std::string body;

    // A field's value (case-insensitive name); "" when absent.
    std::string header(std::string_view name) const {
        std::istringstream in(head);
        std::string line;
        while (std::getline(in, line)) {
            if (!line.empty() && line.back() == '\r') {
                line.pop_back();
            }
            const auto colon = line.find(':');
            if (colon == name.size() &&
                std::equal(name.begin(), name.end(), line.begin(), [](char a, char b) {
                    return std::tolower(static_cast<unsigned char>(a)) ==
                           std::tolower(static_cast<unsigned char>(b));
                })) {
                return line.substr(line.find_first_not_of(' ', colon + 1));
            }
        }
        return {};
    }
    // "_cfwaitingroom=…" from Set-Cookie; "" when none.
    std::string cookie() const {
        const auto c = header("set-cookie");
        return c.rfind("_cfwaitingroom=", 0) == 0 ? c.substr(0, c.find(';')) : std::string{};
    }
};

std::string describe(const h2_reply& r) {
    return "status " + std::to_string(r.status) +
           (r.reset ? " reset " + std::to_string(*r.reset) : std::string{}) + " " +
           r.body.substr(0, 100);
}

class Http2 : public daemon_test {
  protected:
    void SetUp() override {
        const auto openssl = program("openssl");
        ASSERT_NE(openssl, "") << "openssl is needed to make the listener's certificate";
        cert_ = (dir_.path() / "c.pem").string();
        key_ = (dir_.path() / "k.pem").string();
        const auto r =
            run_to_exit(openssl, {"req", "-x509", "-newkey", "ec", "-pkeyopt",
                                  "ec_paramgen_curve:P-256", "-nodes", "-days", "1", "-subj",
                                  "/CN=localhost", "-keyout", key_, "-out", cert_});
        ASSERT_EQ(r.exit_code, 0) << r.err;
    }

    // A daemon on a TLS listener; `limits` are more keys of that section (", key: value…").
    std::string config(const std::string& limits = "", const std::string& rooms = "") {
        std::string c =
            "admin: {listen: \"\"}\n"
            "listen: [{address: \"127.0.0.1:0\", tls: {cert: \"" +
            cert_ + "\", key: \"" + key_ +
            "\"}}]\n"
            "origin: {url: \"" +
            origin_.url() +
            "\", connect_timeout: 2s, timeout: 5s}\n"
            "threads: 1\n"
            "state: {backend: local, sync_interval: 50ms}\n"
            "limits: {header_timeout: 2s, max_header_bytes: 8192, drain_timeout: 10s" +
            limits +
            "}\n"
            "logging: {level: info}\n";
        if (!rooms.empty()) {
            c += "rooms:\n" + rooms;
        }
        return c;
    }

    // GET `path` with curl over HTTP/2 to https://shop.test (connected to the daemon's port).
    curl_reply curl(const std::string& path, const std::vector<std::string>& args = {}) {
        curl_reply out;
        const auto bin = program("curl");
        if (bin.empty()) {
            return out;
        }
        const auto head = (dir_.path() / "curl.head").string();
        const auto body = (dir_.path() / "curl.body").string();
        std::vector<std::string> a = {
            "-sk",          "--http2",
            "--connect-to", "shop.test:443:127.0.0.1:" + std::to_string(port_),
            "-D",           head,
            "-o",           body,
            "-w",           "%{http_version} %{http_code}",
            "--max-time",   "10"};
        a.insert(a.end(), args.begin(), args.end());
        a.push_back("https://shop.test" + path);
        const auto r = run_to_exit(bin, a, 15s);
        out.exit_code = r.exit_code;
        std::istringstream w(r.out);
        w >> out.version >> out.status;
        out.head = read(head);
        out.body = read(body);
        return out;
    }

    static std::string read(const std::string& path) {
        std::ifstream in(path, std::ios::binary);
        return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    }

    // One request on a fresh raw connection: GET `path` with `extra` fields.
    h2_reply get(const std::string& path, const h2_fields& extra = {},
                 const std::string& authority = "shop.test") {
        h2_raw_client c(port_);
        if (!c.connected() || !c.request(1, path, extra, authority)) {
            return {};
        }
        return c.await(1);
    }

    // Another client, on a connection of its own, is served by the origin.
    bool served() {
        const auto r = get("/hello");
        return r.status == 200 && r.body == "hello, world\n";
    }

    std::uint64_t rss_kib() { return proc().rss_kib(); }
    // The daemon's memory grew by less than rss_margin_kib since `before` (an attack's bound).
    void expect_rss_flat(std::uint64_t before) {
        const auto now = rss_kib();
        EXPECT_LT(now - std::min(before, now), rss_margin_kib)
            << "RSS " << before << " KiB before, " << now << " KiB after";
    }

    // The daemon's open file descriptors (sockets among them).
    std::size_t open_fds() {
        const auto dir = std::filesystem::path("/proc") / std::to_string(proc().pid()) / "fd";
        std::error_code ec;
        std::size_t n = 0;
        for (auto it = std::filesystem::directory_iterator(dir, ec);
             !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
            ++n;
        }
        return n;
    }

    std::string cert_;
    std::string key_;
};

#define SKIP_WITHOUT(name)                        \
    if (program(name).empty()) {                  \
        GTEST_SKIP() << name " is not installed"; \
    }

// ---- real clients -------------------------------------------------------------------------

// `h2c: true` on a plain listener: a client with prior knowledge speaks HTTP/2 from its first
// byte, and an HTTP/1.1 client on the same listener is still served HTTP/1.1.
TEST_F(Http2, APlainH2cListenerTakesPriorKnowledgeAndStillServesHttp11) {
    SKIP_WITHOUT("curl");
    std::string c = config();
    const auto from = c.find("\nlisten:") + 1;
    c.replace(from, c.find('\n', from) + 1 - from,
              "listen: [{address: \"127.0.0.1:0\", h2c: true}]\n");
    start(c);
    const auto url = "http://127.0.0.1:" + std::to_string(port_) + "/hello";
    for (const auto& [flag, version] :
         {std::pair{"--http2-prior-knowledge", "2"}, std::pair{"--http1.1", "1.1"}}) {
        const auto r = run_to_exit(
            program("curl"), {"-s", flag, "-w", " %{http_version}", "--max-time", "10", url}, 15s);
        EXPECT_EQ(r.out, std::string("hello, world\n ") + version) << flag;
    }
    EXPECT_EQ(origin_.requests(), 2u);
}

TEST_F(Http2, CurlSpeaksHttp2AndTheOriginSeesTheRequestWithForwardedFields) {
    SKIP_WITHOUT("curl");
    start(config());
    auto r = curl("/hello?x=1");
    ASSERT_EQ(r.exit_code, 0);
    EXPECT_EQ(r.version, "2");
    EXPECT_EQ(r.status, 200u);
    EXPECT_EQ(r.body, "hello, world\n");
    const auto seen = origin_.last_request();
    EXPECT_EQ(seen.method, "GET");
    EXPECT_EQ(seen.target, "/hello?x=1");
    EXPECT_EQ(seen.version, 11u);
    EXPECT_EQ(seen.header("Host"), "shop.test");  // from :authority
    EXPECT_EQ(seen.header("X-Forwarded-Proto"), "https");
    EXPECT_EQ(seen.header("X-Forwarded-For"), "127.0.0.1");
    EXPECT_EQ(seen.header("X-Forwarded-Host"), "shop.test");

    auto post = curl("/echo", {"--data-binary", "a body over DATA frames"});
    EXPECT_EQ(post.version, "2");
    EXPECT_EQ(post.status, 200u);
    EXPECT_EQ(post.body, "a body over DATA frames");
    EXPECT_EQ(origin_.last_request().method, "POST");
    EXPECT_EQ(origin_.last_request().body_bytes, 23u);
}

TEST_F(Http2, NghttpAndH2loadAreServedInFull) {
    SKIP_WITHOUT("nghttp");
    SKIP_WITHOUT("h2load");
    start(config());
    const std::string url = "https://127.0.0.1:" + std::to_string(port_) + "/hello";
    auto n = run_to_exit(program("nghttp"), {"-t", "10", url}, 15s);
    EXPECT_EQ(n.exit_code, 0) << n.err;
    EXPECT_EQ(n.out, "hello, world\n");
    // 200 requests on 4 connections, 10 streams at once on each.
    auto h = run_to_exit(program("h2load"), {"-n", "200", "-c", "4", "-m", "10", url}, 30s);
    EXPECT_EQ(h.exit_code, 0) << h.err;
    EXPECT_NE(h.out.find("200 succeeded, 0 failed, 0 errored"), std::string::npos) << h.out;
    EXPECT_NE(h.out.find("status codes: 200 2xx"), std::string::npos) << h.out;
    EXPECT_NE(h.out.find("Application protocol: h2"), std::string::npos) << h.out;
}

// ---- the room over HTTP/2 -----------------------------------------------------------------

TEST_F(Http2, AnAdmittedVisitorPassesAndAFullRoomQueuesTheNextWithoutTheOrigin) {
    SKIP_WITHOUT("curl");
    start(config("", shop_room));
    auto in = curl("/hello");
    ASSERT_EQ(in.version, "2");
    ASSERT_EQ(in.status, 200u) << in.body;
    EXPECT_EQ(in.body, "hello, world\n");
    const auto cookie = in.cookie();
    ASSERT_NE(cookie, "") << in.head;
    EXPECT_EQ(origin_.requests(), 1u);

    auto q = curl("/hello");
    EXPECT_EQ(q.status, 202u);
    EXPECT_NE(q.body.find("You are in line"), std::string::npos) << q.body.substr(0, 200);
    EXPECT_EQ(q.header("cache-control"), "no-store");
    const auto refresh = q.header("refresh");
    EXPECT_FALSE(refresh.empty());
    EXPECT_EQ(refresh.find_first_not_of("0123456789"), std::string::npos) << refresh;
    EXPECT_EQ(q.header("content-length"), std::to_string(q.body.size()));

    auto j = curl("/hello", {"-H", "accept: application/json"});
    EXPECT_EQ(j.header("content-type"), "application/json");
    auto json = nlohmann::json::parse(j.body, nullptr, false);
    ASSERT_TRUE(json.is_object()) << j.body;
    EXPECT_TRUE(json["cfWaitingRoom"].value("inWaitingRoom", false)) << j.body;

    auto again = curl("/hello", {"-H", "cookie: " + cookie});
    EXPECT_EQ(again.body, "hello, world\n");
    EXPECT_EQ(origin_.requests(), 2u) << "a queued request reached the origin";
}

TEST_F(Http2, ACheckInIsAnsweredByTheGatewayWithNoContent) {
    SKIP_WITHOUT("curl");
    start(config("", shop_room));
    auto in = curl("/hello");
    const auto cookie = in.cookie();
    ASSERT_NE(cookie, "");
    auto c = curl("/hello", {"-H", "cookie: " + cookie, "-H", "waitroom-check-in: 1"});
    EXPECT_EQ(c.version, "2");
    EXPECT_EQ(c.status, 204u) << c.body;
    EXPECT_EQ(c.body, "");
    EXPECT_EQ(c.header("cache-control"), "no-store");
    EXPECT_EQ(origin_.requests(), 1u) << "the check-in reached the origin";
}

TEST_F(Http2, BypassRulesPassAFullRoomAndTheSecretNeverReachesTheOrigin) {
    SKIP_WITHOUT("curl");
    start(config("", shop_room));
    ASSERT_EQ(curl("/hello").status, 200u);
    auto s = curl("/static/app.css");
    EXPECT_EQ(s.status, 404u);  // the origin's answer for an unknown route
    EXPECT_EQ(s.cookie(), "");
    EXPECT_EQ(origin_.last_request().target, "/static/app.css");
    auto h = curl("/hello", {"-H", "x-health-check: health-secret-0123456789"});
    EXPECT_EQ(h.body, "hello, world\n");
    EXPECT_EQ(origin_.last_request().count("X-Health-Check"), 0u);
    EXPECT_EQ(origin_.requests(), 3u);
    auto wrong = curl("/hello", {"-H", "x-health-check: health-secret-wrong"});
    EXPECT_EQ(wrong.status, 202u);
    EXPECT_EQ(origin_.requests(), 3u);
}

TEST_F(Http2, TheOriginsRevokeCommandEndsTheSessionAndIsHidden) {
    SKIP_WITHOUT("curl");
    start(config("", shop_room));
    auto in = curl("/hello");
    const auto old = in.cookie();
    ASSERT_NE(old, "");
    auto r = curl("/headers?Cf-Waiting-Room-Command=revoke", {"-H", "cookie: " + old});
    EXPECT_EQ(r.status, 200u);
    EXPECT_EQ(r.body, "ok\n");
    EXPECT_EQ(r.header("cf-waiting-room-command"), "");
    EXPECT_NE(r.cookie(), "");
    EXPECT_NE(r.cookie(), old);
    // The freed place goes to the next visitor; the revoked cookie admits no more.
    ASSERT_TRUE(poll_until(10s, 50ms, [&] { return curl("/hello").status == 200; }));
    auto replay = curl("/hello", {"-H", "cookie: " + old});
    EXPECT_EQ(replay.status, 202u);
}

TEST_F(Http2, AChallengeRoomAsksJsonClientsForAProofOfWork) {
    SKIP_WITHOUT("curl");
    start(config("",
                 "  - {name: Shop, total_active_users: 1, new_users_per_minute: 1000,\n"
                 "     json_response_enabled: true,\n"
                 "     challenge: {enabled: true, min_difficulty: 10, max_difficulty: 10}}\n"));
    ASSERT_EQ(curl("/hello").status, 200u);
    auto r = curl("/hello", {"-H", "accept: application/json"});
    EXPECT_EQ(r.version, "2");
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    ASSERT_TRUE(j.is_object()) << r.body;
    EXPECT_TRUE(j["cfWaitingRoom"].value("challengeRequired", false)) << r.body;
    // The seed travels beside the page, in a field, so that the page is the same for everyone.
    EXPECT_EQ(r.header("waitroom-challenge-seed").size(), 22u) << r.body;
    EXPECT_EQ(origin_.requests(), 1u);
}

// Browsers over HTTP/2 send each cookie in a field of its own (RFC 9113 §8.2.3): the admission
// cookie in the second field still admits.
TEST_F(Http2, TheAdmissionCookieInTheSecondCookieFieldIsFound) {
    SKIP_WITHOUT("curl");
    SKIP_WITHOUT("nghttp");
    start(config("", shop_room));
    const auto cookie = curl("/hello").cookie();
    ASSERT_NE(cookie, "");
    ASSERT_EQ(curl("/hello").status, 202u);  // full

    auto n = run_to_exit(program("nghttp"),
                         {"-t", "10", "-H", "cookie: theme=dark", "-H", "cookie: " + cookie,
                          "https://127.0.0.1:" + std::to_string(port_) + "/hello"},
                         15s);
    EXPECT_EQ(n.out, "hello, world\n") << n.err;
    EXPECT_EQ(origin_.last_request().count("Cookie"), 1u);

    auto raw = get("/hello", {{"cookie", "a=b"}, {"cookie", cookie}});
    EXPECT_EQ(raw.status, 200u) << describe(raw);
    const auto seen = origin_.last_request();
    EXPECT_EQ(seen.count("Cookie"), 1u);
    EXPECT_NE(seen.header("Cookie").value_or("").find("a=b; "), std::string::npos);
    EXPECT_EQ(origin_.requests(), 3u);
}

// ---- a full room, every form of its path and host ------------------------------------------

// True when the gateway refused a request: a reset stream, a GOAWAY, or a 4xx of its own.
bool refused(const h2_reply& r) {
    return r.reset.has_value() || (r.status >= 400 && r.status < 500) || r.status == 0;
}

bool queued(const h2_reply& r) {
    return r.status == 200 && r.body.find("You are in line") != std::string::npos;
}

TEST_F(Http2, NoFormOfAFullRoomsPathOrAuthorityGetsPast) {
    start(config("", host_path_room));
    auto first = get("/shop/x", {}, "shop.example.com");
    ASSERT_EQ(first.status, 404u) << describe(first);  // the origin's: the room let it in
    ASSERT_EQ(origin_.requests(), 1u);

    struct form {
        std::string path;
        std::string authority;
        h2_fields extra;
    };
    const std::vector<form> forms = {
        {"/shop/x", "shop.example.com", {}},
        {"//shop/x", "shop.example.com", {}},
        {"/./shop/x", "shop.example.com", {}},
        {"/%73hop/x", "shop.example.com", {}},
        {"/x/../shop/x", "shop.example.com", {}},
        {"/shop;a/x", "shop.example.com", {}},
        {"https://shop.example.com/shop/x", "shop.example.com", {}},
        {"https://shop.example.com/shop/x", "other.test", {}},
        {"*", "shop.example.com", {}},
        {"shop/x", "shop.example.com", {}},
        {"/shop/x", "SHOP.Example.COM", {}},
        {"/shop/x", "shop.example.com.", {}},
        {"/shop/x", "shop.example.com:8443", {}},
        {"/shop/x", "Shop.Example.com.:443", {}},
        // A host field that disagrees with :authority: refused, never forwarded.
        {"/shop/x", "other.test", {{"host", "shop.example.com"}}},
        {"/shop/x", "shop.example.com", {{"host", "other.test"}}},
    };
    for (const auto& f : forms) {
        SCOPED_TRACE(f.authority + " " + f.path);
        auto r = get(f.path, f.extra, f.authority);
        EXPECT_TRUE(queued(r) || refused(r)) << describe(r);
        EXPECT_EQ(origin_.requests(), 1u) << "reached the origin";
    }
    // The disagreeing host is refused outright, whichever of the two names the room.
    EXPECT_TRUE(refused(get("/shop/x", {{"host", "other.test"}}, "shop.example.com")));
    EXPECT_TRUE(refused(get("/x", {{"host", "shop.example.com"}}, "other.test")));
}

// Without :authority, two host fields are as ambiguous as two Host lines in HTTP/1.1.
TEST_F(Http2, TwoHostFieldsWithoutAnAuthorityAreRefused) {
    start(config("", host_path_room));
    ASSERT_EQ(get("/shop/x", {}, "shop.example.com").status, 404u);  // the origin's
    for (const auto& hosts : {std::pair{"shop.example.com", "other.test"},
                              std::pair{"other.test", "shop.example.com"}}) {
        h2_raw_client c(port_);
        ASSERT_TRUE(c.connected()) << c.error();
        c.send_headers(1,
                       {{":method", "GET"},
                        {":scheme", "https"},
                        {":path", "/shop/x"},
                        {"host", hosts.first},
                        {"host", hosts.second}},
                       true);
        auto r = c.await(1);
        EXPECT_TRUE(refused(r)) << hosts.first << ", " << hosts.second << ": " << describe(r);
    }
    EXPECT_EQ(origin_.requests(), 1u);
}

// ---- malformed requests -------------------------------------------------------------------

TEST_F(Http2, MalformedRequestsAreRefusedAndNeverReachTheOrigin) {
    start(config());
    const std::vector<h2_fields> bad = {
        {{"connection", "keep-alive"}},
        {{"transfer-encoding", "chunked"}},
        {{"keep-alive", "timeout=5"}},
        {{"upgrade", "h2c"}},
        {{"proxy-connection", "keep-alive"}},
        {{"te", "gzip"}},
        {{"X-Upper", "1"}},
        {{"x-cr", "a\rb"}},
        {{"x-lf", "a\nx-injected: 1"}},
        {{"x-nul", std::string("a\0b", 3)}},
        {{"x-space", " edge"}},
        {{"", "empty name"}},
        {{"x:colon", "1"}},
    };
    for (const auto& fields : bad) {
        SCOPED_TRACE(fields.front().first + ": " + fields.front().second);
        auto r = get("/hello", fields);
        EXPECT_TRUE(refused(r)) << describe(r);
        ASSERT_TRUE(proc().running()) << "waitroomd died:\n" << output();
    }
    // content-length against the DATA sent: fewer bytes, more bytes.
    for (const auto& [declared, sent] : {std::pair{"10", "12345"}, std::pair{"3", "1234567890"}}) {
        SCOPED_TRACE(std::string(declared) + " declared, " + sent + " sent");
        h2_raw_client c(port_);
        ASSERT_TRUE(c.connected()) << c.error();
        const std::string headers =
            h2_raw_client::frame(h2_frame_type::headers, h2_flag::end_headers, 1,
                                 c.encode({{":method", "POST"},
                                           {":scheme", "https"},
                                           {":authority", "shop.test"},
                                           {":path", "/echo"},
                                           {"content-length", declared}}));
        c.send_raw(headers +
                   h2_raw_client::frame(h2_frame_type::data, h2_flag::end_stream, 1, sent));
        auto r = c.await(1);
        EXPECT_TRUE(refused(r)) << describe(r);
        ASSERT_TRUE(proc().running()) << "waitroomd died:\n" << output();
    }
    EXPECT_EQ(origin_.requests(), 0u) << origin_.last_request().target;
    // te: trailers is the one te allowed, and the connection-specific fields only refuse their
    // own request.
    auto ok = get("/hello", {{"te", "trailers"}});
    EXPECT_EQ(ok.status, 200u) << describe(ok);
    EXPECT_TRUE(served());
}

// A body in the same read as its head (one write of HEADERS and DATA) is taken whole.
TEST_F(Http2, ABodySentWithItsHeadersInOneWriteIsRelayed) {
    start(config());
    h2_raw_client c(port_);
    ASSERT_TRUE(c.connected()) << c.error();
    const std::string head = h2_raw_client::frame(h2_frame_type::headers, h2_flag::end_headers, 1,
                                                  c.encode({{":method", "POST"},
                                                            {":scheme", "https"},
                                                            {":authority", "shop.test"},
                                                            {":path", "/echo"},
                                                            {"content-length", "5"}}));
    ASSERT_TRUE(c.send_raw(
        head + h2_raw_client::frame(h2_frame_type::data, h2_flag::end_stream, 1, "12345")));
    auto r = c.await(1);
    EXPECT_EQ(r.status, 200u) << describe(r);
    EXPECT_EQ(r.body, "12345");
    ASSERT_TRUE(proc().running()) << output();
}

// ---- the bounds ---------------------------------------------------------------------------

// A raw HPACK integer (RFC 7541 §5.1) with `prefix` bits, the first byte's high bits `first`.
std::string hpack_int(std::size_t v, int prefix, std::uint8_t first) {
    std::string out;
    const std::size_t max = (1u << prefix) - 1;
    if (v < max) {
        out.push_back(static_cast<char>(first | v));
        return out;
    }
    out.push_back(static_cast<char>(first | max));
    for (v -= max; v >= 128; v >>= 7) {
        out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    }
    out.push_back(static_cast<char>(v));
    return out;
}

// GET / on https for shop.test, by static-table index, nothing added to the dynamic table.
std::string hpack_get_root() {
    return std::string("\x82\x87\x84", 3) + hpack_int(1, 4, 0x00) + hpack_int(9, 7, 0) +
           "shop.test";
}

// `n` GET requests of `path` as one write, on streams 1, 3, 5… counted from the `first`-th.
std::string request_burst(h2_raw_client& c, std::uint32_t n, const std::string& path,
                          std::uint32_t first = 0) {
    std::string burst;
    for (std::uint32_t i = first; i < first + n; ++i) {
        burst += h2_raw_client::frame(h2_frame_type::headers,
                                      h2_flag::end_headers | h2_flag::end_stream, 1 + 2 * i,
                                      c.encode({{":method", "GET"},
                                                {":scheme", "https"},
                                                {":authority", "shop.test"},
                                                {":path", path}}));
    }
    return burst;
}

// Streams past SETTINGS_MAX_CONCURRENT_STREAMS, sent before the client has acknowledged the
// SETTINGS, are refused one by one (REFUSED_STREAM: the client may retry them).
TEST_F(Http2, MoreStreamsThanTheSettingsAllowAreRefusedAndTheOthersFinish) {
    start(config(", http2_max_concurrent_streams: 4"));
    const auto rss = rss_kib();
    h2_raw_client c(port_);
    ASSERT_TRUE(c.connected()) << c.error();
    ASSERT_TRUE(c.send_raw(request_burst(c, 50, "/slow?ms=1500")));
    ASSERT_TRUE(poll_until(5s, [&] { return origin_.requests() == 4; }));
    EXPECT_TRUE(served()) << "another client waits behind the streams in flight";
    int finished = 0, refused_streams = 0;
    for (std::uint32_t i = 0; i < 50; ++i) {
        auto r = c.await(1 + 2 * i);
        finished += r.status == 200 && r.body == "slow\n";
        refused_streams += r.reset == h2_refused_stream;
    }
    EXPECT_EQ(c.server_settings().at(0x3), 4u);  // SETTINGS_MAX_CONCURRENT_STREAMS
    EXPECT_EQ(finished, 4);
    EXPECT_EQ(refused_streams, 46);
    EXPECT_EQ(origin_.requests(), 5u);  // the 4 streams and the other client
    expect_rss_flat(rss);
}

// A client that acknowledged the limit and still passes it breaks the protocol: the
// connection ends (GOAWAY PROTOCOL_ERROR), and the streams it had at the origin are let go.
TEST_F(Http2, AClientPastTheLimitItAcknowledgedLosesTheConnectionAndItsOriginStreams) {
    start(config(", http2_max_concurrent_streams: 4, body_timeout: 30s, response_min_rate: 0"));
    const auto rss = rss_kib();
    // A shut window: the origin is still sending (and notices at once when it is cut off).
    h2_raw_client c(port_, {.initial_window = 0});
    ASSERT_TRUE(c.connected()) << c.error();
    ASSERT_TRUE(c.read_frame(clock::now() + 5s));  // the server's SETTINGS, acknowledged
    ASSERT_EQ(c.server_settings().at(0x3), 4u);
    // The first four streams reach the origin, then the rest pass the limit.
    const std::string path = "/bytes?n=268435456";
    ASSERT_TRUE(c.send_raw(request_burst(c, 4, path)));
    ASSERT_TRUE(poll_until(5s, [&] { return origin_.open_connections() == 4; }));
    c.send_raw(request_burst(c, 46, path, 4));
    EXPECT_EQ(c.await_goaway(5s), h2_protocol_error);
    EXPECT_TRUE(c.await_close(5s));
    EXPECT_EQ(origin_.requests(), 4u);
    // Let go with the connection, not at the body timeout.
    EXPECT_TRUE(poll_until(2s, [&] { return origin_.open_connections() == 0; }))
        << "the origin still holds " << origin_.open_connections() << " connections";
    EXPECT_TRUE(served());
    expect_rss_flat(rss);
}

// One 4 KB field in the dynamic table, then referenced by one byte each, thousands of times per
// block: what it decodes to is counted against max_header_bytes and never kept.
TEST_F(Http2, AnHpackBombIsResetWithoutTheMemoryItDecodesTo) {
    start(config());
    const auto rss = rss_kib();
    h2_raw_client c(port_);
    ASSERT_TRUE(c.connected()) << c.error();
    const std::string value(4000, 'v');
    const std::string entry = hpack_int(0, 6, 0x40) + hpack_int(6, 7, 0) + "x-bomb" +
                              hpack_int(value.size(), 7, 0) + value;
    const std::string refs(12000, '\xbe');  // index 62: the newest dynamic entry
    std::string flood;
    for (std::uint32_t i = 0; i < 20; ++i) {  // ~1 GB decoded in all
        flood +=
            h2_raw_client::frame(h2_frame_type::headers, h2_flag::end_headers | h2_flag::end_stream,
                                 1 + 2 * i, hpack_get_root() + (i == 0 ? entry : "") + refs);
    }
    ASSERT_TRUE(c.send_raw(flood));
    for (std::uint32_t i = 0; i < 20; ++i) {
        auto r = c.await(1 + 2 * i);
        EXPECT_TRUE(r.reset.has_value() || c.goaway()) << i << ": " << describe(r);
        EXPECT_EQ(r.status, 0u);
    }
    EXPECT_EQ(origin_.requests(), 0u);
    EXPECT_TRUE(served());
    expect_rss_flat(rss);
}

TEST_F(Http2, AHeaderListOverMaxHeaderBytesIsResetBeforeTheOrigin) {
    start(config());
    auto one_big = get("/hello", {{"x-big", std::string(9000, 'b')}});
    EXPECT_EQ(one_big.reset, h2_refused_stream) << describe(one_big);
    h2_fields many;
    for (int i = 0; i < 100; ++i) {
        many.emplace_back("x-f" + std::to_string(i), std::string(100, 'a' + i % 26));
    }
    auto many_small = get("/hello", many);
    EXPECT_EQ(many_small.reset, h2_refused_stream) << describe(many_small);
    EXPECT_EQ(origin_.requests(), 0u);
    EXPECT_TRUE(served());
}

TEST_F(Http2, AContinuationFloodEndsTheConnection) {
    start(config());
    const auto rss = rss_kib();
    for (const std::size_t piece : {std::size_t{0}, std::size_t{200}}) {
        SCOPED_TRACE("CONTINUATION frames of " + std::to_string(piece) + " bytes");
        h2_raw_client c(port_);
        ASSERT_TRUE(c.connected()) << c.error();
        // Literal fields, never indexed: each CONTINUATION a field of its own.
        const std::string field = hpack_int(0, 4, 0x10) + hpack_int(5, 7, 0) + "x-pad" +
                                  hpack_int(piece > 10 ? piece - 10 : 0, 7, 0) +
                                  std::string(piece > 10 ? piece - 10 : 0, 'p');
        std::string flood =
            h2_raw_client::frame(h2_frame_type::headers, h2_flag::end_stream, 1, hpack_get_root());
        for (int i = 0; i < 5000; ++i) {
            flood += h2_raw_client::frame(h2_frame_type::continuation, 0, 1,
                                          piece == 0 ? std::string{} : field);
        }
        c.send_raw(flood);  // the server may close before it has all
        const auto code = c.await_goaway(5s);
        ASSERT_TRUE(code.has_value()) << "no GOAWAY";
        EXPECT_TRUE(*code == h2_enhance_your_calm || *code == h2_protocol_error) << *code;
        EXPECT_TRUE(c.await_close(5s));
    }
    EXPECT_EQ(origin_.requests(), 0u);
    EXPECT_TRUE(served());
    expect_rss_flat(rss);
}

TEST_F(Http2, ARapidResetFloodGetsGoawayAndNeverPilesUpAtTheOrigin) {
    start(config());
    const auto rss = rss_kib();
    h2_raw_client c(port_);
    ASSERT_TRUE(c.connected()) << c.error();
    constexpr std::uint32_t sent = 5000;
    std::string flood;
    for (std::uint32_t i = 0; i < sent; ++i) {
        const std::uint32_t id = 1 + 2 * i;
        flood += h2_raw_client::frame(h2_frame_type::headers,
                                      h2_flag::end_headers | h2_flag::end_stream, id,
                                      c.encode({{":method", "GET"},
                                                {":scheme", "https"},
                                                {":authority", "shop.test"},
                                                {":path", "/slow?ms=200"}}));
        flood += h2_raw_client::frame(h2_frame_type::rst_stream, 0, id,
                                      h2_raw_client::rst_payload(h2_cancel));
    }
    c.send_raw(flood);  // the server may close before it has all
    EXPECT_EQ(c.await_goaway(5s), h2_enhance_your_calm);
    EXPECT_TRUE(c.await_close(5s));
    const auto reached = origin_.requests();
    EXPECT_LE(reached, 2 * reset_burst) << "of " << sent << " streams sent";
    EXPECT_TRUE(served());
    expect_rss_flat(rss);
}

// MadeYouReset (CVE-2025-8671): the client sends no RST_STREAM, yet each stream it opens ends in
// a reset, here the gateway's for a WINDOW_UPDATE that overflows the stream's window. Fewer
// WINDOW_UPDATE frames are sent than the control-frame bound allows: only the reset bound stops it.
TEST_F(Http2, StreamsTheClientMakesTheGatewayResetCountAsRapidResets) {
    auto yaml = config();
    const std::string no_admin = "admin: {listen: \"\"}";
    yaml.replace(yaml.find(no_admin), no_admin.size(), "admin: {listen: \"127.0.0.1:0\"}");
    start(yaml);
    const auto admin = announced_admin_port();
    const auto rss = rss_kib();
    h2_raw_client c(port_);
    ASSERT_TRUE(c.connected()) << c.error();
    constexpr std::uint32_t sent = 600;
    const std::string overflow("\x7f\xff\xff\xff", 4);
    std::string flood;
    for (std::uint32_t i = 0; i < sent; ++i) {
        const std::uint32_t id = 1 + 2 * i;
        flood += h2_raw_client::frame(h2_frame_type::headers,
                                      h2_flag::end_headers | h2_flag::end_stream, id,
                                      c.encode({{":method", "GET"},
                                                {":scheme", "https"},
                                                {":authority", "shop.test"},
                                                {":path", "/slow?ms=200"}}));
        flood += h2_raw_client::frame(h2_frame_type::window_update, 0, id, overflow);
    }
    c.send_raw(flood);  // the server may close before it has all
    EXPECT_EQ(c.await_goaway(5s), h2_enhance_your_calm);
    EXPECT_TRUE(c.await_close(5s));
    EXPECT_LE(origin_.requests(), 2 * reset_burst) << "of " << sent << " streams sent";
    const auto metrics = client_connection(admin).get("/metrics").body;
    EXPECT_EQ(metric(metrics, "waitroom_http2_refused_total{what=\"calm\"}"), 1);
    EXPECT_GE(metric(metrics, "waitroom_http2_refused_total{what=\"client_reset\"}"), reset_burst);
    EXPECT_TRUE(served());
    expect_rss_flat(rss);
}

TEST_F(Http2, FloodsOfControlAndEmptyFramesGetGoawayEnhanceYourCalm) {
    start(config());
    const auto rss = rss_kib();
    const auto repeat = [](std::string frame, int n) {
        std::string out;
        for (int i = 0; i < n; ++i) {
            out += frame;
        }
        return out;
    };
    using f = h2_raw_client;
    const std::string priority("\x00\x00\x00\x00\x10", 5);  // no dependency, weight 17
    std::string one = f::rst_payload(1);                    // a WINDOW_UPDATE of 1
    const std::vector<std::pair<std::string, std::string>> floods = {
        {"SETTINGS", repeat(f::frame(h2_frame_type::settings, 0, 0, {}), 5000)},
        {"PING", repeat(f::frame(h2_frame_type::ping, 0, 0, std::string(8, 'p')), 5000)},
        {"PRIORITY", repeat(f::frame(h2_frame_type::priority, 0, 3, priority), 5000)},
        {"WINDOW_UPDATE", repeat(f::frame(h2_frame_type::window_update, 0, 0, one), 5000)},
        {"empty DATA", repeat(f::frame(h2_frame_type::data, 0, 1, {}), 1000)},
    };
    for (const auto& [name, flood] : floods) {
        SCOPED_TRACE(name);
        h2_raw_client c(port_);
        ASSERT_TRUE(c.connected()) << c.error();
        // A stream open for the DATA: a POST whose body never ends.
        c.send_headers(1,
                       {{":method", "POST"},
                        {":scheme", "https"},
                        {":authority", "shop.test"},
                        {":path", "/sink"}},
                       false);
        c.send_raw(flood);  // the server may close before it has all
        EXPECT_EQ(c.await_goaway(5s), h2_enhance_your_calm);
        EXPECT_TRUE(c.await_close(5s));
    }
    EXPECT_TRUE(served());
    expect_rss_flat(rss);
}

// A client whose window stays shut on a large response: the stream is reset within the send
// timeouts, and the origin connection that fed it is closed.
TEST_F(Http2, AClientWithAShutWindowIsResetAndItsOriginConnectionClosed) {
    start(config(", body_timeout: 2s, response_min_rate: 1MiB"));
    const auto rss = rss_kib();
    h2_raw_client c(port_, {.initial_window = 0, .grant_window = false, .timeout = 10s});
    ASSERT_TRUE(c.connected()) << c.error();
    ASSERT_TRUE(c.request(1, "/bytes?n=268435456"));
    ASSERT_TRUE(poll_until(5s, [&] { return origin_.open_connections() == 1; }));
    const auto t0 = clock::now();
    auto r = c.await(1);
    EXPECT_EQ(r.status, 200u);
    EXPECT_EQ(r.reset, h2_cancel) << describe(r);
    EXPECT_LT(clock::now() - t0, 5s);
    EXPECT_TRUE(poll_until(5s, [&] { return origin_.open_connections() == 0; }))
        << "the origin connection is still held";
    EXPECT_TRUE(served());
    expect_rss_flat(rss);
}

// A client that stops reading its socket (wide windows, a tiny receive buffer): its connection
// and the origin connection behind it are let go within the timeouts.
TEST_F(Http2, AClientThatStopsReadingLosesItsStreamAndItsOriginConnection) {
    start(config(", body_timeout: 2s, response_min_rate: 1MiB"));
    const auto rss = rss_kib();
    h2_raw_client c(port_, {.receive_buffer = 4096, .timeout = 10s});
    ASSERT_TRUE(c.connected()) << c.error();
    ASSERT_TRUE(c.request(1, "/bytes?n=268435456"));
    ASSERT_TRUE(poll_until(5s, [&] { return origin_.open_connections() == 1; }));
    EXPECT_TRUE(poll_until(8s, [&] { return origin_.open_connections() == 0; }))
        << "the origin connection is still held";
    EXPECT_TRUE(served());
    auto r = c.await(1);
    EXPECT_TRUE(r.reset.has_value() || c.peer_closed()) << describe(r);
    EXPECT_LT(r.body.size(), 268435456u);
    expect_rss_flat(rss);
}

// A client that never ends its request body keeps its side of the stream open after the 408:
// the gateway closes the stream (RST_STREAM NO_ERROR), so the idle connection is let go.
TEST_F(Http2, AStreamAnsweredBeforeItsBodyEndsIsClosedAndTheIdleConnectionLetGo) {
    start(config(", body_timeout: 1s, keepalive_timeout: 1s"));
    h2_raw_client c(port_);
    ASSERT_TRUE(c.connected()) << c.error();
    ASSERT_TRUE(c.send_headers(1,
                               {{":method", "POST"},
                                {":scheme", "https"},
                                {":authority", "shop.test"},
                                {":path", "/upload"}},
                               false));
    EXPECT_EQ(c.await(1).status, 408u);
    EXPECT_EQ(c.await_goaway(5s), h2_no_error);
    EXPECT_EQ(c.stream(1).reset, h2_no_error);
    EXPECT_TRUE(c.await_close(5s));
    EXPECT_EQ(origin_.requests(), 0u);
}

TEST_F(Http2, AClientThatExpectsContinueGetsItBeforeItSendsTheBody) {
    start(config());
    h2_raw_client c(port_);
    ASSERT_TRUE(c.connected()) << c.error();
    ASSERT_TRUE(c.send_headers(1,
                               {{":method", "POST"},
                                {":scheme", "https"},
                                {":authority", "shop.test"},
                                {":path", "/echo"},
                                {"content-length", "5"},
                                {"expect", "100-continue"}},
                               false));
    const auto deadline = clock::now() + 5s;
    while (c.stream(1).status != 100 && c.read_frame(deadline)) {
    }
    ASSERT_EQ(c.stream(1).status, 100u);
    ASSERT_TRUE(c.send_data(1, "hello", true));
    EXPECT_EQ(c.await(1).status, 200u);
    EXPECT_EQ(origin_.requests(), 1u);
}

TEST_F(Http2, AnIdleConnectionGetsGoawayAtTheKeepaliveTimeout) {
    start(config(", keepalive_timeout: 1s"));
    h2_raw_client c(port_);
    ASSERT_TRUE(c.connected()) << c.error();
    const auto t0 = clock::now();
    EXPECT_EQ(c.await_goaway(5s), h2_no_error);
    EXPECT_GE(clock::now() - t0, 900ms);
    EXPECT_TRUE(c.await_close(5s));
    // A connection with a stream in flight is not idle.
    h2_raw_client busy(port_);
    ASSERT_TRUE(busy.request(1, "/slow?ms=1500"));
    auto r = busy.await(1);
    EXPECT_EQ(r.body, "slow\n") << describe(r);
}

// After the idle GOAWAY the gateway sends its close_notify and lets the socket go within two
// seconds, whether the client then closes (without a close_notify of its own) or stays silent
// with the socket open: neither holds a descriptor or a connection slot.
TEST_F(Http2, AConnectionEndedAtTheKeepaliveTimeoutLeavesNoSocketBehind) {
    start(config(", keepalive_timeout: 1s"));
    ASSERT_TRUE(served());  // the origin pool's connection is counted in the baseline
    ASSERT_TRUE(poll_until(5s, [&] { return open_fds() > 0; }));
    const auto baseline = open_fds();
    // The connection idles to its GOAWAY and close_notify, then the client closes or stays.
    const auto let_go = [&](bool client_closes) {
        auto c = std::make_unique<h2_raw_client>(port_);
        ASSERT_TRUE(c->connected()) << c->error();
        EXPECT_EQ(c->await_goaway(5s), h2_no_error);
        EXPECT_TRUE(c->await_close(5s));
        if (client_closes) {
            c.reset();
        }
        EXPECT_TRUE(poll_until(5s, [&] { return open_fds() <= baseline; }))
            << open_fds() << " descriptors open, " << baseline << " before the client";
    };
    let_go(true);
    let_go(false);
}

// A header block left half sent (HEADERS without END_HEADERS, and no CONTINUATION) holds the
// whole connection: it ends with a GOAWAY within header_timeout (2 s here), not at the far
// keepalive_timeout, and the origin never sees the request. A request whose head is whole may
// take longer than header_timeout.
TEST_F(Http2, AHeaderBlockLeftHalfSentEndsTheConnectionWithinTheHeaderTimeout) {
    start(config(", keepalive_timeout: 60s"));
    h2_raw_client busy(port_);
    ASSERT_TRUE(busy.request(1, "/slow?ms=2500")) << busy.error();
    h2_raw_client c(port_);
    ASSERT_TRUE(c.connected()) << c.error();
    // A first request, answered: the server's SETTINGS are acknowledged before the block opens
    // (nothing but CONTINUATION may follow it).
    ASSERT_TRUE(c.request(1, "/hello"));
    ASSERT_EQ(c.await(1).status, 200u);
    const auto block = c.encode(
        {{":method", "GET"}, {":scheme", "https"}, {":authority", "shop.test"}, {":path", "/"}});
    ASSERT_TRUE(c.send_frame(h2_frame_type::headers, h2_flag::end_stream, 3, block));
    const auto t0 = clock::now();
    EXPECT_EQ(c.await_goaway(10s), h2_protocol_error);
    const auto waited = clock::now() - t0;
    EXPECT_GE(waited, 1800ms);
    EXPECT_LT(waited, 6s);
    EXPECT_TRUE(c.await_close(5s));
    const auto r = busy.await(1);
    EXPECT_EQ(r.body, "slow\n") << describe(r);
    EXPECT_EQ(origin_.requests(), 2u);  // the first request and the slow one
    EXPECT_TRUE(served());
}

TEST_F(Http2, SigtermSendsGoawayAndTheStreamInFlightFinishes) {
    start(config());
    h2_raw_client c(port_);
    ASSERT_TRUE(c.connected()) << c.error();
    ASSERT_TRUE(c.request(1, "/slow?ms=1500"));
    ASSERT_TRUE(poll_until(5s, [&] { return origin_.requests() == 1; }));
    proc().send_signal(SIGTERM);
    EXPECT_EQ(c.await_goaway(5s), h2_no_error);
    EXPECT_GE(c.goaway_last_stream(), 1u);
    auto r = c.await(1);
    EXPECT_EQ(r.status, 200u) << describe(r);
    EXPECT_EQ(r.body, "slow\n");
    EXPECT_FALSE(r.reset.has_value());
    EXPECT_TRUE(c.await_close(5s));
    EXPECT_EQ(proc().wait_exit(10s), 0) << output();
}

}  // namespace
}  // namespace waitroom::test

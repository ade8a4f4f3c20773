// TLS listeners of the whole process: certificates chosen by SNI, renewed by a reload while
// open connections keep theirs, a broken renewal kept out, the lowest version enforced, and
// what `check` says of certificate files.
#include <gtest/gtest.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http.hpp>

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <csignal>
#include <fstream>
#include <string>

#include "daemon_fixture.hpp"
#include "support/test_certificates.hpp"

namespace waitroom::test {
namespace {

namespace asio = boost::asio;
namespace ssl = asio::ssl;
namespace http = boost::beast::http;
using namespace std::chrono_literals;

// One TLS connection to the daemon, each step bounded by a deadline.
class tls_client {
  public:
    // `server_name` "" sends no SNI; `max_version` 0 = OpenSSL's highest.
    tls_client(std::uint16_t port, const std::string& server_name, int max_version = 0)
        : ctx_(ssl::context::tls_client), stream_(ioc_, ctx_) {
        if (max_version != 0) {
            SSL_set_max_proto_version(stream_.native_handle(), max_version);
        }
        if (!server_name.empty()) {
            SSL_set_tlsext_host_name(stream_.native_handle(), server_name.c_str());
        }
        const asio::ip::tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), port);
        ec_ = bounded([&](auto done) { stream_.lowest_layer().async_connect(ep, done); });
        if (!ec_) {
            ec_ = bounded(
                [&](auto done) { stream_.async_handshake(ssl::stream_base::client, done); });
        }
    }

    bool connected() const { return !ec_; }
    std::string error() const { return ec_.message(); }

    // The served certificate's CN and serial number ("" and -1 without one).
    std::string common_name() {
        std::string out;
        if (X509* cert = SSL_get0_peer_certificate(stream_.native_handle())) {
            char buf[256] = {};
            X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, buf, sizeof buf);
            out = buf;
        }
        return out;
    }
    long serial() {
        X509* cert = SSL_get0_peer_certificate(stream_.native_handle());
        return cert != nullptr ? ASN1_INTEGER_get(X509_get0_serialNumber(cert)) : -1;
    }

    // GET `target` on this connection (keep-alive): the status, 0 when no response came.
    unsigned get(const std::string& target) {
        http::request<http::empty_body> req{http::verb::get, target, 11};
        req.set(http::field::host, "localhost");
        if (bounded([&](auto done) { http::async_write(stream_, req, done); })) {
            return 0;
        }
        http::response<http::string_body> res;
        if (bounded([&](auto done) { http::async_read(stream_, buffer_, res, done); })) {
            return 0;
        }
        return res.result_int();
    }

    // POST `target` declaring a body of `length` bytes and sending only `sent` of them: the
    // status of the answer, 0 when none came.
    unsigned post_part(const std::string& target, std::size_t length, std::size_t sent) {
        const std::string raw = "POST " + target + " HTTP/1.1\r\nHost: localhost\r\n" +
                                "Content-Length: " + std::to_string(length) + "\r\n\r\n" +
                                std::string(sent, 'b');
        if (bounded([&](auto done) { asio::async_write(stream_, asio::buffer(raw), done); })) {
            return 0;
        }
        http::response<http::string_body> res;
        if (bounded([&](auto done) { http::async_read(stream_, buffer_, res, done); })) {
            return 0;
        }
        return res.result_int();
    }

  private:
    // Runs the operation `start` begins for at most 10 s; a late one is cancelled.
    template <class Start>
    boost::system::error_code bounded(Start start) {
        boost::system::error_code result = asio::error::timed_out;
        start([&](boost::system::error_code ec, auto&&...) { result = ec; });
        ioc_.restart();
        ioc_.run_for(10s);
        if (!ioc_.stopped()) {
            boost::system::error_code ignored;
            stream_.lowest_layer().close(ignored);
            ioc_.run();
        }
        return result;
    }

    asio::io_context ioc_;
    ssl::context ctx_;
    ssl::stream<asio::ip::tcp::socket> stream_;
    boost::beast::flat_buffer buffer_;
    boost::system::error_code ec_;
};

class Tls : public daemon_test {
  protected:
    // The daemon on one TLS listener with `tls` (a YAML mapping) and an admin listener.
    // `limits`: more keys of the limits section (", key: value…").
    void start_tls(const std::string& tls, const std::string& limits = "") {
        auto yaml = proxy_config(origin_.url(), "admin: {listen: \"127.0.0.1:0\"}\n");
        const std::string drain = "drain_timeout: 10s";
        yaml.replace(yaml.find(drain), drain.size(), drain + limits);
        const std::string plain = "listen: [\"127.0.0.1:0\"]\n";
        yaml.replace(yaml.find(plain), plain.size(),
                     "listen: [{address: \"127.0.0.1:0\", tls: " + tls + "}]\n");
        start(yaml);
    }
    certificate_files write(const std::string& stem, const std::string& name, long serial = 1,
                            std::vector<std::string> extra_names = {}) {
        extra_names.insert(extra_names.begin(), name);
        return write_self_signed(dir_.path(), stem, {name, extra_names, 30 * 24h, serial});
    }
    // Signals a reload and waits for its last line.
    void reload() {
        const auto before = proc().count_output("configuration reloaded");
        proc().send_signal(SIGHUP);
        ASSERT_TRUE(poll_until(10s, [&] {
            return proc().count_output("configuration reloaded") > before;
        })) << output();
    }
    std::string metrics() { return http_get(announced_admin_port(), "/metrics").body; }
};

constexpr const char* two_certificates =
    "{certificates: [{cert: a.pem, key: a.key}, {cert: b.pem, key: b.key}]}";

TEST_F(Tls, EachNameGetsItsOwnCertificateAndNoNameGetsTheFirst) {
    write("a", "a.test");
    write("b", "b.test", 1, {"*.wild.test"});
    start_tls(two_certificates);
    for (const auto& [sni, expected] :
         std::vector<std::pair<std::string, std::string>>{{"a.test", "a.test"},
                                                          {"b.test", "b.test"},
                                                          {"B.Test", "b.test"},
                                                          {"x.wild.test", "b.test"},
                                                          {"x.y.wild.test", "a.test"},
                                                          {"other.test", "a.test"},
                                                          {"", "a.test"}}) {
        tls_client c(port_, sni);
        ASSERT_TRUE(c.connected()) << sni << ": " << c.error();
        EXPECT_EQ(c.common_name(), expected) << "server name '" << sni << "'";
        EXPECT_EQ(c.get("/hello"), 200u) << sni;
    }
}

TEST_F(Tls, AReloadServesRenewedFilesToNewHandshakesWhileAnOpenConnectionGoesOn) {
    write("a", "a.test");
    write("b", "b.test");
    start_tls(two_certificates);
    tls_client before(port_, "b.test");
    ASSERT_TRUE(before.connected()) << before.error();
    ASSERT_EQ(before.get("/hello"), 200u);
    EXPECT_EQ(before.serial(), 1);

    write("b", "b.test", 2);  // renewed in place, as certbot does: same paths
    reload();
    tls_client after(port_, "b.test");
    ASSERT_TRUE(after.connected()) << after.error();
    EXPECT_EQ(after.serial(), 2);
    EXPECT_EQ(after.get("/hello"), 200u);
    EXPECT_EQ(before.get("/hello"), 200u);
    EXPECT_EQ(before.serial(), 1);
}

TEST_F(Tls, ABrokenFileOnReloadKeepsTheOldCertificateAndIsCounted) {
    write("a", "a.test");
    auto b = write("b", "b.test");
    start_tls(two_certificates);
    EXPECT_EQ(metric(metrics(), "waitroom_tls_reload_failures_total"), 0);
    const auto served =
        metric(metrics(), "waitroom_tls_certificate_expiry_seconds{listener=\"127.0.0.1:" +
                              std::to_string(port_) + "\",name=\"b.test\"}");
    const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    EXPECT_NEAR(served, static_cast<double>(now + 30 * 24 * 3600), 120);

    write("b", "b.test", 2);
    std::ofstream(b.key, std::ios::trunc) << "-----BEGIN PRIVATE KEY-----\ngarbage\n";
    reload();
    EXPECT_TRUE(proc().wait_for_output(b.key, 5s)) << output();
    tls_client c(port_, "b.test");
    ASSERT_TRUE(c.connected()) << c.error();
    EXPECT_EQ(c.serial(), 1);
    EXPECT_EQ(c.get("/hello"), 200u);
    EXPECT_EQ(metric(metrics(), "waitroom_tls_reload_failures_total"), 1);
}

TEST_F(Tls, MinimumVersionOneThreeRefusesATls12Client) {
    write("a", "a.test");
    start_tls("{cert: a.pem, key: a.key, min_version: \"1.3\"}");
    tls_client old(port_, "a.test", TLS1_2_VERSION);
    EXPECT_FALSE(old.connected());
    tls_client current(port_, "a.test");
    ASSERT_TRUE(current.connected()) << current.error();
    EXPECT_EQ(current.get("/hello"), 200u);
}

TEST_F(Tls, TheDefaultMinimumVersionServesATls12Client) {
    write("a", "a.test");
    start_tls("{cert: a.pem, key: a.key}");
    tls_client c(port_, "a.test", TLS1_2_VERSION);
    ASSERT_TRUE(c.connected()) << c.error();
    EXPECT_EQ(c.get("/hello"), 200u);
}

// A request body that stalls over TLS is answered as over plain TCP: 408 once body_timeout has
// passed, and the origin's connection is not kept for it.
TEST_F(Tls, ARequestBodyThatStallsIsAnsweredWithRequestTimeout) {
    write("a", "a.test");
    start_tls("{cert: a.pem, key: a.key}", ", body_timeout: 1s");
    tls_client c(port_, "a.test");
    ASSERT_TRUE(c.connected()) << c.error();
    EXPECT_EQ(c.post_part("/echo", 100, 10), 408u);
    tls_client next(port_, "a.test");
    ASSERT_TRUE(next.connected()) << next.error();
    EXPECT_EQ(next.get("/hello"), 200u);
}

std::string check_config_text(const std::string& cert, const std::string& key) {
    return "listen:\n  - address: \"127.0.0.1:0\"\n    tls:\n      certificates:\n"
           "        - {cert: " +
           cert + ", key: " + key +
           "}\n"
           "origin: {url: \"http://127.0.0.1:3000\"}\nadmin: {listen: \"\"}\n";
}

TEST(TlsCheck, AKeyThatDoesNotMatchItsCertificateFailsNamingTheFileAndTheKey) {
    temp_dir dir;
    auto a = write_self_signed(dir.path(), "a");
    auto b = write_self_signed(dir.path(), "b");
    const auto path = dir.write("waitroom.yaml", check_config_text("a.pem", "b.key"));
    auto r = run_to_exit(waitroomd_path(), {"check", "-c", path});
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_NE(r.err.find(path + ":5:30: listen[0].tls.certificates[0].key: " + b.key +
                         ": does not match the certificate in " + a.cert),
              std::string::npos)
        << r.err;
}

TEST(TlsCheck, ACertificateThatExpiresSoonIsAWarningOnly) {
    temp_dir dir;
    write_self_signed(dir.path(), "a", {"soon.test", {"soon.test"}, 5 * 24h});
    const auto path = dir.write("waitroom.yaml", check_config_text("a.pem", "a.key"));
    auto r = run_to_exit(waitroomd_path(), {"check", "-c", path});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, path + ": ok\n");
    EXPECT_NE(r.err.find("listen[0].tls.certificates[0].cert: warning: "), std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("certificate for soon.test expires on"), std::string::npos) << r.err;
}

TEST(TlsCheck, AnUnreadableFileFailsNamingIt) {
    temp_dir dir;
    const auto path = dir.write("waitroom.yaml", check_config_text("none.pem", "none.key"));
    auto r = run_to_exit(waitroomd_path(), {"check", "-c", path});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(
        r.err.find("listen[0].tls.certificates[0].cert: " + (dir.path() / "none.pem").string() +
                   ": cannot open: No such file or directory"),
        std::string::npos)
        << r.err;
}

}  // namespace
}  // namespace waitroom::test

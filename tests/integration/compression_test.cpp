// Compressed answers from memory against the real daemon: the queue page and the JSON answer
// in the form Accept-Encoding asks for (gzip, brotli, identity), each decoding to the very page
// an identity request gets, with Vary and a right Content-Length; a HEAD gets the same head; the
// origin's responses pass as the origin sent them.

#include <nlohmann/json.hpp>

#include <sstream>
#include <string>

#include "daemon_fixture.hpp"
#include "support/decompress.hpp"

namespace waitroom::test {
namespace {

class Compression : public daemon_test {
  protected:
    void SetUp() override {
        daemon_test::SetUp();
        std::ostringstream c;
        c << "listen: [\"127.0.0.1:0\"]\n"
          << "origin: {url: \"" << origin_.url() << "\", connect_timeout: 2s, timeout: 2s}\n"
          << "admin: {listen: \"\"}\n"
          << "threads: 2\nstate: {backend: local, sync_interval: 1s}\n"
          << "rooms:\n  - {name: Shop, total_active_users: 1, new_users_per_minute: 100, "
          << "session_duration: 5m, refresh_interval: 20s, json_response_enabled: true}\n";
        start(c.str());
        ASSERT_NE(port_, 0);
        ASSERT_TRUE(from_origin(holder_.get(port_, "/hello")));  // the room is full from here
        ASSERT_TRUE(is_queue_page(queued_.get(port_, "/hello")));
    }

    // The queued visitor's answer to `method` /hello with these Accept-Encoding lines (none:
    // no field) and, for `json`, Accept: application/json.
    http_response ask(std::initializer_list<std::string_view> accept_encoding, bool json = false,
                      http::verb method = http::verb::get) {
        client_connection c(port_);
        http::request<http::string_body> req{method, "/hello", 11};
        req.set(http::field::host, "shop.test");
        req.set(http::field::cookie, queued_.cookie());
        if (json) {
            req.set(http::field::accept, "application/json");
        }
        for (auto value : accept_encoding) {
            req.insert(http::field::accept_encoding, value);
        }
        return c.request(std::move(req));
    }

    // The answer `coded` decoded per its Content-Encoding.
    static std::string decoded(const http_response& coded) {
        const std::string coding{coded.headers[http::field::content_encoding]};
        if (coding == "gzip") {
            return gunzip(coded.body);
        }
        if (coding == "br") {
            return unbrotli(coded.body);
        }
        return coding.empty() ? coded.body : "<unknown coding " + coding + ">";
    }

    // Asks with `accept_encoding` between two identity answers until both of those are the
    // same page (no sync changed it in between), then checks the coded answer against it.
    void expect_coded_as(std::initializer_list<std::string_view> accept_encoding,
                         std::string_view coding, bool json = false) {
        for (int attempt = 0; attempt < 5; ++attempt) {
            const auto before = ask({}, json);
            const auto coded = ask(accept_encoding, json);
            const auto after = ask({}, json);
            ASSERT_EQ(before.status, 200u) << describe(before);
            if (before.body != after.body) {
                continue;  // the room's state changed meanwhile: the page is not the same one
            }
            EXPECT_EQ(before.headers[http::field::content_encoding], "");
            EXPECT_EQ(before.headers[http::field::vary], "Accept-Encoding");
            EXPECT_EQ(coded.status, 200u);
            EXPECT_EQ(coded.headers[http::field::content_encoding], coding);
            EXPECT_EQ(coded.headers[http::field::vary], "Accept-Encoding");
            EXPECT_EQ(coded.headers[http::field::content_length],
                      std::to_string(coded.body.size()));
            EXPECT_EQ(coded.headers[http::field::content_type],
                      before.headers[http::field::content_type]);
            EXPECT_EQ(decoded(coded), before.body)
                << "Accept-Encoding: " << *accept_encoding.begin();
            if (!coding.empty()) {
                EXPECT_LT(coded.body.size(), before.body.size());
            }
            return;
        }
        ADD_FAILURE() << "the page changed between every pair of identity answers";
    }

    cookie_jar holder_, queued_;
};

TEST_F(Compression, QueuePageComesInTheFormAcceptEncodingAsksForAndDecodesToThePage) {
    expect_coded_as({"gzip"}, "gzip");
    expect_coded_as({"br"}, "br");
    expect_coded_as({"gzip, deflate, br"}, "br");
    expect_coded_as({"br;q=0.5, gzip;q=1"}, "gzip");
    expect_coded_as({"br;q=1, gzip;q=0.5"}, "br");
    expect_coded_as({"gzip;q=0.4", "br;q=0.3"}, "gzip");  // two field lines
    expect_coded_as({"*"}, "br");
    expect_coded_as({"identity;q=0"}, "");  // nothing else acceptable: identity anyway
    expect_coded_as({"deflate, zstd"}, "");
    expect_coded_as({"gzip;q=0, br;q=0"}, "");
    expect_coded_as({""}, "");
}

TEST_F(Compression, TheJsonAnswerIsCompressedToo) {
    expect_coded_as({"gzip"}, "gzip", true);
    expect_coded_as({"br"}, "br", true);
    const auto plain = ask({}, true);
    const auto j = nlohmann::json::parse(plain.body, nullptr, false);
    EXPECT_TRUE(j.is_object() && j.contains("cfWaitingRoom")) << plain.body;
}

TEST_F(Compression, AHeadGetsTheHeadOfTheCodedAnswer) {
    const auto get = ask({"br"});
    const auto head = ask({"br"}, false, http::verb::head);
    EXPECT_EQ(head.status, 200u);
    EXPECT_EQ(head.body, "");
    EXPECT_EQ(head.headers[http::field::content_encoding], "br");
    EXPECT_EQ(head.headers[http::field::vary], "Accept-Encoding");
    EXPECT_EQ(head.headers[http::field::content_length], get.headers[http::field::content_length]);
}

TEST_F(Compression, AHostileAcceptEncodingStillGetsThePage) {
    std::string hostile;
    while (hostile.size() < 6000) {
        hostile += "x;q=0.5,;;,";
    }
    hostile += "gzip";
    expect_coded_as({hostile}, "gzip");
}

TEST_F(Compression, TheOriginsResponsesPassAsTheOriginSentThem) {
    client_connection c(port_);
    for (std::string_view target : {"/bytes?n=50000", "/headers?Vary=Cookie"}) {
        http::request<http::string_body> req{http::verb::get, target, 11};
        req.set(http::field::host, "shop.test");
        req.set(http::field::cookie, holder_.cookie());
        req.set(http::field::accept_encoding, "gzip, br");
        const auto r = c.request(std::move(req));
        ASSERT_EQ(r.status, 200u) << target << ": " << describe(r);
        EXPECT_EQ(r.headers[http::field::content_encoding], "") << target;
        if (target == "/headers?Vary=Cookie") {
            EXPECT_EQ(r.headers[http::field::vary], "Cookie");
            EXPECT_EQ(r.body, "ok\n");
        } else {
            EXPECT_EQ(r.headers[http::field::vary], "");
            EXPECT_EQ(r.body.size(), 50000u);
            EXPECT_EQ(r.body.substr(0, 26), "abcdefghijklmnopqrstuvwxyz");
        }
    }
}

}  // namespace
}  // namespace waitroom::test

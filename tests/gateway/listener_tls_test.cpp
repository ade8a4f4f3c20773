// A TLS listener's certificates: loaded, reloaded (a broken file keeps the set in force), and
// what `check` finds in the files.
#include "waitroom/gateway/listener_tls.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "certificate_set.hpp"
#include "support/test_certificates.hpp"

namespace waitroom::gateway {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class ListenerTls : public ::testing::Test {
  protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() /
               ("waitroom-listener-tls-" + std::to_string(::getpid()) + "-" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
    }
    void TearDown() override { fs::remove_all(dir_); }

    // A listener serving `files`, its settings placed as a loader would place them.
    config::listener listener_of(const test::certificate_files& files) {
        config::listener l;
        l.tls = config::tls_settings{};
        config::tls_certificate c{
            files.cert, files.key, {"listen[0].tls.cert", 3, 20}, {"listen[0].tls.key", 3, 35}};
        l.tls->certificates.push_back(c);
        return l;
    }
    config::config config_of(const config::listener& l) {
        config::config c;
        c.source_path = "waitroom.yaml";
        c.listen = {l};
        return c;
    }

    fs::path dir_;
};

TEST_F(ListenerTls, ServesTheNamesAndExpiryOfItsCertificate) {
    auto files = test::write_self_signed(dir_, "a", {"a.test", {"a.test", "www.a.test"}, 48h});
    listener_tls tls(listener_of(files));
    const auto certs = tls.certificates();
    ASSERT_EQ(certs.size(), 1u);
    EXPECT_EQ(certs[0].name, "a.test");
    EXPECT_EQ(certs[0].cert_file, files.cert);
    const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    EXPECT_NEAR(static_cast<double>(certs[0].not_after), static_cast<double>(now + 48 * 3600), 60);
}

TEST_F(ListenerTls, NamesItsCertificateByCommonNameWhenItHasNoSan) {
    auto files = test::write_self_signed(dir_, "cn", {"only-cn.test", {}, 1h});
    listener_tls tls(listener_of(files));
    EXPECT_EQ(tls.certificates().at(0).name, "only-cn.test");
}

TEST_F(ListenerTls, AReloadReadsFilesRewrittenInPlace) {
    auto files = test::write_self_signed(dir_, "site", {"old.test", {"old.test"}, 1h});
    const auto l = listener_of(files);
    listener_tls tls(l);
    const auto before = tls.current();
    test::write_self_signed(dir_, "site", {"new.test", {"new.test"}, 1h, 2});
    EXPECT_EQ(tls.reload(l), std::nullopt);
    EXPECT_EQ(tls.certificates().at(0).name, "new.test");
    EXPECT_NE(tls.current(), before);
    // The set a connection started with is still whole.
    EXPECT_EQ(before->certificates().at(0).name, "old.test");
}

TEST_F(ListenerTls, AReloadWithABrokenFileKeepsTheCertificatesInForce) {
    auto files = test::write_self_signed(dir_, "site", {"old.test", {"old.test"}, 1h});
    const auto l = listener_of(files);
    listener_tls tls(l);
    std::ofstream(files.key, std::ios::trunc) << "not a key\n";
    const auto error = tls.reload(l);
    ASSERT_TRUE(error);
    EXPECT_NE(error->find("listen[0].tls.key: " + files.key + ": "), std::string::npos) << *error;
    EXPECT_EQ(tls.certificates().at(0).name, "old.test");
}

TEST_F(ListenerTls, StartingWithAMissingFileNamesItAndItsSetting) {
    auto files = test::write_self_signed(dir_, "site");
    fs::remove(files.cert);
    try {
        listener_tls tls(listener_of(files));
        FAIL() << "loaded a missing certificate";
    } catch (const std::runtime_error& e) {
        EXPECT_EQ(std::string(e.what()),
                  "listen[0].tls.cert: " + files.cert + ": cannot open: No such file or directory");
    }
}

TEST_F(ListenerTls, CheckFindsAKeyThatDoesNotMatchItsCertificate) {
    auto a = test::write_self_signed(dir_, "a");
    auto b = test::write_self_signed(dir_, "b");
    const auto found = check_certificates(config_of(listener_of({a.cert, b.key})),
                                          std::chrono::system_clock::now());
    ASSERT_EQ(found.size(), 1u);
    EXPECT_TRUE(found[0].error);
    const auto text = found[0].problem.to_string();
    EXPECT_EQ(text.rfind("waitroom.yaml:3:35: listen[0].tls.key: " + b.key + ": ", 0), 0u) << text;
    EXPECT_NE(text.find(a.cert), std::string::npos) << text;
}

TEST_F(ListenerTls, CheckWarnsOfACertificateThatExpiresWithinTwoWeeks) {
    auto files = test::write_self_signed(dir_, "soon", {"soon.test", {"soon.test"}, 72h});
    const auto found =
        check_certificates(config_of(listener_of(files)), std::chrono::system_clock::now());
    ASSERT_EQ(found.size(), 1u);
    EXPECT_FALSE(found[0].error);
    EXPECT_NE(found[0].problem.message.find("warning: " + files.cert +
                                            ": certificate for soon.test expires on"),
              std::string::npos)
        << found[0].problem.message;
}

TEST_F(ListenerTls, CheckRefusesAnExpiredCertificateAndPassesAFreshOne) {
    auto old = test::write_self_signed(dir_, "old", {"old.test", {"old.test"}, -60s});
    auto fresh = test::write_self_signed(dir_, "fresh", {"fresh.test", {"fresh.test"}, 90 * 24h});
    const auto now = std::chrono::system_clock::now();
    const auto expired = check_certificates(config_of(listener_of(old)), now);
    ASSERT_EQ(expired.size(), 1u);
    EXPECT_TRUE(expired[0].error);
    EXPECT_NE(expired[0].problem.message.find("expired on"), std::string::npos);
    EXPECT_TRUE(check_certificates(config_of(listener_of(fresh)), now).empty());
}

TEST(ListenerAlpn, OffersH2BeforeHttp11UnlessHttp2IsOff) {
    config::listener l;
    l.tls = config::tls_settings{};
    EXPECT_EQ(listener_alpn(l), (std::vector<std::string>{"h2", "http/1.1"}));
    l.http2 = false;
    EXPECT_EQ(listener_alpn(l), (std::vector<std::string>{"http/1.1"}));
}

}  // namespace
}  // namespace waitroom::gateway

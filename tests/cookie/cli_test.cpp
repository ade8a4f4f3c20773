#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

#include "cookie/test_support.hpp"
#include "waitroom/cookie/cli.hpp"
#include "waitroom/cookie/codec.hpp"
#include "waitroom/room/engine.hpp"

namespace waitroom::cookie {
namespace {

using namespace std::chrono_literals;

const util::sys_time now_tp{std::chrono::milliseconds{1'800'000'000'000}};
const std::int64_t now_ms = util::unix_ms(now_tp);

struct cli_fixture {
    test::temp_dir dir;
    config::config cfg;
    std::shared_ptr<const key_ring> ring;

    cli_fixture() {
        std::ofstream(dir.file("k1.key")) << "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n";
        std::filesystem::permissions(dir.file("k1.key"), std::filesystem::perms(0600));
        cfg.cookie.keys = {{"k1", dir.file("k1.key"), ""}};
        cfg.cookie.key_file = dir.file("generated.key");
        config::room shop;
        shop.id = "shop";
        shop.session_duration = 5min;
        cfg.rooms.push_back(shop);
        auto loaded = load_key_ring(cfg.cookie);
        ring = loaded.ring;
    }
};

TEST(CookieCli, KeygenPrintsBase64Of32Bytes) {
    std::ostringstream out;
    EXPECT_EQ(keygen_command(out), 0);
    std::string text = out.str();
    ASSERT_EQ(text.size(), 45u);
    EXPECT_EQ(text.back(), '\n');
    std::array<std::uint8_t, key_size> key{};
    std::string why;
    EXPECT_TRUE(parse_key_base64(text, key, why)) << why;
}

TEST(CookieCli, DecodePrintsEveryFieldAsJson) {
    cli_fixture f;
    ASSERT_TRUE(f.ring);
    payload p;
    p.room = "shop";
    p.bucket = now_ms - 60'000;
    p.accepted_at = now_ms - 30'000;
    p.last_check_in = now_ms - 1'000;
    p.ticket = 18'000'000'000'000'000'001ull;
    p.event_id = 4;
    p.flags = 2;
    std::string value = encode(*f.ring, p).value();

    std::ostringstream out;
    std::ostringstream err;
    ASSERT_EQ(decode_command(f.cfg, "shop", value, out, err, now_tp), 0) << err.str();
    auto j = nlohmann::json::parse(out.str());
    EXPECT_EQ(j["room"], "shop");
    EXPECT_EQ(j["key_id"], "k1");
    EXPECT_EQ(j["version"], 1);
    EXPECT_EQ(j["bucket"], p.bucket);
    EXPECT_EQ(j["accepted_at"], p.accepted_at);
    EXPECT_EQ(j["last_check_in"], p.last_check_in);
    EXPECT_EQ(j["ticket"].get<std::uint64_t>(), p.ticket);
    EXPECT_EQ(j["event_id"], 4);
    EXPECT_EQ(j["flags"], 2);
    EXPECT_EQ(j["admitted"], true);
    EXPECT_EQ(j["expired"], false);
    EXPECT_EQ(j["last_check_in_utc"], "2027-01-15T07:59:59.000Z");
    EXPECT_EQ(j["bucket_utc"], "2027-01-15T07:59:00.000Z");
    EXPECT_TRUE(err.str().empty());
}

TEST(CookieCli, DecodeNamesTheEngineFlagsAndTheFirstEstimate) {
    namespace vf = room::visitor_flags;
    cli_fixture f;
    payload p;
    p.room = "shop";
    p.bucket = now_ms - 20'000;
    p.last_check_in = now_ms - 2'000;
    p.flags = vf::challenged | (17u << vf::difficulty_shift) | (12u << vf::refresh_shift);
    p.estimate_shown_at = now_ms - 15'000;
    p.estimate_seconds = 95;
    std::ostringstream out;
    std::ostringstream err;
    ASSERT_EQ(decode_command(f.cfg, "shop", encode(*f.ring, p).value(), out, err, now_tp), 0)
        << err.str();
    auto j = nlohmann::json::parse(out.str());
    EXPECT_EQ(j["flags"], p.flags);
    EXPECT_EQ(j["flags_decoded"]["challenged"], true);
    EXPECT_EQ(j["flags_decoded"]["challenge_difficulty"], 17);
    EXPECT_EQ(j["flags_decoded"]["refresh_seconds"], 12);
    EXPECT_EQ(j["flags_decoded"]["flagged"], false);
    EXPECT_EQ(j["flags_decoded"]["uncounted"], false);
    EXPECT_EQ(j["estimate_shown_at"], p.estimate_shown_at);
    EXPECT_EQ(j["estimate_shown_at_utc"], "2027-01-15T07:59:45.000Z");
    EXPECT_EQ(j["estimate_seconds"], 95);

    p.flags = vf::flagged | vf::uncounted;
    out.str("");
    ASSERT_EQ(decode_command(f.cfg, "shop", encode(*f.ring, p).value(), out, err, now_tp), 0);
    j = nlohmann::json::parse(out.str());
    EXPECT_EQ(j["flags_decoded"]["flagged"], true);
    EXPECT_EQ(j["flags_decoded"]["uncounted"], true);
    EXPECT_EQ(j["flags_decoded"]["challenged"], false);
    EXPECT_FALSE(j["flags_decoded"].contains("challenge_difficulty"));
}

TEST(CookieCli, DecodeReportsExpiryButStillPrintsTheFields) {
    cli_fixture f;
    payload p;
    p.room = "shop";
    p.last_check_in = now_ms - 301'000;  // session_duration is 5 min
    std::string value = encode(*f.ring, p).value();
    std::ostringstream out;
    std::ostringstream err;
    ASSERT_EQ(decode_command(f.cfg, "shop", "  " + value + "\n", out, err, now_tp), 0) << err.str();
    auto j = nlohmann::json::parse(out.str());
    EXPECT_EQ(j["expired"], true);
    EXPECT_EQ(j["admitted"], false);
    EXPECT_EQ(j["accepted_at_utc"], "");
}

TEST(CookieCli, DecodeFailsWithTheErrorForAForgedCookie) {
    cli_fixture f;
    payload p;
    p.room = "shop";
    p.last_check_in = now_ms;
    std::string value = encode(*f.ring, p).value();
    value[value.size() - 5] = value[value.size() - 5] == 'A' ? 'B' : 'A';
    std::ostringstream out;
    std::ostringstream err;
    EXPECT_EQ(decode_command(f.cfg, "shop", value, out, err, now_tp), 1);
    EXPECT_TRUE(out.str().empty());
    EXPECT_NE(err.str().find("bad_auth"), std::string::npos) << err.str();
    EXPECT_EQ(err.str().find(value), std::string::npos) << "the value itself is not echoed";
}

TEST(CookieCli, DecodeFailsForAnotherRoomAndAnUnknownRoom) {
    cli_fixture f;
    config::room other;
    other.id = "other";
    f.cfg.rooms.push_back(other);
    payload p;
    p.room = "shop";
    std::string value = encode(*f.ring, p).value();
    std::ostringstream out;
    std::ostringstream err;
    EXPECT_EQ(decode_command(f.cfg, "other", value, out, err, now_tp), 1);
    EXPECT_NE(err.str().find("wrong_room"), std::string::npos) << err.str();
    err.str("");
    EXPECT_EQ(decode_command(f.cfg, "nosuch", value, out, err, now_tp), 1);
    EXPECT_NE(err.str().find("no room with id 'nosuch'"), std::string::npos) << err.str();
}

TEST(CookieCli, DecodeNeverCreatesTheKeyFile) {
    test::temp_dir dir;
    config::config cfg;
    cfg.cookie.key_file = dir.file("waitroom.key");
    config::room shop;
    shop.id = "shop";
    cfg.rooms.push_back(shop);
    std::ostringstream out;
    std::ostringstream err;
    EXPECT_EQ(decode_command(cfg, "shop", "k1.AAAA", out, err), 1);
    EXPECT_NE(err.str().find("does not exist"), std::string::npos) << err.str();
    EXPECT_FALSE(std::filesystem::exists(cfg.cookie.key_file));
}

}  // namespace
}  // namespace waitroom::cookie

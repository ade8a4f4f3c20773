#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>

#include "cookie/test_support.hpp"
#include "waitroom/cookie/codec.hpp"
#include "waitroom/cookie/key_ring.hpp"

namespace waitroom::cookie {
namespace {

using namespace std::chrono_literals;
using test::temp_dir;

// base64 of 32 bytes 0x00..0x1f
constexpr const char* key_a = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
// base64 of 32 bytes 0xff
constexpr const char* key_b = "//////////////////////////////////////////8=";

// Writes a key file as an operator should: readable by its owner only.
void write_file(const std::string& path, const std::string& text, mode_t mode = 0600) {
    std::ofstream(path) << text;
    ::chmod(path.c_str(), mode);
}

std::string read_file(const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

config::cookie_settings with_key_file(const std::string& path) {
    config::cookie_settings s;
    s.key_file = path;
    return s;
}

TEST(KeyRing, CreatesKeyFileWithMode0600AndReusesIt) {
    temp_dir dir;
    const std::string path = dir.file("waitroom.key");
    auto first = load_key_ring(with_key_file(path));
    ASSERT_TRUE(first.ok()) << first.error;
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600);
    const std::string text = read_file(path);
    EXPECT_EQ(text.size(), 45u) << "44 base64 characters and a newline";

    auto second = load_key_ring(with_key_file(path));
    ASSERT_TRUE(second.ok()) << second.error;
    EXPECT_EQ(read_file(path), text) << "an existing key file must never be rewritten";
    EXPECT_EQ(first.ring->encrypting_key().secret, second.ring->encrypting_key().secret);
    EXPECT_EQ(second.ring->encrypting_key().id, generated_key_id);
    // Nothing else (no temporary file) is left beside it.
    EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 1);
}

TEST(KeyRing, GeneratedKeyFileKeepsSessionsAcrossRestart) {
    temp_dir dir;
    const std::string path = dir.file("waitroom.key");
    auto before = load_key_ring(with_key_file(path));
    ASSERT_TRUE(before.ok()) << before.error;
    payload p;
    p.room = "shop";
    p.last_check_in = 1'800'000'000'000;
    auto value = encode(*before.ring, p);
    ASSERT_TRUE(value.ok());
    before.ring.reset();

    auto after = load_key_ring(with_key_file(path));
    ASSERT_TRUE(after.ok()) << after.error;
    auto r = open(*after.ring, value.value(), "shop");
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ(*r, p);
}

TEST(KeyRing, DoesNotCreateKeyFileWhenAskedNotTo) {
    temp_dir dir;
    const std::string path = dir.file("waitroom.key");
    auto r = load_key_ring(with_key_file(path), key_ring_options{.create_key_file = false});
    EXPECT_FALSE(r.ok());
    EXPECT_NE(r.error.find("does not exist"), std::string::npos) << r.error;
    EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(KeyRing, ReportsKeyFileInMissingFolder) {
    temp_dir dir;
    auto r = load_key_ring(with_key_file(dir.file("no/such/dir/waitroom.key")));
    EXPECT_FALSE(r.ok());
    EXPECT_NE(r.error.find("cookie.key_file"), std::string::npos) << r.error;
    EXPECT_NE(r.error.find("No such file"), std::string::npos) << r.error;
}

TEST(KeyRing, ReportsEmptyKeyFileSetting) {
    auto r = load_key_ring(config::cookie_settings{});
    EXPECT_FALSE(r.ok());
    EXPECT_NE(r.error.find("cookie.key_file"), std::string::npos) << r.error;
}

TEST(KeyRing, ReportsCorruptGeneratedKeyFile) {
    temp_dir dir;
    const std::string path = dir.file("waitroom.key");
    write_file(path, "c2hvcnQ=\n");
    auto r = load_key_ring(with_key_file(path));
    EXPECT_FALSE(r.ok());
    EXPECT_NE(r.error.find("exactly 32 bytes, got 5"), std::string::npos) << r.error;
    EXPECT_EQ(read_file(path), "c2hvcnQ=\n") << "a bad key file must not be replaced";
}

TEST(KeyRing, LoadsConfiguredKeysFromFileAndEnvironmentInOrder) {
    temp_dir dir;
    write_file(dir.file("a.key"), std::string(key_a) + "\n");
    ::setenv("WAITROOM_TEST_KEY_B", key_b, 1);
    config::cookie_settings s;
    s.keys = {{"new", "", "WAITROOM_TEST_KEY_B"}, {"old", dir.file("a.key"), ""}};
    s.key_file = dir.file("unused.key");
    auto r = load_key_ring(s);
    ::unsetenv("WAITROOM_TEST_KEY_B");
    ASSERT_TRUE(r.ok()) << r.error;
    ASSERT_EQ(r.ring->keys().size(), 2u);
    EXPECT_EQ(r.ring->encrypting_key().id, "new");
    EXPECT_EQ(r.ring->keys()[0].secret[0], 0xFF);
    EXPECT_EQ(r.ring->keys()[1].id, "old");
    EXPECT_EQ(r.ring->keys()[1].secret[31], 0x1F);
    EXPECT_EQ(r.ring->find("old"), 1);
    EXPECT_EQ(r.ring->find("nope"), -1);
    EXPECT_FALSE(std::filesystem::exists(dir.file("unused.key")))
        << "with configured keys no key file is generated";
}

TEST(KeyRing, ReportsMissingSecretFile) {
    temp_dir dir;
    config::cookie_settings s;
    s.keys = {{"k1", dir.file("missing.key"), ""}};
    auto r = load_key_ring(s);
    EXPECT_FALSE(r.ok());
    EXPECT_NE(r.error.find("cookie.keys[0].secret_file"), std::string::npos) << r.error;
    EXPECT_NE(r.error.find("missing.key"), std::string::npos) << r.error;
}

TEST(KeyRing, ReportsWrongKeyLengthWithoutEchoingTheKey) {
    temp_dir dir;
    const std::string short_key = "c2VjcmV0LXNlY3JldC1zZWNyZXQ=";  // 20 bytes
    write_file(dir.file("k.key"), short_key);
    config::cookie_settings s;
    s.keys = {{"k1", dir.file("k.key"), ""}};
    auto r = load_key_ring(s);
    EXPECT_FALSE(r.ok());
    EXPECT_NE(r.error.find("exactly 32 bytes, got 20"), std::string::npos) << r.error;
    EXPECT_EQ(r.error.find(short_key), std::string::npos) << "key material must not leak";
}

TEST(KeyRing, ReportsBadBase64) {
    ::setenv("WAITROOM_TEST_KEY_BAD", "not base64 at all!!", 1);
    config::cookie_settings s;
    s.keys = {{"k1", "", "WAITROOM_TEST_KEY_BAD"}};
    auto r = load_key_ring(s);
    ::unsetenv("WAITROOM_TEST_KEY_BAD");
    EXPECT_FALSE(r.ok());
    EXPECT_NE(r.error.find("cookie.keys[0].secret_env"), std::string::npos) << r.error;
    EXPECT_NE(r.error.find("not valid base64"), std::string::npos) << r.error;
    EXPECT_EQ(r.error.find("not base64 at all"), std::string::npos) << "key material leaked";
}

TEST(KeyRing, ReportsUnsetEnvironmentVariable) {
    ::unsetenv("WAITROOM_TEST_KEY_UNSET");
    config::cookie_settings s;
    s.keys = {{"k1", "", "WAITROOM_TEST_KEY_UNSET"}};
    auto r = load_key_ring(s);
    EXPECT_FALSE(r.ok());
    EXPECT_NE(r.error.find("WAITROOM_TEST_KEY_UNSET is not set"), std::string::npos) << r.error;
}

TEST(KeyRing, ReportsBadIdsAndSources) {
    ::setenv("WAITROOM_TEST_KEY_A", key_a, 1);
    struct bad_case {
        std::vector<config::cookie_key> keys;
        std::string expected;
    };
    std::vector<bad_case> cases = {
        {{{"", "", "WAITROOM_TEST_KEY_A"}}, "cookie.keys[0].id"},
        {{{"has.dot", "", "WAITROOM_TEST_KEY_A"}}, "cookie.keys[0].id"},
        {{{"ninechars", "", "WAITROOM_TEST_KEY_A"}}, "cookie.keys[0].id"},
        {{{"k1", "", "WAITROOM_TEST_KEY_A"}, {"k1", "", "WAITROOM_TEST_KEY_A"}},
         "cookie.keys[1].id: 'k1' is used by an earlier key"},
        {{{"k1", "", ""}}, "exactly one of secret_file and secret_env"},
        {{{"k1", "/x", "WAITROOM_TEST_KEY_A"}}, "exactly one of secret_file and secret_env"},
    };
    for (const auto& c : cases) {
        config::cookie_settings s;
        s.keys = c.keys;
        auto r = load_key_ring(s);
        EXPECT_FALSE(r.ok());
        EXPECT_NE(r.error.find(c.expected), std::string::npos) << r.error;
    }
    ::unsetenv("WAITROOM_TEST_KEY_A");
}

TEST(KeyRing, ConstructorRefusesEmptyOrInvalidKeys) {
    EXPECT_THROW(key_ring(std::vector<key>{}), std::invalid_argument);
    EXPECT_THROW(key_ring({test::make_key("a.b", 1)}), std::invalid_argument);
    EXPECT_THROW(key_ring({test::make_key("a", 1), test::make_key("a", 2)}), std::invalid_argument);
}

TEST(KeyRing, ParsesStandardAndUrlAlphabetsWithOrWithoutPadding) {
    std::array<std::uint8_t, key_size> out{};
    std::string why;
    EXPECT_TRUE(parse_key_base64(std::string("  ") + key_b + "\r\n", out, why)) << why;
    EXPECT_EQ(out[0], 0xFF);
    EXPECT_TRUE(parse_key_base64("__________________________________________8", out, why)) << why;
    EXPECT_EQ(out[31], 0xFF);
    EXPECT_TRUE(parse_key_base64("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8", out, why)) << why;
    EXPECT_EQ(out[31], 0x1F);
    EXPECT_FALSE(parse_key_base64("", out, why));
    EXPECT_FALSE(parse_key_base64("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8==", out, why));
    EXPECT_FALSE(parse_key_base64(std::string(5000, 'A'), out, why));
}

TEST(KeyRing, GeneratesDistinctKeysOf32Bytes) {
    std::set<std::string> seen;
    for (int i = 0; i < 20; ++i) {
        std::string k = generate_key_base64();
        EXPECT_EQ(k.size(), 44u);
        std::array<std::uint8_t, key_size> out{};
        std::string why;
        EXPECT_TRUE(parse_key_base64(k, out, why)) << why;
        seen.insert(k);
    }
    EXPECT_EQ(seen.size(), 20u);
}

TEST(KeyRing, RefusesASecretFileOpenToItsGroupOrOthers) {
    temp_dir dir;
    for (mode_t mode : {0640, 0604, 0620, 0602, 0644}) {
        const std::string path = dir.file("k.key");
        write_file(path, std::string(key_a) + "\n", mode);
        config::cookie_settings s;
        s.keys = {{"k1", path, ""}};
        auto r = load_key_ring(s);
        EXPECT_FALSE(r.ok()) << std::oct << mode;
        char expected[8];
        std::snprintf(expected, sizeof expected, "%04o", static_cast<unsigned>(mode));
        EXPECT_NE(r.error.find("cookie.keys[0].secret_file: " + path + " has mode " + expected),
                  std::string::npos)
            << r.error;
        EXPECT_NE(r.error.find("chmod 600"), std::string::npos) << r.error;
        EXPECT_EQ(r.error.find(key_a), std::string::npos) << "key material must not leak";
    }
    for (mode_t mode : {0600, 0400}) {
        const std::string path = dir.file("ok.key");
        write_file(path, std::string(key_a) + "\n", mode);
        config::cookie_settings s;
        s.keys = {{"k1", path, ""}};
        EXPECT_TRUE(load_key_ring(s).ok()) << std::oct << mode;
        ::unlink(path.c_str());
    }
}

TEST(KeyRing, RefusesAGeneratedKeyFileSomeoneMadeReadableToOthers) {
    temp_dir dir;
    const std::string path = dir.file("waitroom.key");
    ASSERT_TRUE(load_key_ring(with_key_file(path)).ok());
    ::chmod(path.c_str(), 0644);
    auto r = load_key_ring(with_key_file(path));
    EXPECT_FALSE(r.ok());
    EXPECT_NE(r.error.find("cookie.key_file: " + path + " has mode 0644"), std::string::npos)
        << r.error;
}

}  // namespace
}  // namespace waitroom::cookie

// The waitroomd command line: check, keygen, --help, --version and usage errors.

#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <string_view>

#include "support/process.hpp"

namespace waitroom::test {
namespace {

using namespace std::chrono_literals;

constexpr const char* good_config = R"(listen: ["127.0.0.1:8080"]
origin: {url: "http://127.0.0.1:3000"}
rooms:
  - name: Shop checkout
    host: shop.example.com
    total_active_users: 200
    new_users_per_minute: 200
    session_duration: 5m
)";

// Line 2: an unknown key; line 7: a bad value.
constexpr const char* bad_config = R"(listen: ["127.0.0.1:8080"]
listn: ["127.0.0.1:8081"]
origin: {url: "http://127.0.0.1:3000"}
rooms:
  - name: Shop checkout
    host: shop.example.com
    total_active_users: -5
    new_users_per_minute: 200
    session_duration: 5m
)";

// Checks `waitroomd --version` output: "waitroomd 0.1.0 (commit 0123456789ab)\n", the commit
// "-dirty" when tracked files differed from it at build time, "unknown" without git, or what
// -DWAITROOM_GIT_COMMIT set. Where git answers now and no override was given, the commit must be
// the checkout's (the dirty mark may have changed since).
void expect_version_line(const std::string& out) {
    static const std::regex line(std::string("waitroomd ") + WAITROOM_EXPECTED_VERSION +
                                 " \\(commit ([0-9A-Za-z._+-]+?)(-dirty)?\\)\n");
    std::smatch m;
    ASSERT_TRUE(std::regex_match(out, m, line)) << out;
    const auto head = run_to_exit("/usr/bin/env", {"git", "--no-optional-locks", "-C",
                                                   WAITROOM_SOURCE_DIR, "rev-parse", "--short=12",
                                                   "HEAD"});
    if (std::string_view(WAITROOM_GIT_COMMIT_OVERRIDE).empty() && head.exit_code == 0 &&
        head.out.size() == 13) {
        EXPECT_EQ(m[1].str(), head.out.substr(0, 12)) << out;
    }
}

TEST(Cli, CheckPrintsOkAndExitsZeroForAGoodFile) {
    temp_dir dir;
    auto path = dir.write("good.yaml", good_config);
    auto r = run_to_exit(waitroomd_path(), {"check", "-c", path});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, path + ": ok\n");
}

TEST(Cli, CheckPrintsEveryProblemWithItsPlaceAndExitsOne) {
    temp_dir dir;
    auto path = dir.write("bad.yaml", bad_config);
    auto r = run_to_exit(waitroomd_path(), {"check", "-c", path});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find(path + ":2:1: listn: "), std::string::npos) << r.err;
    // The column may point at the key or at its value; the line and key path may not vary.
    EXPECT_NE(r.err.find(path + ":7:"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(": rooms[0].total_active_users: "), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
}

TEST(Cli, CheckOfAMissingFileExitsOneNamingTheFile) {
    temp_dir dir;
    auto path = (dir.path() / "absent.yaml").string();
    auto r = run_to_exit(waitroomd_path(), {"check", "-c", path});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find(path), std::string::npos) << r.err;
}

TEST(Cli, RunRefusesToStartWithABrokenFile) {
    temp_dir dir;
    auto path = dir.write("bad.yaml", bad_config);
    auto r = run_to_exit(waitroomd_path(), {"-c", path}, 15s);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("rooms[0].total_active_users"), std::string::npos) << r.err;
}

TEST(Cli, VersionPrintsTheProjectVersionAndTheCommit) {
    auto r = run_to_exit(waitroomd_path(), {"--version"});
    EXPECT_EQ(r.exit_code, 0);
    expect_version_line(r.out);
}

TEST(Cli, HelpAndVersionWorkAfterASubcommand) {
    for (const char* cmd : {"check", "keygen", "cookie"}) {
        auto help = run_to_exit(waitroomd_path(), {cmd, "--help"});
        EXPECT_EQ(help.exit_code, 0) << cmd;
        EXPECT_NE(help.out.find("Usage:"), std::string::npos) << cmd;
        auto version = run_to_exit(waitroomd_path(), {cmd, "--version"});
        EXPECT_EQ(version.exit_code, 0) << cmd;
        SCOPED_TRACE(cmd);
        expect_version_line(version.out);
    }
}

TEST(Cli, HelpListsEveryCommand) {
    auto r = run_to_exit(waitroomd_path(), {"--help"});
    EXPECT_EQ(r.exit_code, 0);
    for (const char* text :
         {"check -c FILE", "keygen", "cookie -c FILE --room ID VALUE", "--version"}) {
        EXPECT_NE(r.out.find(text), std::string::npos) << text;
    }
}

TEST(Cli, UnknownOptionIsAUsageErrorWithExitTwo) {
    auto r = run_to_exit(waitroomd_path(), {"--frobnicate"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("unknown option '--frobnicate'"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("--help"), std::string::npos) << r.err;
}

TEST(Cli, UnknownCommandIsAUsageErrorWithExitTwo) {
    auto r = run_to_exit(waitroomd_path(), {"frobnicate"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("unknown command 'frobnicate'"), std::string::npos) << r.err;
}

TEST(Cli, CheckWithoutAFileIsAUsageError) {
    auto r = run_to_exit(waitroomd_path(), {"check"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("check needs -c FILE"), std::string::npos) << r.err;
}

TEST(Cli, CookieWithoutARoomIsAUsageError) {
    auto r = run_to_exit(waitroomd_path(), {"cookie", "-c", "x.yaml", "VALUE"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("--room"), std::string::npos) << r.err;
}

TEST(Cli, KeygenPrintsA256BitKeyInBase64) {
    auto a = run_to_exit(waitroomd_path(), {"keygen"});
    auto b = run_to_exit(waitroomd_path(), {"keygen"});
    EXPECT_EQ(a.exit_code, 0) << a.err;
    ASSERT_EQ(a.out.size(), 45u) << a.out;  // 44 base64 characters + newline
    EXPECT_EQ(a.out.back(), '\n');
    EXPECT_NE(a.out, b.out);
}

}  // namespace
}  // namespace waitroom::test

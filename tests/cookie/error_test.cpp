#include <gtest/gtest.h>

#include <set>
#include <string>

#include "waitroom/cookie/error.hpp"

namespace waitroom::cookie {
namespace {

TEST(CookieErrors, EveryCodeHasItsOwnMessage) {
    const errc all[] = {errc::malformed,  errc::bad_auth, errc::unknown_key,
                        errc::wrong_room, errc::expired,  errc::crypto_failure};
    std::set<std::string> messages;
    for (errc e : all) {
        std::error_code ec = e;
        EXPECT_EQ(&ec.category(), &error_category());
        EXPECT_TRUE(ec) << "a cookie error must not compare as success";
        std::string m = ec.message();
        EXPECT_FALSE(m.empty());
        EXPECT_EQ(m.find("unknown cookie error"), std::string::npos) << m;
        messages.insert(m);
    }
    EXPECT_EQ(messages.size(), std::size(all));
}

TEST(CookieErrors, CategoryHasAStableNameAndComparesWithTheEnum) {
    EXPECT_STREQ(error_category().name(), "waitroom.cookie");
    std::error_code ec = make_error_code(errc::expired);
    EXPECT_EQ(ec, errc::expired);
    EXPECT_NE(ec, errc::bad_auth);
    EXPECT_NE(ec, std::make_error_code(std::errc::timed_out));
    EXPECT_NE(error_category().message(999).find("999"), std::string::npos);
}

TEST(CookieErrors, ResultCarriesValueOrError) {
    result<int> good{42};
    EXPECT_TRUE(good.ok());
    EXPECT_EQ(*good, 42);
    result<int> bad{errc::malformed};
    EXPECT_FALSE(bad);
    EXPECT_EQ(bad.error(), errc::malformed);
}

}  // namespace
}  // namespace waitroom::cookie

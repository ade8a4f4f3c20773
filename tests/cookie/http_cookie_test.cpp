#include <gtest/gtest.h>

#include <string>

#include "waitroom/cookie/http_cookie.hpp"

namespace waitroom::cookie {
namespace {

using config::same_site;
using config::secure_mode;
using namespace std::chrono_literals;

TEST(CookieName, IsCloudflaresNameWithOptionalSuffix) {
    EXPECT_EQ(cookie_name(""), "_cfwaitingroom");
    EXPECT_EQ(cookie_name("shop"), "_cfwaitingroom_shop");
}

// The seed's cookie can never take the place of an admission cookie, whatever the suffixes.
TEST(CookieName, TheChallengeSeedsCookieNeverSharesAnAdmissionCookiesName) {
    EXPECT_EQ(challenge_cookie_name(""), "waitroom_seed");
    EXPECT_EQ(challenge_cookie_name("shop"), "waitroom_seed_shop");
    for (std::string suffix : {"", "seed", "shop", "waitroom_seed", "_seed"}) {
        for (std::string other : {"", "seed", "shop", "waitroom_seed", "_seed"}) {
            EXPECT_NE(challenge_cookie_name(suffix), cookie_name(other)) << suffix << " " << other;
        }
    }
}

struct attribute_case {
    same_site samesite;
    secure_mode secure;
    bool tls;
    const char* expected_tail;
};

TEST(SetCookie, FollowsTheAttributeMatrix) {
    const attribute_case cases[] = {
        {same_site::auto_, secure_mode::auto_, false, "SameSite=Lax"},
        {same_site::auto_, secure_mode::auto_, true, "SameSite=None; Secure"},
        {same_site::auto_, secure_mode::always, false, "SameSite=None; Secure"},
        {same_site::auto_, secure_mode::always, true, "SameSite=None; Secure"},
        {same_site::auto_, secure_mode::never, false, "SameSite=Lax"},
        {same_site::auto_, secure_mode::never, true, "SameSite=Lax"},
        {same_site::lax, secure_mode::auto_, false, "SameSite=Lax"},
        {same_site::lax, secure_mode::auto_, true, "SameSite=Lax; Secure"},
        {same_site::lax, secure_mode::always, false, "SameSite=Lax; Secure"},
        {same_site::lax, secure_mode::never, true, "SameSite=Lax"},
        {same_site::strict, secure_mode::auto_, false, "SameSite=Strict"},
        {same_site::strict, secure_mode::auto_, true, "SameSite=Strict; Secure"},
        {same_site::strict, secure_mode::always, false, "SameSite=Strict; Secure"},
        {same_site::strict, secure_mode::never, true, "SameSite=Strict"},
        {same_site::none, secure_mode::auto_, true, "SameSite=None; Secure"},
        {same_site::none, secure_mode::always, false, "SameSite=None; Secure"},
        {same_site::none, secure_mode::never, false, "SameSite=None"},
    };
    for (const auto& c : cases) {
        config::cookie_attributes attrs{c.samesite, c.secure};
        std::string v = set_cookie_value("_cfwaitingroom", "k1.AbC-_", 300s, attrs, c.tls);
        std::string expected =
            std::string("_cfwaitingroom=k1.AbC-_; Max-Age=300; Path=/; HttpOnly; ") +
            c.expected_tail;
        EXPECT_EQ(v, expected) << "samesite " << int(c.samesite) << " secure " << int(c.secure)
                               << " tls " << c.tls;
        auto r = resolve_attributes(attrs, c.tls);
        EXPECT_NE(r.samesite, same_site::auto_);
    }
}

TEST(SetCookie, AppendsTheSameValueToAHeadUnderConstruction) {
    config::cookie_attributes attrs{same_site::none, secure_mode::auto_};
    std::string head = "Set-Cookie: ";
    append_set_cookie_value(head, "_cfwaitingroom_shop", "k1.AbC-_", 42s, attrs, true);
    EXPECT_EQ(head, "Set-Cookie: " +
                        set_cookie_value("_cfwaitingroom_shop", "k1.AbC-_", 42s, attrs, true));
    EXPECT_EQ(head,
              "Set-Cookie: _cfwaitingroom_shop=k1.AbC-_; Max-Age=42; Path=/; HttpOnly; "
              "SameSite=None; Secure");
}

TEST(SetCookie, WritesMaxAgeAndClampsNegativeToZero) {
    config::cookie_attributes attrs;
    EXPECT_NE(set_cookie_value("n", "v", 0s, attrs, false).find("; Max-Age=0;"), std::string::npos);
    EXPECT_NE(set_cookie_value("n", "v", -5s, attrs, false).find("; Max-Age=0;"),
              std::string::npos);
    EXPECT_NE(set_cookie_value("n", "v", 86400s, attrs, false).find("; Max-Age=86400;"),
              std::string::npos);
}

TEST(FindCookie, FindsOurValueAmongOthers) {
    EXPECT_EQ(find_cookie("_cfwaitingroom=k1.abc", "_cfwaitingroom"), "k1.abc");
    EXPECT_EQ(find_cookie("a=1; _cfwaitingroom=k1.abc; b=2", "_cfwaitingroom"), "k1.abc");
    EXPECT_EQ(find_cookie("a=1;_cfwaitingroom=k1.abc;b=2", "_cfwaitingroom"), "k1.abc");
    EXPECT_EQ(find_cookie("  a=1 ;   _cfwaitingroom = k1.abc  ; b=2", "_cfwaitingroom"), "k1.abc");
    EXPECT_EQ(find_cookie("a=1;\t_cfwaitingroom=k1.abc\t", "_cfwaitingroom"), "k1.abc");
}

TEST(FindCookie, UnquotesQuotedValues) {
    EXPECT_EQ(find_cookie("_cfwaitingroom=\"k1.abc\"", "_cfwaitingroom"), "k1.abc");
}

TEST(FindCookie, TakesTheFirstWellFormedOfDuplicates) {
    EXPECT_EQ(find_cookie("_cfwaitingroom=k1.first; _cfwaitingroom=k1.second", "_cfwaitingroom"),
              "k1.first");
    EXPECT_EQ(find_cookie("_cfwaitingroom=; _cfwaitingroom=bad value; _cfwaitingroom=\"; "
                          "_cfwaitingroom=k1.good",
                          "_cfwaitingroom"),
              "k1.good");
    EXPECT_EQ(find_cookie("_cfwaitingroom=a%20b; _cfwaitingroom=k1.good", "_cfwaitingroom"),
              "k1.good");
}

TEST(FindCookie, MatchesTheNameExactly) {
    EXPECT_EQ(find_cookie("_cfwaitingroom_shop=k1.shop; _cfwaitingroom=k1.base", "_cfwaitingroom"),
              "k1.base");
    EXPECT_EQ(
        find_cookie("_cfwaitingroom=k1.base; _cfwaitingroom_shop=k1.shop", "_cfwaitingroom_shop"),
        "k1.shop");
    EXPECT_EQ(find_cookie("X_cfwaitingroom=k1.x; _CFWAITINGROOM=k1.y", "_cfwaitingroom"),
              std::nullopt);
}

TEST(FindCookie, ReturnsNothingWhenAbsentOrMalformed) {
    EXPECT_EQ(find_cookie("", "_cfwaitingroom"), std::nullopt);
    EXPECT_EQ(find_cookie(";;;", "_cfwaitingroom"), std::nullopt);
    EXPECT_EQ(find_cookie("_cfwaitingroom", "_cfwaitingroom"), std::nullopt);
    EXPECT_EQ(find_cookie("_cfwaitingroom=", "_cfwaitingroom"), std::nullopt);
    EXPECT_EQ(find_cookie("_cfwaitingroom=\"\"", "_cfwaitingroom"), std::nullopt);
    EXPECT_EQ(find_cookie("_cfwaitingroom=k1.a=b", "_cfwaitingroom"), std::nullopt);
    EXPECT_EQ(find_cookie(std::string("_cfwaitingroom=k1\0x", 18), "_cfwaitingroom"), std::nullopt);
    EXPECT_EQ(find_cookie(std::string(100000, ';'), "_cfwaitingroom"), std::nullopt);
}

TEST(NextCookie, WalksEveryWellFormedValueOfTheNameInOrder) {
    std::string_view header =
        "_cfwaitingroom=k1.planted; a=1; _cfwaitingroom=bad value; _cfwaitingroom_shop=k1.x; "
        "_cfwaitingroom=\"k1.own\"";
    EXPECT_EQ(next_cookie(header, "_cfwaitingroom"), "k1.planted");
    EXPECT_EQ(next_cookie(header, "_cfwaitingroom"), "k1.own");
    EXPECT_EQ(next_cookie(header, "_cfwaitingroom"), std::nullopt);
    EXPECT_TRUE(header.empty());
    EXPECT_EQ(next_cookie(header, "_cfwaitingroom"), std::nullopt) << "an ended walk stays ended";
}

TEST(NextCookie, LeavesTheRestOfTheHeaderAfterTheValueItReturns) {
    std::string_view header = "_cfwaitingroom=k1.a; b=2";
    EXPECT_EQ(next_cookie(header, "_cfwaitingroom"), "k1.a");
    EXPECT_EQ(header, " b=2");
    EXPECT_EQ(find_cookie(" b=2", "b"), "2");
}

TEST(NextCookie, GivesTheKnownValueAndStillRefusesMalformedOnes) {
    // The known value is one returned before: the walk's answers are the same with it or
    // without it, and it vouches for nothing but itself.
    const std::string_view all =
        "_cfwaitingroom=k1.own; _cfwaitingroom=k1.bad value; _cfwaitingroom=k1.o\x01n; "
        "_cfwaitingroom=\"k1.own\"; _cfwaitingroom=k1.next";
    for (std::string_view known :
         {std::string_view{}, std::string_view{"k1.own"}, std::string_view{"k1.o"}}) {
        std::string_view header = all;
        EXPECT_EQ(next_cookie(header, "_cfwaitingroom", known), "k1.own") << known;
        EXPECT_EQ(next_cookie(header, "_cfwaitingroom", known), "k1.own") << known;
        EXPECT_EQ(next_cookie(header, "_cfwaitingroom", known), "k1.next") << known;
        EXPECT_EQ(next_cookie(header, "_cfwaitingroom", known), std::nullopt) << known;
    }
}

}  // namespace
}  // namespace waitroom::cookie

// The filter's completion: called with the filter's answer like a std::function, copied and
// moved with what it holds, and keeping the session's callable (one shared_ptr) in place, so a
// request costs no allocation for it.
#include "waitroom/gateway/request_filter.hpp"

#include <gtest/gtest.h>

#include <array>
#include <memory>

namespace waitroom::gateway {
namespace {

TEST(FilterCompletion, KeepsTheSessionsCallableInPlace) {
    auto owner = std::make_shared<int>(0);
    auto session_like = [self = owner](filter_result) { (void)self; };
    static_assert(filter_completion::kept_in_place<decltype(session_like)>);
    std::array<char, 64> big{};
    auto large = [big](filter_result) { (void)big; };
    static_assert(!filter_completion::kept_in_place<decltype(large)>);
}

TEST(FilterCompletion, PassesTheAnswerToTheCallable) {
    unsigned status = 0;
    std::string body;
    filter_completion done = [&](filter_result r) {
        status = r.status;
        body = r.body;
    };
    ASSERT_TRUE(done);
    done(filter_result::respond(429, {}, std::string("full")));
    EXPECT_EQ(status, 429u);
    EXPECT_EQ(body, "full");
}

TEST(FilterCompletion, CopiesAndMovesWhatItHoldsAndReleasesItWhenDestroyed) {
    auto owner = std::make_shared<int>(0);
    {
        filter_completion a = [self = owner](filter_result) { ++*self; };
        EXPECT_EQ(owner.use_count(), 2);
        filter_completion b = a;  // a copy holds its own
        EXPECT_EQ(owner.use_count(), 3);
        filter_completion c = std::move(a);
        EXPECT_FALSE(a);  // NOLINT(bugprone-use-after-move): moved from is empty
        EXPECT_EQ(owner.use_count(), 3);
        b(filter_result::pass());
        c(filter_result::pass());
        EXPECT_EQ(*owner, 2);
        c = b;  // the old one released, the copy held
        EXPECT_EQ(owner.use_count(), 3);
        c = filter_completion{};
        EXPECT_EQ(owner.use_count(), 2);
    }
    EXPECT_EQ(owner.use_count(), 1);
}

TEST(FilterCompletion, HoldsALargeCallableOnTheHeapAlike) {
    auto owner = std::make_shared<int>(0);
    std::array<std::shared_ptr<int>, 4> many{owner, owner, owner, owner};
    {
        filter_completion a = [many](filter_result r) { *many[0] += static_cast<int>(r.status); };
        EXPECT_EQ(owner.use_count(), 9);
        filter_completion b = a;
        EXPECT_EQ(owner.use_count(), 13);
        filter_completion c = std::move(b);
        EXPECT_FALSE(b);  // NOLINT(bugprone-use-after-move)
        EXPECT_EQ(owner.use_count(), 13);
        c(filter_result::respond(7, {}, std::string{}));
        a(filter_result::respond(5, {}, std::string{}));
        EXPECT_EQ(*owner, 12);
    }
    EXPECT_EQ(owner.use_count(), 5);
}

}  // namespace
}  // namespace waitroom::gateway

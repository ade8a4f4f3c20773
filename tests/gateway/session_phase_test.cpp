// The phases of an HTTP/1.1 client connection and the steps between them (session_phase.hpp).

#include <gtest/gtest.h>

#include "session_phase.hpp"

namespace waitroom::gateway {
namespace {

using enum session_phase;

constexpr session_phase all[] = {accepted,  proxy_header, handshake,  first_head, idle,
                                 next_head, filtering,    exchanging, answering,  tunnel,
                                 closing,   closed,       handed_over};

TEST(SessionPhase, AConnectionGoesFromItsFirstHeadThroughKeepAliveRequestsToItsClose) {
    const session_phase life[] = {accepted,   proxy_header, handshake,  first_head, filtering,
                                  exchanging, idle,         next_head,  filtering,  answering,
                                  idle,       filtering,    exchanging, closing,    closed};
    for (std::size_t i = 1; i < std::size(life); ++i) {
        EXPECT_TRUE(may_follow(life[i - 1], life[i])) << "step " << i;
    }
}

TEST(SessionPhase, NoPhaseAfterTheEndReadsOrAnswersARequestAgain) {
    for (const auto from : {closing, closed, handed_over}) {
        for (const auto to : all) {
            if (to != closed) {
                EXPECT_FALSE(may_follow(from, to)) << int(from) << " -> " << int(to);
            }
        }
    }
    EXPECT_FALSE(may_follow(handed_over, closed));  // the stream belongs to h2_connection
}

TEST(SessionPhase, OnlyAHeadAfterTheHandshakeMaySpeakHttp2) {
    for (const auto from : all) {
        const bool may = from == handshake || from == first_head;
        EXPECT_EQ(may_follow(from, handed_over), may) << int(from);
    }
}

TEST(SessionPhase, AnAnswerOrAnExchangeComesOnlyAfterAHead) {
    for (const auto from : {accepted, proxy_header, handshake}) {
        EXPECT_FALSE(may_follow(from, filtering));
        EXPECT_FALSE(may_follow(from, exchanging));
        EXPECT_FALSE(may_follow(from, answering));
    }
    EXPECT_FALSE(may_follow(idle, exchanging));  // the room decides first
    EXPECT_FALSE(may_follow(answering, exchanging));
    EXPECT_TRUE(may_follow(exchanging, tunnel));
    EXPECT_FALSE(may_follow(filtering, tunnel));
}

TEST(SessionPhase, AWaitForARequestIsWhatADrainEnds) {
    for (const auto p : all) {
        const bool waiting = p == accepted || p == proxy_header || p == handshake ||
                             p == first_head || p == idle || p == next_head;
        EXPECT_EQ(waits_for_request(p), waiting) << int(p);
    }
}

}  // namespace
}  // namespace waitroom::gateway

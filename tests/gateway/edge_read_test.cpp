// socket_reader, which edge_read implements, on real loopback sockets: bytes there now and bytes
// that come later, a short read followed by bytes that arrive while no read is queued (the edge
// must not be lost), a full read followed by the rest, end of file (also one that comes with the
// last bytes), cancel and close, Asio's own reads after it, and the owner's lifetime (kept until
// the callback, released when the io_context goes with a read still queued).
#include "socket_reader.hpp"

#include <gtest/gtest.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/write.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

namespace waitroom::gateway {
namespace {

using namespace std::chrono_literals;

struct reader : std::enable_shared_from_this<reader> {
    explicit reader(std::size_t room) : buf(room, '\0') {}

    void read(tcp_socket& s, socket_reader::kind k = socket_reader::kind::answer) {
        r.start<&reader::on_read>(s, asio::buffer(buf), k, shared_from_this());
    }
    void on_read(error_code e, std::size_t n) {
        ++calls;
        ec = e;
        got.append(buf.data(), n);
    }

    socket_reader r;
    std::string buf;
    std::string got;
    error_code ec;
    int calls = 0;
};

class EdgeRead : public ::testing::Test {
  protected:
    EdgeRead() : acceptor_(ioc, {asio::ip::make_address("127.0.0.1"), 0}) {
        peer.connect(acceptor_.local_endpoint());
        acceptor_.accept(socket);
    }

    void send(const std::string& text) { asio::write(peer, asio::buffer(text)); }

    // Runs the io_context until `done` holds or 2 s pass (a lost edge shows as a timeout).
    template <class Pred>
    bool run_until(Pred done) {
        const auto deadline = std::chrono::steady_clock::now() + 2s;
        while (!done() && std::chrono::steady_clock::now() < deadline) {
            ioc.restart();
            ioc.run_for(10ms);
        }
        return done();
    }

    // Lets the reactor poll for a moment (a timer keeps it waiting), so that epoll reports
    // whatever is pending while no read is queued.
    void poll_events() {
        steady_timer t(ioc);
        t.expires_after(30ms);
        t.async_wait([](error_code) {});
        ioc.restart();
        ioc.run();
    }

    asio::io_context ioc;
    tcp_acceptor acceptor_;
    tcp_socket socket{ioc};
    asio::ip::tcp::socket peer{ioc};
};

TEST_F(EdgeRead, ReadsBytesThereNowThenWaitsForLaterOnes) {
    auto r = std::make_shared<reader>(64);
    send("hello");
    r->read(socket);
    EXPECT_EQ(r->calls, 0) << "completed from within start";
    ASSERT_TRUE(run_until([&] { return r->calls == 1; }));
    EXPECT_FALSE(r->ec) << r->ec.message();
    EXPECT_EQ(r->got, "hello");

    // Short read: the next read is queued without trying; bytes sent later still complete it.
    r->read(socket);
    ioc.restart();
    ioc.run_for(20ms);
    EXPECT_EQ(r->calls, 1) << "completed with no bytes sent";
    send("world");
    ASSERT_TRUE(run_until([&] { return r->calls == 2; }));
    EXPECT_FALSE(r->ec) << r->ec.message();
    EXPECT_EQ(r->got, "helloworld");
}

TEST_F(EdgeRead, BytesArrivingWhileNoReadIsQueuedAreNotLost) {
    auto r = std::make_shared<reader>(64);
    send("one");
    r->read(socket);
    ASSERT_TRUE(run_until([&] { return r->calls == 1; }));
    // The socket was found empty; now bytes arrive and epoll reports them while nothing waits
    // on the socket. The next read must still see them.
    send("two");
    poll_events();
    r->read(socket);
    ASSERT_TRUE(run_until([&] { return r->calls == 2; })) << "edge lost";
    EXPECT_EQ(r->got, "onetwo");
}

TEST_F(EdgeRead, AFullReadLeavesTheRestForTheNextWithoutWaiting) {
    auto r = std::make_shared<reader>(60);
    send(std::string(60, 'a') + std::string(40, 'b'));
    poll_events();  // the bytes' epoll event is spent: only the reads themselves can find the rest
    r->read(socket);
    ASSERT_TRUE(run_until([&] { return r->calls == 1; }));
    EXPECT_EQ(r->got.size(), 60u);
    r->read(socket);  // no new bytes will come: the 40 left must be read without an event
    ASSERT_TRUE(run_until([&] { return r->calls == 2; }))
        << "waited for an event after a full read";
    EXPECT_EQ(r->got, std::string(60, 'a') + std::string(40, 'b'));
}

TEST_F(EdgeRead, ReportsEndOfFile) {
    auto r = std::make_shared<reader>(64);
    send("last");
    peer.shutdown(asio::socket_base::shutdown_send);
    r->read(socket);
    ASSERT_TRUE(run_until([&] { return r->calls == 1; }));
    r->read(socket);
    ASSERT_TRUE(run_until([&] { return r->calls == 2; }));
    EXPECT_EQ(r->got, "last");
    EXPECT_EQ(r->ec, asio::error::eof);
}

// A peer's FIN that comes right behind its last bytes is reported by the same epoll event, and
// the short read that takes the bytes hides it: a read that goes on with a message tries first
// and sees it; a read of a peer that may close at any time leaves the socket to be tried.
TEST_F(EdgeRead, SeesAnEndOfStreamThatCameWithTheLastBytes) {
    for (auto first : {socket_reader::kind::answer, socket_reader::kind::any}) {
        tcp_socket s(ioc);
        asio::ip::tcp::socket p(ioc);
        p.connect(acceptor_.local_endpoint());
        acceptor_.accept(s);
        auto r = std::make_shared<reader>(64);
        r->read(s, first);
        ioc.restart();
        ioc.run_for(10ms);  // the read is queued before the bytes and the FIN arrive
        asio::write(p, asio::buffer(std::string("bye")));
        p.shutdown(asio::socket_base::shutdown_send);
        ASSERT_TRUE(run_until([&] { return r->calls == 1; }));
        EXPECT_EQ(r->got, "bye");
        // After a short `any` read even the reactor's own next read tries (here: `answer`);
        // after a short `answer` read, `more` tries.
        r->read(s, first == socket_reader::kind::any ? socket_reader::kind::answer
                                                     : socket_reader::kind::more);
        ASSERT_TRUE(run_until([&] { return r->calls == 2; }))
            << "end of stream hidden (first read kind " << static_cast<int>(first) << ")";
        EXPECT_EQ(r->ec, asio::error::eof);
    }
}

TEST_F(EdgeRead, CancelAndCloseEndAQueuedReadAsAborted) {
    auto r = std::make_shared<reader>(64);
    r->read(socket);
    ioc.run_for(10ms);
    ASSERT_TRUE(r->r.pending());
    socket.cancel();
    ASSERT_TRUE(run_until([&] { return r->calls == 1; }));
    EXPECT_EQ(r->ec, asio::error::operation_aborted);
    EXPECT_FALSE(r->r.pending());

    r->read(socket);
    socket.close();
    ASSERT_TRUE(run_until([&] { return r->calls == 2; }));
    EXPECT_EQ(r->ec, asio::error::operation_aborted);

    r->read(socket);  // on a closed socket: an error, never a hang or a crash
    ASSERT_TRUE(run_until([&] { return r->calls == 3; }));
    EXPECT_TRUE(r->ec);
}

TEST_F(EdgeRead, AsiosOwnReadsStillWorkAfterAShortRead) {
    auto r = std::make_shared<reader>(64);
    send("x");
    r->read(socket);
    ASSERT_TRUE(run_until([&] { return r->calls == 1; }));
    char buf[16];
    std::optional<std::size_t> n;
    socket.async_read_some(asio::buffer(buf), [&](error_code, std::size_t k) { n = k; });
    send("yz");
    ASSERT_TRUE(run_until([&] { return n.has_value(); }));
    EXPECT_EQ(std::string(buf, *n), "yz");
}

TEST_F(EdgeRead, KeepsTheOwnerUntilTheCallbackAndLetsItGoWithTheContext) {
    std::weak_ptr<reader> weak;
    {
        auto r = std::make_shared<reader>(64);
        weak = r;
        r->read(socket);
    }
    EXPECT_FALSE(weak.expired()) << "the queued read must keep its owner";
    send("k");
    ASSERT_TRUE(run_until([&] { return weak.expired(); }));

    std::weak_ptr<reader> queued;
    auto ctx = std::make_unique<asio::io_context>();
    {
        tcp_acceptor acc(*ctx, {asio::ip::make_address("127.0.0.1"), 0});
        asio::ip::tcp::socket p(*ctx);
        p.connect(acc.local_endpoint());
        tcp_socket s(*ctx);
        acc.accept(s);
        auto r = std::make_shared<reader>(64);
        queued = r;
        r->read(s);
        ctx->run_for(10ms);
    }  // the sockets go: the read ends as aborted, queued to run on the context
    EXPECT_FALSE(queued.expired());
    ctx.reset();  // ...which is destroyed before it runs
    EXPECT_TRUE(queued.expired()) << "a destroyed io_context must release the owner";
}

}  // namespace
}  // namespace waitroom::gateway

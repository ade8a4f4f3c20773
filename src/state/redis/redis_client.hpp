#pragma once
// One connection to Redis for the Redis store: connects (AUTH, SELECT, SCRIPT LOAD of the room
// script), runs pipelines of commands with a deadline each, and reconnects with backoff when the
// connection is lost. Everything runs on one strand; callers post there.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <system_error>
#include <vector>

#include "redis_protocol.hpp"
#include "waitroom/state/redis_store.hpp"

struct redisAsyncContext;

namespace waitroom::state::redis {

class sentinel_locator;

class client : public std::enable_shared_from_this<client> {
  public:
    // All replies in command order (each may be an error reply), or an error_code
    // (errc::unavailable, errc::timeout) and no replies. Runs on the strand, posted.
    using handler = std::function<void(std::error_code, std::vector<value>)>;
    using clock = std::chrono::steady_clock;
    struct batch;  // one pipeline in flight (public for hiredis's C callbacks)
    // data: a server that runs the room script (AUTH, SELECT, SCRIPT LOAD on connecting; with
    // opt.sentinels, the master they name, checked with ROLE). sentinel: a sentinel (PING).
    enum class kind { data, sentinel };

    client(boost::asio::any_io_executor strand, redis_options opt, kind k = kind::data);
    ~client();
    client(const client&) = delete;
    client& operator=(const client&) = delete;

    // On the strand. Sends `cmds` as one pipeline (after the handshake when connecting). On
    // the deadline the call fails with errc::timeout and the connection is dropped, so a late
    // answer can never be taken for a later call's.
    void execute(std::vector<command> cmds, clock::time_point deadline, handler h);
    void start();  // on the strand: connect now
    void stop();   // on the strand: drop the connection, fail everything, accept no more
    bool ready() const { return phase_ == phase::ready; }
    // A reply said READONLY: with sentinels, drop the connection and ask them again.
    void on_readonly();

  private:
    enum class phase { idle, connecting, ready, backoff, stopped };

    void connect();
    void resolve();                         // target_ to an address, then open()
    void open(const std::string& address);  // the handshake, on a resolved address
    void on_handshake(std::error_code ec, const std::vector<value>& replies);
    void send(const std::shared_ptr<batch>& b);
    void teardown();
    void on_gone();  // hiredis freed the context (inside hiredis: records and posts only)
    void after_gone();
    void fail_later(const std::shared_ptr<batch>& b, std::error_code ec);
    // Fails `b` with errc::timeout at `deadline` and drops the connection (its late answer
    // must never be read as another call's).
    void arm_deadline(const std::shared_ptr<batch>& b, clock::time_point deadline);
    void forget(const batch* b);

    boost::asio::any_io_executor strand_;
    redis_options opt_;
    kind kind_;
    std::shared_ptr<sentinel_locator> locator_;  // with opt.sentinels
    redis_endpoint target_;                      // the server of the connection
    phase phase_ = phase::idle;
    redisAsyncContext* ac_ = nullptr;
    reply_budget budget_;  // ac_'s reader bounds each reply with it (bound_replies)
    boost::asio::steady_timer backoff_timer_;
    boost::asio::ip::tcp::resolver resolver_;  // host names only: hiredis would block in DNS
    std::chrono::milliseconds backoff_;
    std::vector<std::shared_ptr<batch>> waiting_;   // held back until the handshake is done
    std::vector<std::shared_ptr<batch>> inflight_;  // sent, not answered
};

}  // namespace waitroom::state::redis

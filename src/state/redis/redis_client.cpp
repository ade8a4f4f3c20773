#include "redis_client.hpp"

#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include <boost/asio/post.hpp>

#include <algorithm>

#include "redis_asio.hpp"
#include "redis_sentinel.hpp"
#include "waitroom/state/error.hpp"

namespace waitroom::state::redis {

namespace asio = boost::asio;

struct client::batch {
    batch(asio::any_io_executor ex, std::vector<command> c, handler hd)
        : strand(ex), cmds(std::move(c)), replies(cmds.size()), timer(ex), h(std::move(hd)) {}

    asio::any_io_executor strand;
    std::vector<command> cmds;
    std::vector<value> replies;
    std::size_t got = 0;
    bool lost = false;    // a command's reply will never come (connection gone)
    bool posted = false;  // completion is on its way
    bool done = false;    // the handler ran (or was given up on): ignore everything after
    bool readonly = false;    // a reply said READONLY: the server is no longer the master
    std::size_t hidden = 0;   // trailing commands of the client's own (WAIT), not the caller's
    asio::steady_timer timer;
    handler h;
    std::weak_ptr<client> owner;

    void complete(std::error_code ec) {
        if (done) {
            return;
        }
        done = true;
        timer.cancel();
        if (auto o = owner.lock()) {
            o->forget(this);
        }
        auto hd = std::move(h);
        if (ec) {
            hd(ec, {});
        } else {
            replies.resize(replies.size() - hidden);
            hd({}, std::move(replies));
        }
    }
};

namespace {

// privdata of one command: its batch and its place in it.
struct slot {
    std::shared_ptr<client::batch> b;
    std::size_t index;
};

}  // namespace

// With sentinels each pipeline ends in WAIT 1 and ROLE (client::execute). An answer the
// replica did not acknowledge could be lost in a failover: with a replica connected and none
// acknowledging in time, the call fails as lost (its resend is answered without counting it
// twice, on this master or the next). Without a replica there is nothing to promote, and
// nothing to wait for. A server that is no longer master drops the connection (READONLY).
static std::error_code check_replicated(client::batch& b) {
    const std::size_t n = b.replies.size();
    const value& wait = b.replies[n - 2];
    const value& role = b.replies[n - 1];
    if (!is_master_role(role)) {
        b.readonly = true;
        return make_error_code(errc::lost);
    }
    if (wait.type == value::kind::integer && wait.integer < 1 && connected_replicas(role) > 0) {
        return make_error_code(errc::lost);
    }
    return {};
}

// Runs inside hiredis (reply, or null when the context is freed): records, then posts the
// completion so that no user code and no hiredis call runs inside hiredis.
static void on_reply(redisAsyncContext*, void* reply, void* privdata) {
    std::unique_ptr<slot> s(static_cast<slot*>(privdata));
    auto& b = s->b;
    if (b->done) {
        return;
    }
    if (reply == nullptr) {
        b->lost = true;
    } else {
        value& v = b->replies[s->index];
        v = from_reply(*static_cast<redisReply*>(reply));
        // "READONLY …", or inside a script error ("ERR Error running script … -READONLY …").
        b->readonly = b->readonly || (v.is_error() && v.str.find("READONLY") != std::string::npos);
    }
    ++b->got;
    if (!b->posted && (b->lost || b->got == b->cmds.size())) {
        b->posted = true;
        asio::post(b->strand, [b] {
            // Sent and then the connection went: the server may have run it.
            std::error_code ec = b->lost ? make_error_code(errc::lost) : std::error_code{};
            if (!ec && b->hidden == 2) {
                ec = check_replicated(*b);
            }
            b->complete(ec);
            if (auto o = b->owner.lock(); o && b->readonly) {
                o->on_readonly();
            }
        });
    }
}

static void on_connect(const redisAsyncContext*, int) {
    // Nothing to do: the handshake's replies (or their failure) tell the outcome.
}

client::client(asio::any_io_executor strand, redis_options opt, kind k)
    : strand_(std::move(strand)),
      opt_(std::move(opt)),
      kind_(k),
      target_{opt_.host, opt_.port},
      backoff_timer_(strand_),
      resolver_(strand_),
      backoff_(opt_.reconnect_min) {
    if (kind_ == kind::data && !opt_.sentinels.empty()) {
        locator_ = std::make_shared<sentinel_locator>(strand_, opt_.sentinels, opt_.master_name,
                                                      opt_.timeout);
    }
}

client::~client() {
    // Destroyed with the store, its executor still alive: nothing may be posted any more.
    for (auto& b : inflight_) {
        b->done = true;
    }
    for (auto& b : waiting_) {
        b->done = true;
    }
    if (ac_ != nullptr) {
        auto* ac = ac_;
        ac_ = nullptr;
        redisAsyncFree(ac);
    }
}

void client::start() {
    if (phase_ == phase::idle) {
        connect();
    }
}

void client::stop() {
    phase_ = phase::stopped;
    backoff_timer_.cancel();
    resolver_.cancel();
    if (locator_) {
        locator_->stop();
    }
    teardown();
    auto w = std::move(waiting_);
    waiting_.clear();
    for (auto& b : w) {
        fail_later(b, make_error_code(errc::unavailable));
    }
}

void client::arm_deadline(const std::shared_ptr<batch>& b, clock::time_point deadline) {
    b->owner = weak_from_this();
    b->timer.expires_at(deadline);
    b->timer.async_wait([b](const boost::system::error_code& ec) {
        if (ec || b->done) {
            return;
        }
        auto o = b->owner.lock();
        b->complete(make_error_code(errc::timeout));
        // A server that stopped answering is treated as lost: reconnecting also guarantees
        // that the late answer to this call is never read as another call's.
        if (o) {
            o->teardown();
        }
    });
}

void client::execute(std::vector<command> cmds, clock::time_point deadline, handler h) {
    std::size_t hidden = 0;
    if (locator_) {
        // Answer only once a replica has the writes too: what a node was told then survives
        // the master's loss (check_replicated). A replica acknowledges within a millisecond or
        // so; without one (down, or this master was just promoted) each call waits a tenth of
        // its timeout, so that a sync's few round trips still fit in it. ROLE tells how many
        // replicas there are, and that this is the master still.
        auto wait_ms = std::max<long long>(1, opt_.timeout.count() / 10);
        cmds.push_back({"WAIT", "1", std::to_string(wait_ms)});
        cmds.push_back({"ROLE"});
        hidden = 2;
    }
    auto b = std::make_shared<batch>(strand_, std::move(cmds), std::move(h));
    b->hidden = hidden;
    arm_deadline(b, deadline);
    switch (phase_) {
        case phase::stopped:
        case phase::backoff:
            fail_later(b, make_error_code(errc::unavailable));
            return;
        case phase::idle:
            waiting_.push_back(b);
            connect();
            return;
        case phase::connecting:
            waiting_.push_back(b);
            return;
        case phase::ready:
            send(b);
            return;
    }
}

void client::connect() {
    phase_ = phase::connecting;
    if (!locator_) {
        resolve();
        return;
    }
    locator_->locate([w = weak_from_this()](std::optional<redis_endpoint> master) {
        auto c = w.lock();
        if (!c || c->phase_ != phase::connecting || c->ac_ != nullptr) {
            return;
        }
        if (!master) {
            c->on_gone();  // no sentinel named a master: back off and ask again
            return;
        }
        c->target_ = std::move(*master);
        c->resolve();
    });
}

void client::on_readonly() {
    // The server was demoted (a failover): reconnect, asking the sentinels again.
    if (locator_) {
        teardown();
    }
}

void client::resolve() {
    boost::system::error_code not_ip;
    asio::ip::make_address(target_.host, not_ip);
    if (!not_ip) {
        open(target_.host);
        return;
    }
    // hiredis resolves names with a blocking getaddrinfo; Asio's resolver does not block us.
    resolver_.async_resolve(
        target_.host, std::to_string(target_.port),
        [w = weak_from_this()](const boost::system::error_code& ec,
                               const asio::ip::tcp::resolver::results_type& results) {
            auto c = w.lock();
            if (!c || c->phase_ != phase::connecting || c->ac_ != nullptr) {
                return;
            }
            if (ec || results.empty()) {
                c->on_gone();
                return;
            }
            // Redis binds 127.0.0.1 by default: prefer an IPv4 address over "::1".
            auto chosen = results.begin();
            for (auto it = results.begin(); it != results.end(); ++it) {
                if (it->endpoint().address().is_v4()) {
                    chosen = it;
                    break;
                }
            }
            c->open(chosen->endpoint().address().to_string());
        });
}

void client::open(const std::string& address) {
    redisAsyncContext* ac = redisAsyncConnect(address.c_str(), target_.port);
    if (ac == nullptr || ac->err != 0) {
        if (ac != nullptr) {
            redisAsyncFree(ac);  // not attached yet: no cleanup hook runs
        }
        on_gone();
        return;
    }
    ac_ = ac;
    bound_replies(*ac->c.reader, budget_);
    attach(ac, strand_, [w = weak_from_this()] {
        if (auto c = w.lock()) {
            c->on_gone();
        }
    });
    redisAsyncSetConnectCallback(ac, on_connect);

    std::vector<command> hs;
    if (kind_ == kind::sentinel) {
        hs.push_back({"PING"});
    } else if (!opt_.password.empty()) {
        if (opt_.username.empty()) {
            hs.push_back({"AUTH", opt_.password});
        } else {
            hs.push_back({"AUTH", opt_.username, opt_.password});
        }
    }
    if (kind_ == kind::data) {
        if (opt_.db != 0) {
            hs.push_back({"SELECT", std::to_string(opt_.db)});
        }
        if (locator_) {
            hs.push_back({"ROLE"});
        }
        hs.push_back(script_load_command());
    }
    auto b = std::make_shared<batch>(
        strand_, std::move(hs),
        [w = weak_from_this()](std::error_code ec, std::vector<value> replies) {
            if (auto c = w.lock()) {
                c->on_handshake(ec, replies);
            }
        });
    arm_deadline(b, clock::now() + opt_.timeout);
    send(b);
}

void client::on_handshake(std::error_code ec, const std::vector<value>& replies) {
    if (phase_ != phase::connecting) {
        return;  // stopped, or the connection already went
    }
    bool ok = !ec;
    for (const auto& r : replies) {
        ok = ok && !r.is_error();
    }
    if (kind_ == kind::data) {
        // The server must know the script under the SHA the calls use, and with sentinels it
        // must be the master still (a sentinel can name a demoted one for a moment).
        ok = ok && !replies.empty() && replies.back().str == room_script_sha();
        ok = ok && (!locator_ || (replies.size() >= 2 && is_master_role(replies.end()[-2])));
    }
    if (!ok) {
        teardown();
        return;
    }
    phase_ = phase::ready;
    backoff_ = opt_.reconnect_min;
    auto w = std::move(waiting_);
    waiting_.clear();
    for (auto& b : w) {
        if (!b->done) {
            send(b);
        }
    }
}

void client::send(const std::shared_ptr<batch>& b) {
    if (ac_ == nullptr) {
        fail_later(b, make_error_code(errc::unavailable));
        return;
    }
    inflight_.push_back(b);
    std::vector<const char*> argv;
    std::vector<std::size_t> lens;
    for (std::size_t i = 0; i < b->cmds.size(); ++i) {
        const command& c = b->cmds[i];
        argv.clear();
        lens.clear();
        for (const auto& a : c) {
            argv.push_back(a.data());
            lens.push_back(a.size());
        }
        auto* s = new slot{b, i};
        if (redisAsyncCommandArgv(ac_, on_reply, s, static_cast<int>(argv.size()), argv.data(),
                                  lens.data()) != REDIS_OK) {
            delete s;  // the context is disconnecting: the rest of the batch cannot go
            b->lost = true;
            fail_later(b, make_error_code(errc::unavailable));
            return;
        }
    }
}

void client::teardown() {
    if (ac_ != nullptr) {
        auto* ac = ac_;
        redisAsyncFree(ac);  // pending replies come back null; the cleanup hook runs on_gone
    }
}

void client::on_gone() {
    if (locator_ && phase_ == phase::connecting) {
        locator_->distrust_last();  // the master it named could not be used
    }
    ac_ = nullptr;
    if (phase_ != phase::stopped) {
        phase_ = phase::backoff;
    }
    asio::post(strand_, [w = weak_from_this()] {
        if (auto c = w.lock()) {
            c->after_gone();
        }
    });
}

void client::after_gone() {
    auto w = std::move(waiting_);
    waiting_.clear();
    for (auto& b : w) {
        b->complete(make_error_code(errc::unavailable));
    }
    if (phase_ != phase::backoff || ac_ != nullptr) {
        return;
    }
    backoff_timer_.expires_after(backoff_);
    backoff_ = std::min(backoff_ * 2, opt_.reconnect_max);
    backoff_timer_.async_wait([w = weak_from_this()](const boost::system::error_code& ec) {
        auto c = w.lock();
        if (ec || !c || c->phase_ != phase::backoff) {
            return;
        }
        c->connect();
    });
}

void client::fail_later(const std::shared_ptr<batch>& b, std::error_code ec) {
    if (b->posted) {
        return;
    }
    b->posted = true;
    asio::post(strand_, [b, ec] { b->complete(ec); });
}

void client::forget(const batch* b) {
    std::erase_if(inflight_, [b](const auto& p) { return p.get() == b; });
}

}  // namespace waitroom::state::redis

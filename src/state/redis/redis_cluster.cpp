#include "redis_cluster.hpp"

#include <boost/asio/post.hpp>

#include <algorithm>

#include "waitroom/state/error.hpp"

namespace waitroom::state::redis {

namespace asio = boost::asio;

namespace {

std::string name(const redis_endpoint& ep) {
    return ep.host + ":" + std::to_string(ep.port);
}

bool starts_with(const value& v, std::string_view prefix) {
    return v.is_error() && v.str.starts_with(prefix);
}

}  // namespace

struct cluster::call {
    std::vector<command> cmds;
    std::vector<value> replies;
    clock::time_point deadline;
    handler h;
    std::size_t parts = 0;  // node pipelines of this round in flight
    std::error_code ec;
    std::vector<item> again;  // to send again in the next round
    int redirects = 0;        // rounds of MOVED, ASK and NOSCRIPT (TRYAGAIN: the deadline)
    bool sent = false;        // some part reached a server: it may have applied its commands
    bool done = false;
    std::shared_ptr<asio::steady_timer> pause;  // TRYAGAIN's pause, or the wait for a map
};

cluster::cluster(asio::any_io_executor strand, redis_options opt)
    : strand_(std::move(strand)), opt_(std::move(opt)), slot_master_(cluster_slots, none) {}

cluster::~cluster() {
    for (auto& [_, n] : nodes_) {
        n->stop();
    }
}

void cluster::start() {
    if (!known_) {
        refresh();
    }
}

void cluster::stop() {
    stopped_ = true;
    for (auto& [_, n] : nodes_) {
        n->stop();
    }
    auto w = std::move(waiting_);
    waiting_.clear();
    for (auto& f : w) {
        f(false);
    }
}

std::shared_ptr<client> cluster::node(const redis_endpoint& ep) {
    auto& n = nodes_[name(ep)];
    if (!n) {
        redis_options o = opt_;
        o.host = ep.host;
        o.port = ep.port;
        o.db = 0;
        o.sentinels.clear();
        o.cluster_nodes.clear();
        n = std::make_shared<client>(strand_, std::move(o));
    }
    return n;
}

std::optional<redis_endpoint> cluster::master_of(const std::vector<command>& all,
                                                 std::size_t index) const {
    // EVALSHA <sha> <numkeys> <key> ...: the first key decides; other commands go with the
    // next EVALSHA of the pipeline (a SCRIPT LOAD before it), or anywhere.
    const command* keyed = nullptr;
    for (std::size_t i = index; i < all.size() && keyed == nullptr; ++i) {
        if (all[i].size() > 3 && all[i][0] == "EVALSHA" && all[i][2] != "0") {
            keyed = &all[i];
        }
    }
    std::uint16_t m = none;
    if (keyed != nullptr) {
        m = slot_master_[key_slot((*keyed)[3])];
    } else if (!masters_.empty()) {
        m = 0;
    }
    if (m == none) {
        return std::nullopt;
    }
    return masters_[m];
}

void cluster::execute(std::vector<command> cmds, clock::time_point deadline, handler h) {
    auto c = std::make_shared<call>();
    c->replies.resize(cmds.size());
    c->cmds = std::move(cmds);
    c->deadline = deadline;
    c->h = std::move(h);
    std::vector<item> items(c->cmds.size());
    for (std::size_t i = 0; i < items.size(); ++i) {
        items[i].index = i;
    }
    if (stopped_) {
        finish(c, make_error_code(errc::unavailable));
        return;
    }
    if (known_) {
        dispatch(c, std::move(items));
        return;
    }
    c->pause = std::make_shared<asio::steady_timer>(strand_, deadline);
    c->pause->async_wait([w = weak_from_this(), c](const boost::system::error_code& e) {
        if (auto self = w.lock(); self && !e) {
            self->finish(c, make_error_code(errc::timeout));  // still no slot map
        }
    });
    waiting_.push_back([self = shared_from_this(), c, items = std::move(items)](bool ok) mutable {
        if (ok) {
            self->dispatch(c, std::move(items));
        } else {
            self->finish(c, make_error_code(errc::unavailable));
        }
    });
    refresh();
}

void cluster::dispatch(const std::shared_ptr<call>& c, std::vector<item> items) {
    if (c->done) {
        return;  // timed out waiting for the slot map
    }
    std::map<std::string, std::pair<redis_endpoint, std::vector<item>>> groups;
    for (auto& it : items) {
        auto ep = it.to ? it.to : master_of(c->cmds, it.index);
        if (!ep) {
            // A slot without a known master (the map is being changed): read it again.
            refresh();
            finish(c, make_error_code(errc::unavailable));
            return;
        }
        auto& g = groups[name(*ep)];
        g.first = *ep;
        g.second.push_back(it);
    }
    c->parts = groups.size();
    for (auto& [_, g] : groups) {
        std::vector<command> cmds;
        for (const auto& it : g.second) {
            if (it.load) {
                cmds.push_back(script_load_command());
            }
            if (it.asking) {
                cmds.push_back({"ASKING"});
            }
            cmds.push_back(c->cmds[it.index]);
        }
        node(g.first)->execute(
            std::move(cmds), c->deadline,
            [w = weak_from_this(), c, its = std::move(g.second), ep = g.first](
                std::error_code ec, std::vector<value> replies) {
                if (auto self = w.lock()) {
                    self->on_part(c, its, ep, ec, replies);
                } else {
                    c->done = true;
                }
            });
    }
}

void cluster::on_part(const std::shared_ptr<call>& c, const std::vector<item>& items,
                      const redis_endpoint& node, std::error_code ec,
                      std::vector<value>& replies) {
    if (c->done) {
        return;
    }
    std::size_t expected = 0;
    for (const auto& it : items) {
        expected += 1 + (it.load ? 1 : 0) + (it.asking ? 1 : 0);
    }
    if (!ec && replies.size() != expected) {
        ec = make_error_code(errc::protocol);
    }
    // A part that was answered, or lost or timed out once sent, may have run.
    c->sent = c->sent || !ec || ec == errc::lost || ec == errc::timeout;
    if (ec) {
        c->ec = c->ec ? c->ec : ec;
    }
    std::size_t pos = 0;
    for (std::size_t k = 0; !ec && k < items.size(); ++k) {
        const item& it = items[k];
        pos += (it.load ? 1 : 0) + (it.asking ? 1 : 0);
        value& v = replies[pos++];
        if (auto r = parse_redirect(v, node)) {
            if (!r->ask) {
                // The slot has a new master: note it now, and read the whole map again (a
                // resharding moves many slots).
                auto m = std::find(masters_.begin(), masters_.end(), r->to);
                if (m == masters_.end() && masters_.size() < max_masters) {
                    masters_.push_back(r->to);
                    m = masters_.end() - 1;
                }
                if (m != masters_.end()) {
                    slot_master_[r->slot] = static_cast<std::uint16_t>(m - masters_.begin());
                }
                refresh();
            }
            c->again.push_back({it.index, r->to, r->ask, it.load, false});
        } else if (is_noscript(v) && !it.load) {
            c->again.push_back({it.index, it.to, it.asking, true, false});
        } else if (starts_with(v, "TRYAGAIN")) {
            // A multi-key command during a slot's migration: its keys are on both sides.
            c->again.push_back({it.index, it.to, it.asking, it.load, true});
        }
        // What goes again keeps this reply until then: a call out of rounds answers with it.
        c->replies[it.index] = std::move(v);
    }
    if (ec) {
        refresh();  // a master gone: the cluster may have promoted its replica
    }
    if (--c->parts > 0) {
        return;
    }
    if (c->ec) {
        finish(c, c->ec);
        return;
    }
    auto again = std::move(c->again);
    c->again.clear();
    if (again.empty()) {
        finish(c, {});
        return;
    }
    // MOVED, ASK and NOSCRIPT take a round each and are bounded; TRYAGAIN (a slot's keys on
    // both sides of a migration) is retried until the call's deadline.
    bool pause = false;
    for (const auto& it : again) {
        pause = pause || it.pause;
    }
    if (!pause && ++c->redirects > 8) {
        finish(c, make_error_code(errc::protocol));  // a redirection loop
        return;
    }
    if (!pause) {
        dispatch(c, std::move(again));
        return;
    }
    c->pause = std::make_shared<asio::steady_timer>(strand_, std::chrono::milliseconds{20});
    c->pause->async_wait([w = weak_from_this(), c, again = std::move(again)](
                             const boost::system::error_code& e) mutable {
        auto self = w.lock();
        if (e || !self || c->done) {
            return;
        }
        if (self->stopped_ || clock::now() >= c->deadline) {
            self->finish(c, make_error_code(self->stopped_ ? errc::unavailable : errc::timeout));
            return;
        }
        for (auto& it : again) {
            it.pause = false;
        }
        self->dispatch(c, std::move(again));
    });
}

void cluster::finish(const std::shared_ptr<call>& c, std::error_code ec) {
    if (c->done) {
        return;
    }
    c->done = true;
    if (c->pause) {
        c->pause->cancel();
    }
    // Some parts may have run on their masters while others failed: the caller must treat the
    // whole call as of unknown outcome (a sync is then resent under its batch, which the rooms
    // that ran answer without counting it again).
    if (ec && c->sent) {
        ec = make_error_code(errc::lost);
    }
    asio::post(strand_, [c, ec] {
        auto h = std::move(c->h);
        if (ec) {
            h(ec, {});
        } else {
            h({}, std::move(c->replies));
        }
    });
}

void cluster::refresh() {
    if (refreshing_ || stopped_) {
        return;
    }
    // A storm of MOVED replies reads the map once, not once per reply.
    if (known_ && clock::now() - last_refresh_ < std::chrono::milliseconds{100}) {
        return;
    }
    refreshing_ = true;
    std::vector<redis_endpoint> candidates = masters_;
    for (const auto& s : opt_.cluster_nodes) {
        if (std::find(candidates.begin(), candidates.end(), s) == candidates.end()) {
            candidates.push_back(s);
        }
    }
    ask_slots(std::move(candidates), 0);
}

void cluster::ask_slots(std::vector<redis_endpoint> candidates, std::size_t next) {
    if (stopped_) {
        refreshing_ = false;
        return;
    }
    if (next >= candidates.size()) {
        after_refresh(false);
        return;
    }
    redis_endpoint ep = candidates[next];
    node(ep)->execute(
        {{"CLUSTER", "SLOTS"}}, clock::now() + opt_.timeout,
        [w = weak_from_this(), candidates = std::move(candidates), next, ep](
            std::error_code ec, std::vector<value> replies) mutable {
            auto self = w.lock();
            if (!self) {
                return;
            }
            std::optional<std::vector<slot_range>> ranges;
            if (!ec && replies.size() == 1) {
                ranges = parse_cluster_slots(replies[0], ep);
            }
            if (!ranges || ranges->empty() || !self->apply_map(*ranges)) {
                self->ask_slots(std::move(candidates), next + 1);
                return;
            }
            self->after_refresh(true);
        });
}

bool cluster::apply_map(const std::vector<slot_range>& ranges) {
    std::vector<redis_endpoint> masters;
    std::map<std::string, std::uint16_t> index;
    std::vector<std::uint16_t> owner(cluster_slots, none);
    for (const auto& r : ranges) {
        auto [it, fresh] =
            index.try_emplace(name(r.master), static_cast<std::uint16_t>(masters.size()));
        if (fresh) {
            if (masters.size() >= max_masters) {
                return false;  // not a map to trust: keep the one we have
            }
            masters.push_back(r.master);
        }
        std::fill(owner.begin() + r.first, owner.begin() + r.last + 1, it->second);
    }
    masters_ = std::move(masters);
    slot_master_ = std::move(owner);
    // Connections to nodes that are neither a master now nor a seed go: a failed-over or
    // removed node is not dialled again and again, and a stray MOVED leaves nothing behind.
    for (auto it = nodes_.begin(); it != nodes_.end();) {
        const bool keep =
            index.contains(it->first) ||
            std::any_of(opt_.cluster_nodes.begin(), opt_.cluster_nodes.end(),
                        [&](const redis_endpoint& s) { return name(s) == it->first; });
        if (keep) {
            ++it;
        } else {
            it->second->stop();
            it = nodes_.erase(it);
        }
    }
    return true;
}

void cluster::after_refresh(bool ok) {
    refreshing_ = false;
    if (ok) {
        known_ = true;
        last_refresh_ = clock::now();
    }
    auto w = std::move(waiting_);
    waiting_.clear();
    for (auto& f : w) {
        f(ok || known_);
    }
}

}  // namespace waitroom::state::redis

#include "waitroom/state/redis_store.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>

#include <functional>

#include "redis_client.hpp"
#include "redis_cluster.hpp"
#include "redis_protocol.hpp"
#include "waitroom/config/config.hpp"
#include "waitroom/config/values.hpp"
#include "waitroom/state/error.hpp"

namespace waitroom::state {

namespace asio = boost::asio;
using redis::client;
using redis::cluster;
using redis::command;
using redis::value;

namespace {
// The grant of a room whose outcome this sync does not know (room_grant::ec): empty otherwise.
room_grant failed_grant(const std::string& room, std::error_code ec) {
    room_grant g;
    g.room = room;
    g.ec = ec;
    return g;
}
}  // namespace

std::optional<redis_options> redis_options_from_url(std::string_view url) {
    auto u = config::parse_redis_url(url);
    if (!u) {
        return std::nullopt;
    }
    redis_options o;
    o.host = u->host;
    o.port = u->port;
    o.db = u->db;
    o.username = u->username;
    o.password = u->password;
    return o;
}

redis_options redis_options_from(const config::state_settings& s) {
    redis_options o;
    o.host = s.redis_host;
    o.port = s.redis_port;
    o.db = s.redis_db;
    o.username = s.redis_username;
    o.password = s.redis_password;
    o.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(s.timeout);
    auto endpoints = [](const std::vector<std::string>& list) {
        std::vector<redis_endpoint> out;
        for (const auto& text : list) {
            if (auto hp = config::parse_host_port(text)) {
                out.push_back({hp->host, hp->port});
            }
        }
        return out;
    };
    o.sentinels = endpoints(s.sentinels);
    o.master_name = s.master_name;
    o.cluster_nodes = endpoints(s.cluster_nodes);
    return o;
}

std::string redis_store::key(const std::string& prefix, const std::string& room,
                             std::string_view what) {
    return redis::key(prefix, room, what);
}

struct redis_store::impl : std::enable_shared_from_this<impl> {
    impl(asio::any_io_executor ex, redis_options o)
        : strand(asio::make_strand(ex)), opt(std::move(o)) {
        if (opt.cluster_nodes.empty()) {
            cli = std::make_shared<client>(strand, opt);
        } else {
            clu = std::make_shared<cluster>(strand, opt);
        }
    }

    struct sync_call {
        node_report report;
        sync_handler done;
        sync_result res;
        client::clock::time_point deadline;
        int resends = 0;  // NOSCRIPT and stale answers each cost one more round trip, at most 2
    };

    asio::any_io_executor strand;
    redis_options opt;
    std::shared_ptr<client> cli;   // one server, or the master the sentinels name
    std::shared_ptr<cluster> clu;  // or a cluster: each room on its slot's master

    void execute(std::vector<command> cmds, client::clock::time_point deadline,
                 client::handler h) {
        if (clu) {
            clu->execute(std::move(cmds), deadline, std::move(h));
        } else {
            cli->execute(std::move(cmds), deadline, std::move(h));
        }
    }
    void start() { clu ? clu->start() : cli->start(); }
    void stop() { clu ? clu->stop() : cli->stop(); }

    // Sends the rooms `idx` of the call; after NOSCRIPT (the server lost its script cache) the
    // rooms that were refused go again, behind a SCRIPT LOAD in the same pipeline; a room the
    // script called stale (the server lost its memory: another epoch) goes again as a full
    // re-report of the node's live windows. Rooms that ran are not resent: their deltas are
    // applied. A Redis restarted empty costs both: three round trips in one sync.
    void send_sync(std::shared_ptr<sync_call> call, std::vector<std::size_t> idx, bool reload) {
        std::vector<command> cmds;
        if (reload) {
            cmds.push_back(redis::script_load_command());
        }
        for (std::size_t i : idx) {
            cmds.push_back(
                redis::sync_command(opt.key_prefix, call->report, call->report.rooms[i]));
        }
        execute(std::move(cmds), call->deadline,
                     [self = shared_from_this(), call, idx = std::move(idx), reload](
                         std::error_code ec, std::vector<value> replies) mutable {
                         self->on_sync(std::move(call), idx, reload, ec, replies);
                     });
    }

    void on_sync(std::shared_ptr<sync_call> call, const std::vector<std::size_t>& idx,
                 bool reloaded, std::error_code ec, const std::vector<value>& replies) {
        std::size_t first = reloaded ? 1 : 0;
        if (!ec && (replies.size() != idx.size() + first || (reloaded && replies[0].is_error()))) {
            ec = make_error_code(errc::protocol);
        }
        std::vector<std::size_t> again;
        bool reload = false;
        for (std::size_t k = 0; !ec && k < idx.size(); ++k) {
            const value& v = replies[first + k];
            std::size_t i = idx[k];
            if (redis::is_noscript(v) && !reloaded) {
                again.push_back(i);
                reload = true;
                continue;
            }
            room_report& r = call->report.rooms[i];
            room_grant& g = call->res.rooms[i];
            if (v.is_error()) {
                // This room's script failed (a key of the wrong type, Redis out of memory): the
                // other rooms' scripts ran, and their grants stand. The script writes nothing
                // before its checks, so this room is resent as it was, under its batch.
                g = failed_grant(r.room, make_error_code(errc::room_failed));
                continue;
            }
            if (auto bad = redis::parse_grant(v, r.room, call->report.now_ms, g)) {
                g = failed_grant(r.room, bad);  // the script ran: outcome unknown
                continue;
            }
            if (g.stale) {
                if (r.full) {
                    g = failed_grant(r.room, make_error_code(errc::protocol));  // never stale
                } else {
                    r.full = true;
                    again.push_back(i);
                }
            }
        }
        if (!ec && !again.empty() && ++call->resends > 2) {
            ec = make_error_code(errc::protocol);
        }
        if (ec && call->resends == 0) {
            call->done(sync_result{ec, {}});
            return;
        }
        if (ec) {
            // A later round follows rooms whose scripts ran in the first: their grants stand,
            // and whatever fails now (even a connection gone before this round was sent) leaves
            // this round's rooms of unknown outcome, never "nothing applied".
            if (ec == errc::unavailable) {
                ec = make_error_code(errc::lost);
            }
            for (std::size_t i : again.empty() ? idx : again) {
                call->res.rooms[i] = failed_grant(call->report.rooms[i].room, ec);
            }
            call->done(std::move(call->res));
            return;
        }
        if (!again.empty()) {
            send_sync(std::move(call), std::move(again), reload);
            return;
        }
        call->done(std::move(call->res));
    }

    // One script call; after NOSCRIPT (the server lost its script cache) once more behind a
    // SCRIPT LOAD in the same pipeline. `done` gets the error or the script's reply.
    using reply_handler = std::function<void(std::error_code, const value&)>;
    void eval_script(command cmd, client::clock::time_point deadline, reply_handler done,
                     bool reload = false) {
        std::vector<command> cmds;
        if (reload) {
            cmds.push_back(redis::script_load_command());
        }
        cmds.push_back(cmd);  // `cmd` stays for a resend
        execute(
            std::move(cmds), deadline,
            [self = shared_from_this(), cmd = std::move(cmd), deadline, done = std::move(done),
             reload](std::error_code ec, std::vector<value> replies) mutable {
                if (!ec && replies.size() != (reload ? 2u : 1u)) {
                    ec = make_error_code(errc::protocol);
                }
                if (!ec && !reload && redis::is_noscript(replies.back())) {
                    self->eval_script(std::move(cmd), deadline, std::move(done), true);
                    return;
                }
                if (!ec && reload && replies[0].is_error()) {
                    ec = make_error_code(errc::protocol);
                }
                static const value none;
                done(ec, ec ? none : replies.back());
            });
    }

    // Runs a script and hands `done` a Result whose `field` holds the reply as `parse` reads it,
    // or the error (the field then left at its default).
    template <class Result, class Field>
    void eval_into(command cmd, client::clock::time_point deadline, Field Result::*field,
                   std::error_code (*parse)(const value&, Field&),
                   std::function<void(Result)> done) {
        eval_script(std::move(cmd), deadline,
                    [field, parse, done = std::move(done)](std::error_code ec, const value& reply) {
                        Result res;
                        if (!ec) {
                            ec = parse(reply, res.*field);
                        }
                        if (ec) {
                            res = Result{};
                        }
                        res.ec = ec;
                        done(std::move(res));
                    });
    }

    void send_top_up(const top_up_request& req, top_up_handler done,
                     client::clock::time_point deadline) {
        eval_into(redis::top_up_command(opt.key_prefix, req), deadline, &top_up_result::granted,
                  &redis::parse_top_up, std::move(done));
    }

    void send_overrides(const override_write& w, override_handler done,
                        client::clock::time_point deadline) {
        eval_into(redis::overrides_command(opt.key_prefix, w), deadline,
                  &override_result::overrides, &redis::parse_overrides, std::move(done));
    }
};

redis_store::redis_store(asio::any_io_executor ex, redis_options opt)
    : impl_(std::make_shared<impl>(std::move(ex), std::move(opt))) {}

redis_store::~redis_store() {
    // The client frees its connection when the last handler holding it is gone; stopping here
    // fails what is pending instead of leaving it to its timeouts.
    asio::post(impl_->strand, [i = impl_] { i->stop(); });
}

void redis_store::start() {
    asio::post(impl_->strand, [i = impl_] { i->start(); });
}

void redis_store::stop() {
    asio::post(impl_->strand, [i = impl_] { i->stop(); });
}

void redis_store::sync(node_report report, sync_handler done) {
    auto call = std::make_shared<impl::sync_call>();
    call->deadline = client::clock::now() + impl_->opt.timeout;
    call->report = std::move(report);
    call->done = std::move(done);
    asio::post(impl_->strand, [i = impl_, call] {
        const std::size_t n = call->report.rooms.size();
        if (n == 0) {
            call->done(sync_result{});
            return;
        }
        call->res.rooms.resize(n);
        std::vector<std::size_t> idx(n);
        for (std::size_t k = 0; k < n; ++k) {
            idx[k] = k;
        }
        i->send_sync(call, std::move(idx), false);
    });
}

void redis_store::top_up(top_up_request req, top_up_handler done) {
    auto deadline = client::clock::now() + impl_->opt.timeout;
    asio::post(impl_->strand,
               [i = impl_, r = std::move(req), done = std::move(done), deadline]() mutable {
                   i->send_top_up(r, std::move(done), deadline);
               });
}

void redis_store::write_overrides(override_write w, override_handler done) {
    auto deadline = client::clock::now() + impl_->opt.timeout;
    asio::post(impl_->strand,
               [i = impl_, p = std::move(w), done = std::move(done), deadline]() mutable {
                   i->send_overrides(p, std::move(done), deadline);
               });
}

}  // namespace waitroom::state

#include "waitroom/gateway/room_filter.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/post.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/field.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <optional>
#include <random>
#include <string_view>
#include <utility>

#include "accept_encoding.hpp"
#include "client_ip.hpp"
#include "waitroom/cookie/challenge.hpp"
#include "waitroom/cookie/codec.hpp"
#include "waitroom/cookie/http_cookie.hpp"
#include "waitroom/cookie/network.hpp"

namespace waitroom::gateway {

namespace http = boost::beast::http;

namespace {

constexpr std::string_view command_header = "Cf-Waiting-Room-Command";
constexpr std::string_view check_in_header = "Waitroom-Check-In";
// Looked up in every admitted visitor's request: its field (unknown to Beast) is found once.
const http::field check_in_field = http::string_to_field(check_in_header);
// A solution of the visitor's challenge (rooms[].challenge), sent by the queue page's script or
// a JSON client.
constexpr std::string_view solution_header = "Waitroom-Solution";

// Bypass rules read request headers through this view of the parsed head.
class head_fields final : public room::header_lookup {
  public:
    explicit head_fields(const request_head& req) : req_(req) {}
    std::optional<std::string_view> find(std::string_view name) const override {
        auto it = req_.find(name);
        if (it == req_.end()) {
            return std::nullopt;
        }
        return std::string_view{it->value().data(), it->value().size()};
    }

  private:
    const request_head& req_;
};

// The metric handles of each room of `rt`, by room index (empty without metrics). Takes the
// metric set's lock: only at construction and on reload, never per request.
std::vector<const metrics::room_metrics*> resolve_metrics(metrics::metric_set* m,
                                                          const node_runtime& rt) {
    std::vector<const metrics::room_metrics*> out;
    if (m != nullptr) {
        for (const auto& r : rt.engine->rooms()) {
            out.push_back(&m->room(r.id()));
        }
    }
    return out;
}

const char* decision_name(room::action a) {
    switch (a) {
        case room::action::admit:
            return "admit";
        case room::action::queue:
            return "queue";
        case room::action::reject:
            return "reject";
        default:
            return "pass";
    }
}

// The last cookie opened on a connection. Opening is a pure function of the key ring, the
// room and the value, so an identical value under the same ring and room opens the same.
struct opened_cookie {
    std::shared_ptr<const cookie::key_ring> keys;
    std::string value;
    cookie::payload visitor;  // its room is the room it was opened for
    // cookie.bind: the address `visitor` was last accepted for, so that a returning visitor on
    // its keep-alive connection pays no keyed hash per request.
    std::optional<cookie::client_address> accepted_from;
};

// A request may carry several values of a room's cookie: a sibling subdomain can plant one for
// the parent domain, and the browser sends it beside the visitor's own, maybe first. Each is
// tried, but a header of many must not cost many decryptions: at most max_cookies_opened values
// reach AES-GCM, among at most max_cookies_read looked at (cheaper refusals: a malformed value,
// an unknown key id, another room's tag). Sending more gains a visitor nothing: the best of
// them is what they could have sent alone.
constexpr int max_cookies_opened = 4;
constexpr int max_cookies_read = 16;

// Refusals decided before any decryption, which cost little.
bool refused_cheaply(std::error_code ec) {
    return ec == cookie::errc::malformed || ec == cookie::errc::unknown_key ||
           ec == cookie::errc::wrong_room;
}

// cookie.bind: prefix. A cookie bound to another network than the request's is refused: its
// holder is a new visitor. One bound to none (sealed before bind was turned on) is accepted, and
// the answer binds it: turning bind on sends nobody to the back of the queue.
struct network_check {
    const cookie::key_ring& keys;
    const cookie::client_address& address;
    int refused = 0;  // cookies of the request refused for their network

    bool accepts(std::string_view value, const cookie::payload& p) {
        if (p.network == 0) {
            return true;
        }
        // Checked under the key that sealed the cookie, so that a key rotation unbinds nobody.
        const int index = keys.find(cookie::key_id_of(value));
        if (index >= 0 &&
            cookie::network_tag(keys, static_cast<std::size_t>(index), address) == p.network) {
            return true;
        }
        ++refused;
        return false;
    }
};

// The visitor in the request's values of the room's cookie (`name` in `header`), or null when
// none opens (or, with `network` set, none opens for the request's network). Of several that open,
// the one that stands best for the visitor (engine::standing) wins, the first on a tie. The
// connection's last one is kept in info.filter_state (the pointer stays good for this request), so
// a value is opened only when it changes.
const cookie::payload* open_cookie(const request_info& info,
                                   const std::shared_ptr<const node_runtime>& rt,
                                   const room::compiled_room& room, room::worker_state& ws,
                                   std::string_view header, std::string_view name,
                                   std::int64_t now_ms, network_check* network) {
    auto* last = static_cast<opened_cookie*>(info.filter_state.get());
    const bool memo_usable =
        last != nullptr && last->keys == rt->keys && last->visitor.room == room.id();
    // The best so far always lives in *last: null, or last->visitor.
    const cookie::payload* best = nullptr;
    std::optional<room::cookie_standing> best_standing;  // computed once a rival shows up
    int opened = 0;
    for (int read = 0; read < max_cookies_read; ++read) {
        auto value =
            cookie::next_cookie(header, name, memo_usable ? std::string_view{last->value} : "");
        if (!value) {
            break;
        }
        if (memo_usable && best == nullptr && last->value == *value) {
            if (network == nullptr || last->accepted_from == network->address ||
                network->accepts(*value, last->visitor)) {
                best = &last->visitor;
                if (network != nullptr) {
                    last->accepted_from = network->address;
                }
            }
            continue;
        }
        if (best != nullptr && last->value == *value) {
            continue;  // the same value again
        }
        if (opened == max_cookies_opened) {
            continue;  // only the memo may still match
        }
        // Any failure (forged, truncated, other room, unknown key) makes no visitor; the
        // engine applies the session and queue expiry rules itself.
        auto candidate = cookie::open(*rt->keys, *value, room.id());
        if (!candidate && refused_cheaply(candidate.error())) {
            continue;
        }
        ++opened;
        if (!candidate || (network != nullptr && !network->accepts(*value, candidate.value()))) {
            continue;
        }
        if (best != nullptr) {
            if (!best_standing) {
                best_standing = rt->engine->standing(room, ws, *best, now_ms);
            }
            auto standing = rt->engine->standing(room, ws, candidate.value(), now_ms);
            if (standing <= *best_standing) {
                continue;
            }
            best_standing = standing;
        }
        if (last == nullptr) {
            auto made = std::make_shared<opened_cookie>();
            last = made.get();
            info.filter_state = std::move(made);
        }
        last->keys = rt->keys;
        last->value.assign(*value);
        last->visitor = std::move(candidate.value());
        last->accepted_from.reset();
        if (network != nullptr) {
            last->accepted_from = network->address;  // accepted just above
        }
        best = &last->visitor;
    }
    return best;
}

header_list plain_text_headers() {
    return {{"Content-Type", "text/plain; charset=utf-8"}, {"Cache-Control", "no-store"}};
}

// Names the room's secret fields for removal before forwarding. Shares rt's ownership: no
// allocation, and nothing at all for a room without header rules.
void drop_secret_fields(filter_result& r, const std::shared_ptr<const node_runtime>& rt) {
    if (!rt->secret_fields.empty()) {
        r.drop_fields = std::shared_ptr<const std::vector<std::string>>(rt, &rt->secret_fields);
    }
}

}  // namespace

// One worker's private part: its counters, its page cache and its randomness. Touched only on
// that worker's thread, so the request path takes no lock.
struct room_filter::per_worker {
    per_worker(room::node_state& node, std::shared_ptr<const node_runtime> rt,
               boost::asio::any_io_executor ex)
        : ws(node),
          runtime(std::move(rt)),
          renderer(runtime->templates),
          random(std::random_device{}()),
          executor(std::move(ex)) {}

    room::worker_state ws;
    std::shared_ptr<const node_runtime> runtime;  // the last one decided under (its templates)
    pages::page_renderer renderer;
    room::rng random;
    boost::asio::any_io_executor executor;
    unsigned index = 0;
    std::vector<const metrics::room_metrics*> room_metrics;  // by room index of `runtime`
    std::int64_t flag_logged_ms = 0;   // when a flagged visitor was last logged
    std::uint64_t flags_unlogged = 0;  // flagged since, not logged
};

// What the answer to a request depends on besides the decision.
struct room_filter::answer_traits {
    bool tls = false;         // the visitor used https (the cookie's Secure attribute)
    bool wants_json = false;  // Accept: application/json, in a room that answers JSON
    // A check-in of the queue page's script (`Waitroom-Check-In: 1`): an admission is answered
    // 204 with the cookie, the origin not asked.
    bool check_in = false;
    cookie::client_address address;  // the visitor's (cookie.bind; the flagged visitor's log)
    // The challenge seed of the visitor's cookie as sent (a challenged visitor's), for the page.
    std::array<char, cookie::challenge_seed_size> seed{};
    bool has_seed = false;
    accept_encoding accepts;  // the request's Accept-Encoding: which form of a page it gets
};

// What on_response needs to know about an admitted request.
struct room_filter::admitted_context {
    std::shared_ptr<const node_runtime> runtime;
    const room::compiled_room* room = nullptr;
    cookie::payload cookie;
    std::string set_cookie;  // Set-Cookie value to add, "" when the cookie did not change
    answer_traits traits;
    unsigned worker = 0;
};

namespace {

// The network tag a cookie sealed for this answer carries: the visitor's under the encrypting
// key with cookie.bind: prefix, none otherwise.
std::uint32_t answer_network(const node_runtime& rt, const cookie::client_address& address) {
    return rt.cfg->cookie.bind == config::cookie_binding::prefix
               ? cookie::network_tag(*rt.keys, 0, address)
               : 0;
}

std::string address_text(const cookie::client_address& address) {
    std::string out = "unknown";
    if (address) {
        format_ip(*address, out);
    }
    return out;
}

// Every answer from memory may vary with Accept-Encoding, whichever form it is in.
void append_coding_fields(std::string& f, pages::content_coding coding) {
    if (coding == pages::content_coding::gzip) {
        f += "Content-Encoding: gzip\r\n";
    } else if (coding == pages::content_coding::br) {
        f += "Content-Encoding: br\r\n";
    }
    f += "Vary: Accept-Encoding\r\n";
}

// A challenged visitor's seed, beside the page (which is the same for every visitor): in a
// response header for JSON clients, and in a cookie the page's script reads and then drops. Both
// repeat what the admission cookie sent or set here ends with; the gateway checks a solution
// against that cookie alone, so neither gives a visitor any seed but their own.
void append_challenge_seed(std::string& f, std::string_view cookie_name, std::string_view seed,
                           std::chrono::seconds max_age, const config::cookie_attributes& attrs,
                           bool tls) {
    f += "Waitroom-Challenge-Seed: ";
    f += seed;
    f += "\r\nSet-Cookie: ";
    f += cookie_name;
    f += '=';
    f += seed;
    f += "; Max-Age=";
    char digits[24];
    const auto [end, ec] =
        std::to_chars(digits, digits + sizeof digits, std::max<std::int64_t>(0, max_age.count()));
    (void)ec;  // 24 digits hold any int64
    f.append(digits, end);
    f += "; Path=/; SameSite=Strict";
    if (cookie::resolve_attributes(attrs, tls).secure) {
        f += "; Secure";
    }
    f += "\r\n";
}

}  // namespace

room_filter::room_filter(std::shared_ptr<const runtime_slot> runtimes, room::node_state& node,
                         state::sync_task& sync, const util::clock& clock,
                         std::vector<boost::asio::any_io_executor> executors,
                         metrics::metric_set* metrics)
    : node_(node), sync_(sync), clock_(clock), metrics_(metrics), runtimes_(std::move(runtimes)) {
    const auto runtime = runtimes_->load();
    for (unsigned i = 0; i < executors.size(); ++i) {
        workers_.push_back(std::make_unique<per_worker>(node_, runtime, executors[i]));
        workers_.back()->index = i;
        workers_.back()->room_metrics = resolve_metrics(metrics_, *runtime);
    }
}

room_filter::~room_filter() = default;

std::shared_ptr<const node_runtime> room_filter::runtime() const {
    return runtimes_->load();
}

room::worker_state& room_filter::room_counters(unsigned w) {
    return worker(w).ws;
}

room_filter::per_worker& room_filter::worker(unsigned index) {
    return *workers_[index % workers_.size()];
}

room_filter::per_worker& room_filter::worker(unsigned index,
                                             const std::shared_ptr<const node_runtime>& rt) {
    per_worker& w = worker(index);
    // A reload is noticed by one pointer compare per request; the templates and metric
    // handles are looked up again only then.
    if (rt != w.runtime) {
        w.runtime = rt;
        w.renderer.set_templates(rt->templates);
        w.room_metrics = resolve_metrics(metrics_, *rt);
    }
    return w;
}

void room_filter::on_request(const request_head& req, const request_info& info, completion done) {
    // Kept alive across an asynchronous top-up.
    auto rt = info.runtime ? info.runtime : runtimes_->load();
    per_worker& w = worker(info.worker, rt);
    const room::engine& eng = *rt->engine;

    // The session read the target and Host once; a filter called on its own reads them here.
    const util::canonical_request* canonical = info.request;
    std::optional<util::canonical_request> own;
    util::target_buffers own_buffers;
    if (canonical == nullptr) {
        auto host = req.find(http::field::host);
        std::string_view host_value = host != req.end() ? host->value() : std::string_view{};
        own = util::canonicalize_request(req.method_string(), req.target(),
                                         host != req.end() ? &host_value : nullptr,
                                         req.version() >= 11, own_buffers);
        canonical = &*own;
    }
    if (canonical->status != util::target_status::ok) {
        auto r = filter_result::respond(400, plain_text_headers(), "400 Bad Request\n");
        r.decision = "pass";
        done(std::move(r));
        return;
    }

    head_fields headers{req};
    room::request_view view;
    view.method = req.method_string();
    view.host = canonical->host.name;
    view.path = canonical->target.match_path;
    view.path_to_first_param = util::path_to_first_param(canonical->target.path);
    if (info.client_ip_bytes) {
        view.client_ip = *info.client_ip_bytes;
        view.has_client_ip = true;
    }
    view.headers = &headers;

    auto routed = eng.route(view);
    if (routed.what == room::route_action::misdirected) {
        auto r = filter_result::respond(
            421, plain_text_headers(),
            "421 Misdirected Request\nThis server has no site for that host name.\n");
        r.decision = "misdirected";
        done(std::move(r));
        return;
    }
    if (routed.what == room::route_action::pass || routed.room == nullptr) {
        auto r = filter_result::pass();
        r.decision = "pass";
        drop_secret_fields(r, rt);
        if (routed.room != nullptr && routed.reason == room::pass_reason::bypassed) {
            r.room = routed.room->id();
            r.decision = "bypass";
            if (routed.room->index() < w.room_metrics.size()) {
                w.room_metrics[routed.room->index()]->bypassed.inc(w.index);
            }
        }
        done(std::move(r));
        return;
    }
    const room::compiled_room& room = *routed.room;

    answer_traits traits;
    traits.tls = info.tls;
    traits.wants_json =
        room.config().json_response_enabled && req[http::field::accept] == "application/json";
    traits.address = info.client_ip_bytes;
    // Every Accept-Encoding line of the request counts (a list may be split over several).
    for (auto it = req.find(http::field::accept_encoding); it != req.end(); ++it) {
        if ((*it).name() == http::field::accept_encoding) {
            traits.accepts.read((*it).value());
        }
    }

    const std::int64_t now_ms = util::unix_ms(clock_.now());
    std::optional<network_check> network;
    if (rt->cfg->cookie.bind == config::cookie_binding::prefix) {
        network.emplace(network_check{*rt->keys, traits.address});
    }
    const cookie::payload* visitor =
        open_cookie(info, rt, room, w.ws, req[http::field::cookie], rt->cookie_names[room.index()],
                    now_ms, network ? &*network : nullptr);
    // Only a GET of a visitor the room knows (the queue page's own script): a cookieless or
    // non-GET request is decided and answered as any other.
    if (visitor != nullptr && req.method() == http::verb::get) {
        auto check_in = req.find(check_in_field, check_in_header);
        traits.check_in = check_in != req.end() && (*check_in).value() == "1";
    }
    if (network && network->refused > 0 && room.index() < w.room_metrics.size()) {
        w.room_metrics[room.index()]->network_changed.inc(w.index);
    }
    // A challenged visitor: its challenge is bound to the cookie value it sent (the opened one
    // is the connection's memo), and a solution of it is checked here, with one hash.
    bool solved = false;
    if (visitor != nullptr && room::challenged(*visitor)) {
        const auto seed = cookie::challenge_seed(
            static_cast<const opened_cookie*>(info.filter_state.get())->value);
        if (seed.size() == traits.seed.size()) {
            std::copy(seed.begin(), seed.end(), traits.seed.begin());
            traits.has_seed = true;
        }
        const auto solution = req[solution_header];
        if (!solution.empty() && room.config().challenge.enabled) {
            solved = cookie::solves(seed, solution, room::challenge_bits(*visitor));
            if (!solved && room.index() < w.room_metrics.size()) {
                w.room_metrics[room.index()]->challenge_failures.inc(w.index);
            }
        }
    }

    auto d = eng.decide(room, w.ws, visitor, now_ms, w.random, room::attempt::first, solved);
    if (d.what != room::action::wait_for_slots) {
        apply(w, rt, d, visitor, traits, now_ms, done);
        return;
    }

    // The node's slots ran out while the store may have more: one asynchronous top-up, which
    // only this new or queued visitor waits for. The decision resumes on the worker's thread,
    // with its own copy of the visitor (the connection's may change meanwhile).
    std::optional<cookie::payload> kept;
    if (visitor != nullptr) {
        kept = *visitor;
    }
    top_up_then_decide(rt, room, std::move(kept), traits, solved, w.index, now_ms,
                       room::attempt::after_top_up, std::move(done));
}

void room_filter::top_up_then_decide(std::shared_ptr<const node_runtime> rt,
                                     const room::compiled_room& room,
                                     std::optional<cookie::payload> visitor,
                                     const answer_traits& traits, bool solved, unsigned index,
                                     std::int64_t now_ms, room::attempt next, completion done) {
    const auto ex = worker(index).executor;
    sync_.top_up(
        room.id(), now_ms,
        [this, rt = std::move(rt), &room, visitor = std::move(visitor), traits, solved, index, ex,
         next, done = std::move(done)](bool brought) mutable {
            // A top-up that brought nothing (the store had none, or failed) is the last try:
            // the suspension of top-ups it set may have passed already when its answer was slow.
            const room::attempt at = brought ? next : room::attempt::after_second_top_up;
            boost::asio::post(ex, [this, rt = std::move(rt), &room, visitor = std::move(visitor),
                                   traits, solved, index, at, done = std::move(done)]() mutable {
                per_worker& w = worker(index, rt);
                const std::int64_t at_ms = util::unix_ms(clock_.now());
                auto again = rt->engine->decide(room, w.ws, visitor ? &*visitor : nullptr, at_ms,
                                                w.random, at, solved);
                if (again.what == room::action::wait_for_slots) {
                    // Another worker's visitor took what the top-up brought: once more.
                    top_up_then_decide(std::move(rt), room, std::move(visitor), traits, solved,
                                       index, at_ms, room::attempt::after_second_top_up,
                                       std::move(done));
                    return;
                }
                apply(w, rt, again, visitor ? &*visitor : nullptr, traits, at_ms, done);
            });
        });
}

void room_filter::apply(per_worker& w, const std::shared_ptr<const node_runtime>& rt,
                        const room::decision& d, const cookie::payload* visitor,
                        const answer_traits& t, std::int64_t now_ms, completion& done) {
    if (d.what == room::action::pass || d.room == nullptr) {
        auto r = filter_result::pass();
        r.decision = "pass";
        drop_secret_fields(r, rt);
        if (d.room != nullptr) {
            r.room = d.room->id();
        }
        done(std::move(r));
        return;
    }
    count(w, d, visitor);
    const room::compiled_room& room = *d.room;
    const config::room& rc = room.config();
    if (d.flagged_now) {
        // At most one line a second per worker: copies of one cookie can each be flagged, and a
        // flood of them must not become a flood of log lines.
        if (now_ms - w.flag_logged_ms >= 1000) {
            spdlog::warn(
                "room {}: visitor {} flagged for refreshing far faster than its Refresh "
                "(abuse_action: {}; {} more flagged on this worker since the last such line)",
                room.id(), address_text(t.address), room::to_string(rc.abuse), w.flags_unlogged);
            w.flag_logged_ms = now_ms;
            w.flags_unlogged = 0;
        } else {
            ++w.flags_unlogged;
        }
    }

    // The cookie this answer sets, sealed on the stack ("" when none): a queued answer writes
    // its Set-Cookie straight into its head.
    std::array<char, cookie::max_sealed_size> sealed_buf;
    std::string_view sealed;
    auto seed = t.seed;  // the challenge's seed: of the cookie sent, or of the one sealed now
    bool has_seed = t.has_seed;
    const bool sets = d.what == room::action::admit || d.what == room::action::queue;
    // A cookie sealed before cookie.bind was turned on is bound by this answer.
    const bool binds = sets && visitor != nullptr && visitor->network == 0 &&
                       rt->cfg->cookie.bind == config::cookie_binding::prefix;
    if (sets && (d.cookie_changed || binds)) {
        cookie::payload sealing = d.cookie;
        sealing.network = answer_network(*rt, t.address);
        if (auto n = cookie::encode_to(*rt->keys, sealing, sealed_buf)) {
            sealed = std::string_view{sealed_buf.data(), *n};
            const auto sealed_seed = cookie::challenge_seed(sealed);
            has_seed = sealed_seed.size() == seed.size();
            if (has_seed) {
                std::copy(sealed_seed.begin(), sealed_seed.end(), seed.begin());
            }
        }
    }
    const std::chrono::seconds cookie_age{d.cookie_max_age_seconds};
    auto set_cookie_text = [&] {
        return sealed.empty() ? std::string{}
                              : cookie::set_cookie_value(rt->cookie_names[room.index()], sealed,
                                                         cookie_age, rc.cookie_attrs, t.tls);
    };

    if (d.what == room::action::admit && t.check_in) {
        // The queue page's script asking whether it is the visitor's turn: yes, with the
        // cookie, and the page itself is loaded next. The origin sees no request it did not ask
        // for (a replayed form, a one-time link), and an admitted visitor in a background tab
        // keeps its session alive the same way.
        header_list headers;
        headers.emplace_back("Cache-Control", "no-store");
        if (!sealed.empty()) {
            headers.emplace_back("Set-Cookie", set_cookie_text());
        }
        auto r = filter_result::respond(204, std::move(headers), std::string{});
        r.room = room.id();
        r.decision = "admit";
        done(std::move(r));
        return;
    }
    if (d.what == room::action::admit) {
        auto r = filter_result::pass();
        // The cookie is added in on_response (after any revoke command of the origin). A
        // returning visitor whose cookie did not change, in a room that takes no revoke, needs
        // nothing there: no context is allocated for the most common request.
        if (!sealed.empty() || rc.revoke_enabled) {
            auto ctx = std::make_shared<admitted_context>();
            ctx->runtime = rt;
            ctx->room = &room;
            ctx->cookie = d.cookie;
            ctx->set_cookie = set_cookie_text();
            ctx->traits = t;
            ctx->worker = w.index;
            r.context = std::move(ctx);
        }
        drop_secret_fields(r, rt);
        r.room = room.id();
        r.decision = "admit";
        done(std::move(r));
        return;
    }

    pages::page_key key{node_.version(), static_cast<std::uint64_t>(d.cookie.bucket)};
    pages::page_body body;
    if (d.what == room::action::reject) {
        body = t.wants_json ? w.renderer.json(room.id(), key, d.page)
                            : w.renderer.reject_page(room.id(), key, d.page);
    } else if (t.wants_json) {
        body = w.renderer.json(room.id(), key, d.page);
    } else {
        // The decision's page model says whether an event runs; only then is its name (for
        // its custom page) looked up, at the decision's own time: no second clock read.
        std::string_view event_name;
        if (d.page.is_event_active || d.page.is_event_prequeueing) {
            auto phase = room.phase_at(now_ms);
            if (phase.event != nullptr && (phase.active || phase.prequeueing)) {
                event_name = phase.event->name;
            }
        }
        body = w.renderer.queue_page(room.id(), event_name, key, d.page);
    }
    // The cached page itself goes out, shared, in the form the visitor accepts best (each form
    // compressed once, when the page was rendered): no copy and no compression per request. Its
    // fields are written at once, in the order they go out, with the cookie sealed straight
    // into them: one allocation for a new visitor's whole answer, no list of strings.
    const auto coding = t.accepts.best(body->has(pages::content_coding::gzip),
                                       body->has(pages::content_coding::br));
    auto r = filter_result::respond(rc.queueing_status_code, header_list{},
                                    pages::form_of(body, coding));
    std::string& f = r.fields;
    f.reserve(200 + (sealed.empty() ? 0 : sealed.size() + 120) + (has_seed ? 160 : 0));
    f += "Cache-Control: no-store\r\n";
    if (d.what != room::action::reject) {
        char digits[24];
        const auto [end, ec] = std::to_chars(digits, digits + sizeof digits, d.refresh_seconds);
        (void)ec;  // 24 digits hold any int64
        f += "Refresh: ";
        f.append(digits, end);
        f += "\r\n";
    }
    f += t.wants_json ? "Content-Type: application/json\r\n"
                      : "Content-Type: text/html; charset=utf-8\r\n";
    append_coding_fields(f, coding);
    if (!sealed.empty()) {
        f += "Set-Cookie: ";
        cookie::append_set_cookie_value(f, rt->cookie_names[room.index()], sealed, cookie_age,
                                        rc.cookie_attrs, t.tls);
        f += "\r\n";
    }
    if (d.page.challenge_required && has_seed) {
        append_challenge_seed(f, rt->challenge_cookie_names[room.index()],
                              {seed.data(), seed.size()}, cookie_age, rc.cookie_attrs, t.tls);
    }
    r.room = room.id();
    r.decision = decision_name(d.what);
    done(std::move(r));
}

void room_filter::count(per_worker& w, const room::decision& d, const cookie::payload* visitor) {
    if (d.room == nullptr || d.room->index() >= w.room_metrics.size()) {
        return;
    }
    const metrics::room_metrics& m = *w.room_metrics[d.room->index()];
    const unsigned slot = w.index;
    // The decision keeps a live session's accepted_at and a queued visitor's ticket; anything
    // else is a new admission, a new place in the queue, or the end of a session.
    const bool had_session = visitor != nullptr && visitor->accepted_at > 0;
    if (had_session && d.cookie.accepted_at != visitor->accepted_at) {
        m.sessions_expired.inc(slot);
    }
    switch (d.what) {
        case room::action::admit:
            if (visitor == nullptr || visitor->accepted_at != d.cookie.accepted_at) {
                m.admitted.inc(slot);
            }
            break;
        case room::action::queue:
            if (d.page.challenge_required) {
                if (d.challenge_issued) {
                    m.challenges_issued.inc(slot);
                }
            } else if (d.challenge_solved || visitor == nullptr || had_session ||
                       visitor->last_check_in == 0 || visitor->ticket != d.cookie.ticket) {
                m.queued.inc(slot);
            }
            break;
        case room::action::reject:
            m.rejected.inc(slot);
            break;
        default:
            break;
    }
    if (d.flagged_now) {
        m.flagged.inc(slot);
    }
    if (d.challenge_solved) {
        m.challenges_solved.inc(slot);
    }
    // Analytics: a handful of relaxed adds into this worker's own cells, no lock, nothing built.
    if (d.ended_session_ms >= 0) {
        m.session_duration.observe(slot, static_cast<double>(d.ended_session_ms) / 1000.0);
    }
    const room::queue_admission& a = d.admission;
    if (d.what == room::action::admit && a.from_queue) {
        m.admitted_from_queue.inc(slot);
        if (a.overtook) {
            m.admitted_out_of_order.inc(slot);
        }
        m.queue_wait.observe(slot, static_cast<double>(a.waited_ms) / 1000.0);
        if (a.estimated) {
            m.estimate_error.observe(slot, static_cast<double>(a.error_ms) / 1000.0);
        }
    }
}

void room_filter::on_response(response_head& res, const std::shared_ptr<void>& context) {
    // The origin command never reaches the client, whether or not the room acts on it.
    bool revoke = false;
    res.remove_if([&](const auto& f) {
        if (!boost::beast::iequals(f.name_string(), command_header)) {
            return false;
        }
        revoke = revoke || boost::beast::iequals(f.value(), "revoke");
        return true;
    });
    if (!context) {
        return;
    }
    auto& c = *static_cast<admitted_context*>(context.get());
    if (revoke && c.room->config().revoke_enabled) {
        per_worker& w = worker(c.worker);
        auto now_ms = util::unix_ms(clock_.now());
        auto p = c.runtime->engine->revoke(*c.room, w.ws, c.cookie, now_ms, w.random);
        p.network = answer_network(*c.runtime, c.traits.address);
        if (c.room->index() < w.room_metrics.size() &&
            w.runtime->engine.get() == c.runtime->engine.get()) {
            const metrics::room_metrics& m = *w.room_metrics[c.room->index()];
            m.revoked.inc(c.worker);
            m.session_duration.observe(c.worker, static_cast<double>(std::max<std::int64_t>(
                                                     0, now_ms - c.cookie.accepted_at)) /
                                                     1000.0);
        }
        auto sealed = cookie::encode(*c.runtime->keys, p);
        if (sealed) {
            res.insert(http::field::set_cookie,
                       cookie::set_cookie_value(c.runtime->cookie_names[c.room->index()], *sealed,
                                                std::chrono::duration_cast<std::chrono::seconds>(
                                                    c.room->config().session_duration),
                                                c.room->config().cookie_attrs, c.traits.tls));
        }
        return;
    }
    if (!c.set_cookie.empty()) {
        res.insert(http::field::set_cookie, c.set_cookie);
    }
}

void room_filter::on_origin_error(header_list& headers, const std::shared_ptr<void>& context) {
    // The decision counted this visitor (a new admission holds a place until its window ends):
    // the gateway's own error answer carries the cookie, so the place is the visitor's and the
    // next try passes as admitted instead of taking a second place or queueing.
    if (!context) {
        return;
    }
    const auto& c = *static_cast<const admitted_context*>(context.get());
    if (!c.set_cookie.empty()) {
        headers.emplace_back("Set-Cookie", c.set_cookie);
    }
}

}  // namespace waitroom::gateway

#include "waitroom/gateway/room_admin_backend.hpp"

#include <algorithm>
#include <cctype>
#include <string>

namespace waitroom::gateway {

namespace {

admin::room_queue_status to_admin(room::room_status_kind k) {
    switch (k) {
        case room::room_status_kind::queueing:
            return admin::room_queue_status::queueing;
        case room::room_status_kind::event_prequeueing:
            return admin::room_queue_status::event_prequeueing;
        case room::room_status_kind::suspended:
            return admin::room_queue_status::suspended;
        case room::room_status_kind::not_queueing:
            break;
    }
    return admin::room_queue_status::not_queueing;
}

}  // namespace

room_admin_backend::room_admin_backend(const room_filter& filter, room::node_state& node,
                                       const state::sync_task& sync,
                                       std::shared_ptr<room::room_overrides> overrides,
                                       std::shared_ptr<metrics::metric_set> metrics,
                                       unsigned metrics_slot, const util::clock& clock,
                                       state::store* store)
    : filter_(filter),
      node_(node),
      sync_(sync),
      overrides_(std::move(overrides)),
      metrics_(std::move(metrics)),
      slot_(metrics_slot),
      clock_(clock),
      store_(store) {}

admin::admin_room_status room_admin_backend::status_of(const room::engine& eng,
                                                       const room::compiled_room& r,
                                                       const room::state_snapshot& snap,
                                                       std::int64_t now_ms, bool degraded) const {
    static const room::room_state unknown;
    const room::room_state* st = snap.find(r.id());
    const room::room_state& state = st != nullptr ? *st : unknown;
    const auto cf = eng.status(r, state, now_ms);
    const auto phase = r.phase_at(now_ms);
    const auto s = r.settings_at(phase);  // run-time switches applied

    admin::admin_room_status out;
    out.id = r.id();
    out.status = to_admin(cf.status);
    out.event_id = phase.event_id;
    out.estimated_queued_users = cf.estimated_queued_users;
    out.estimated_total_active_users = cf.estimated_total_active_users;
    out.max_estimated_time_minutes = cf.max_estimated_time_minutes;
    out.total_active_users = s.total_active_users;
    out.new_users_per_minute = s.new_users_per_minute;
    out.admitted_this_minute = state.counts().admitted_last_minute;
    out.nodes = state.nodes();
    out.degraded = degraded || sync_.failing_alone(r.id());
    out.queue_all = s.queue_all;
    out.suspended = s.suspended;
    return out;
}

std::vector<admin::admin_room_status> room_admin_backend::rooms() {
    auto rt = filter_.runtime();
    auto snap = node_.snapshot();
    const std::int64_t now_ms = util::unix_ms(clock_.now());
    const bool degraded = sync_.degraded(now_ms);
    std::vector<admin::admin_room_status> out;
    for (const auto& r : rt->engine->rooms()) {
        out.push_back(status_of(*rt->engine, r, *snap, now_ms, degraded));
    }
    return out;
}

std::optional<admin::admin_room_status> room_admin_backend::room_status(std::string_view id) {
    auto rt = filter_.runtime();
    const room::compiled_room* r = rt->engine->find(id);
    if (r == nullptr) {
        return std::nullopt;
    }
    const std::int64_t now_ms = util::unix_ms(clock_.now());
    return status_of(*rt->engine, *r, *node_.snapshot(), now_ms, sync_.degraded(now_ms));
}

void room_admin_backend::patch_room(std::string_view id, const admin::admin_room_patch& patch,
                                    patch_done done) {
    auto rt = filter_.runtime();
    const room::compiled_room* r = rt->engine->find(id);
    if (r == nullptr || !overrides_) {
        admin::admin_patch_outcome o;
        o.result = r == nullptr ? admin::admin_patch_result::unknown_room
                                : admin::admin_patch_result::failed;
        o.message = r == nullptr ? "" : "run-time room changes are not available";
        done(std::move(o));
        return;
    }
    // The engine reads these switches on every decision: every worker sees them at its next
    // request.
    std::string room_id = r->id();
    if (store_ == nullptr) {
        const room::room_switches& sw = overrides_->entry(room_id);
        overrides_->write(room_id, patch.queue_all ? patch.queue_all : sw.queue_all(),
                          patch.suspended ? patch.suspended : sw.suspended());
        admin::admin_patch_outcome o;
        o.status = room_status(room_id);
        done(std::move(o));
        return;
    }
    // The store first: other nodes get it from there at their next sync, and a change the store
    // did not take is not half made (on this node only, undone by the next sync).
    state::override_write w;
    w.room = room_id;
    w.queue_all = state::set_or_keep(patch.queue_all);
    w.suspended = state::set_or_keep(patch.suspended);
    store_->write_overrides(
        std::move(w), [this, room_id, done = std::move(done)](state::override_result res) {
            admin::admin_patch_outcome o;
            if (res.ec) {
                o.result = admin::admin_patch_result::failed;
                o.message =
                    "cannot write to the state store (" + res.ec.message() + "); nothing changed";
                done(std::move(o));
                return;
            }
            // What the store holds now (it may have had switches this node had not synced yet).
            overrides_->write(room_id, res.overrides.queue_all, res.overrides.suspended);
            o.status = room_status(room_id);
            done(std::move(o));
        });
}

admin::admin_preview room_admin_backend::preview_page(std::string_view id,
                                                      admin::admin_preview_state state,
                                                      std::string_view language) {
    admin::admin_preview out;
    auto rt = filter_.runtime();
    const room::compiled_room* r = rt->engine ? rt->engine->find(id) : nullptr;
    if (r == nullptr || !rt->templates) {
        out.result = admin::admin_preview_result::unknown_room;
        return out;
    }
    // Only a built-in language, named exactly (any case): a preview shows what is there.
    std::string_view builtin;
    for (const auto lang : pages::page_templates::languages()) {
        out.languages.emplace_back(lang);
        if (std::equal(lang.begin(), lang.end(), language.begin(), language.end(),
                       [](char a, char b) {
                           return std::tolower(static_cast<unsigned char>(a)) ==
                                  std::tolower(static_cast<unsigned char>(b));
                       })) {
            builtin = lang;
        }
    }
    if (!language.empty() && builtin.empty()) {
        out.result = admin::admin_preview_result::unknown_language;
        return out;
    }
    out.languages.clear();
    const auto page_state = state == admin::admin_preview_state::event ? pages::preview_state::event
                            : state == admin::admin_preview_state::reject
                                ? pages::preview_state::reject
                                : pages::preview_state::queued;
    out.html = rt->templates->preview(r->config(), page_state, builtin);
    return out;
}

admin::admin_readiness room_admin_backend::readiness() {
    admin::admin_readiness out;
    if (draining_.load(std::memory_order_acquire)) {
        out.ready = false;
        out.reason = "draining";
    } else if (sync_.degraded(util::unix_ms(clock_.now()))) {
        out.ready = false;
        out.reason = "degraded: state store unreachable";
    }
    return out;
}

std::vector<std::pair<std::string, metrics::room_reading>> room_admin_backend::refresh_locked(
    std::int64_t now_ms) {
    std::vector<std::pair<std::string, metrics::room_reading>> out;
    auto rt = filter_.runtime();
    auto snap = node_.snapshot();
    const bool degraded = sync_.degraded(now_ms);
    // Node-wide gauges are set from this backend's slot only (see metrics::gauge).
    for (const auto& r : rt->engine->rooms()) {
        const auto s = status_of(*rt->engine, r, *snap, now_ms, degraded);
        const auto& m = metrics_->room(r.id());
        m.active_users.set(slot_, s.estimated_total_active_users);
        m.queued_users.set(slot_, s.estimated_queued_users);
        m.estimated_wait_seconds.set(slot_, s.max_estimated_time_minutes * 60);
        m.lease_size.set(slot_, node_.pool(r.id()).available());
        // The sync task counts top-ups and abandonments per room; the counters take what they
        // gained since the last look (store calls, never on the fast path to count them there).
        const auto catch_up = [&](std::uint64_t total, std::uint64_t& seen,
                                  const metrics::counter& c) {
            if (total > seen) {
                c.inc(slot_, static_cast<std::int64_t>(total - seen));
                seen = total;
            }
        };
        catch_up(sync_.top_ups(r.id()), top_ups_reported_[r.id()], m.top_ups);
        catch_up(sync_.abandoned(r.id()), abandoned_reported_[r.id()], m.abandoned);
        catch_up(sync_.room_failures(r.id()), room_failures_reported_[r.id()], m.store_failures);
        auto reading = metrics::read_room(m);
        reading.active_users = s.estimated_total_active_users;
        reading.queued_users = s.estimated_queued_users;
        out.emplace_back(r.id(), std::move(reading));
    }
    metrics_->store_degraded().set(slot_, degraded ? 1 : 0);
    const std::uint64_t failures = sync_.failed_syncs();
    if (failures > failures_reported_) {
        metrics_->store_failures().inc(slot_,
                                       static_cast<std::int64_t>(failures - failures_reported_));
        failures_reported_ = failures;
    }
    return out;
}

std::string room_admin_backend::metrics_text() {
    if (!metrics_) {
        return {};
    }
    std::lock_guard lock(scrape_mu_);
    refresh_locked(util::unix_ms(clock_.now()));
    return metrics_->text();
}

void room_admin_backend::record_history() {
    if (!metrics_) {
        return;
    }
    std::unique_lock lock(scrape_mu_, std::try_to_lock);
    if (!lock.owns_lock()) {
        return;  // the next sync records it: a row sums whatever changed since the last reading
    }
    const std::int64_t now = util::unix_ms(clock_.now());
    auto readings = refresh_locked(now);
    // A room a reload dropped takes its rows with it.
    std::erase_if(history_, [&](const auto& h) {
        return std::none_of(readings.begin(), readings.end(),
                            [&](const auto& r) { return r.first == h.first; });
    });
    for (auto& [id, reading] : readings) {
        history_[id].record(now, std::move(reading));
    }
}

admin::admin_analytics room_admin_backend::analytics(std::string_view id, std::int64_t from_ms,
                                                     std::int64_t to_ms) {
    admin::admin_analytics out;
    auto rt = filter_.runtime();
    if (rt->engine->find(id) == nullptr) {
        return out;
    }
    out.found = true;
    std::lock_guard lock(scrape_mu_);
    if (auto it = history_.find(id); it != history_.end()) {
        out.rows = it->second.rows(from_ms, to_ms);
    }
    return out;
}

std::optional<admin::admin_event_span> room_admin_backend::event_span(std::string_view id,
                                                                      std::string_view event) {
    auto rt = filter_.runtime();
    const room::compiled_room* r = rt->engine->find(id);
    if (r == nullptr) {
        return std::nullopt;
    }
    const auto ms = [](config::time_point t) {
        return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
    };
    for (const auto& ev : r->config().events) {
        if (ev.name == event) {
            // The loader refuses a prequeue after the start.
            return admin::admin_event_span{ms(ev.prequeue_start_time.value_or(ev.event_start_time)),
                                           ms(ev.event_end_time)};
        }
    }
    return std::nullopt;
}

std::int64_t room_admin_backend::now_ms() {
    return util::unix_ms(clock_.now());
}

admin::admin_origins room_admin_backend::origins() {
    admin::admin_origins out;
    const auto rt = filter_.runtime();
    const auto now = health_clock::now();
    for (const auto& m : rt->origins->members()) {
        admin::admin_origin_server s;
        s.url = m.server.url;
        s.weight = m.server.weight;
        s.healthy = m.health->available(now);
        s.ejected = m.health->ejected(now);
        s.checks_pass = m.health->checks_pass();
        if (s.ejected) {
            s.ejected_for_ms =
                std::chrono::ceil<std::chrono::milliseconds>(m.health->ejected_until() - now)
                    .count();
        }
        s.ejections = m.health->ejections();
        if (m.metrics != nullptr) {
            s.requests = m.metrics->requests.value();
            s.errors = m.metrics->errors.value();
            const auto reading = m.metrics->response.read();
            if (reading.count() > 0) {
                s.response_p50_seconds = metrics::quantile(reading, 0.5);
                s.response_p90_seconds = metrics::quantile(reading, 0.9);
            }
        }
        out.servers.push_back(std::move(s));
    }
    out.available = rt->origins->any_available(now);
    return out;
}

}  // namespace waitroom::gateway

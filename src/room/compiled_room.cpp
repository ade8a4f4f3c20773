// A room at one instant: the event phase it is in, the settings in force (event fields and
// run-time switches applied) and the limits they give.
#include "admission_rules.hpp"
#include "waitroom/room/engine.hpp"

#include <algorithm>

namespace waitroom::room {

using rules::make_limits;
using rules::to_ms;

std::uint32_t event_id_of(const config::event& ev) {
    std::uint32_t h = 2166136261u;
    for (unsigned char c : ev.name) {
        h ^= c;
        h *= 16777619u;
    }
    return h == 0 ? 1 : h;
}

std::string_view to_string(room_status_kind k) {
    switch (k) {
        case room_status_kind::not_queueing:
            return "not_queueing";
        case room_status_kind::queueing:
            return "queueing";
        case room_status_kind::event_prequeueing:
            return "event_prequeueing";
        case room_status_kind::suspended:
            return "suspended";
    }
    return "not_queueing";
}

std::string_view to_string(config::queueing_method m) {
    switch (m) {
        case config::queueing_method::fifo:
            return "fifo";
        case config::queueing_method::random:
            return "random";
        case config::queueing_method::passthrough:
            return "passthrough";
        case config::queueing_method::reject:
            return "reject";
    }
    return "fifo";
}

std::string_view to_string(config::abuse_action a) {
    switch (a) {
        case config::abuse_action::off:
            return "off";
        case config::abuse_action::log:
            return "log";
        case config::abuse_action::slow:
            return "slow";
        case config::abuse_action::infinite_queue:
            return "infinite_queue";
    }
    return "off";
}

// ---- compiled_room ---------------------------------------------------------------------------

event_phase compiled_room::phase_at(std::int64_t now_ms) const {
    event_phase ph;
    for (const auto& ev : cfg_->events) {
        std::int64_t start = to_ms(ev.event_start_time);
        std::int64_t end = to_ms(ev.event_end_time);
        std::int64_t pre = ev.prequeue_start_time ? to_ms(*ev.prequeue_start_time) : start;
        if (now_ms >= std::min(pre, start) && now_ms < end) {
            ph.event = &ev;
            ph.event_id = event_id_of(ev);
            ph.start_ms = start;
            ph.end_ms = end;
            ph.prequeue_start_ms = std::min(pre, start);
            ph.prequeueing = now_ms < start;
            ph.active = !ph.prequeueing;
            return ph;
        }
    }
    return ph;
}

settings compiled_room::settings_at(const event_phase& ph) const {
    const auto& r = *cfg_;
    settings s;
    s.total_active_users = r.total_active_users;
    s.new_users_per_minute = r.new_users_per_minute;
    s.session_ms = r.session_duration.count();
    s.disable_session_renewal = r.disable_session_renewal;
    s.method = r.method;
    s.suspended = r.suspended;
    s.queue_all = r.queue_all;
    s.refresh_ms = std::max<std::int64_t>(1000, r.refresh_interval.count());
    s.custom_page_html = &r.custom_page_html;
    if (const config::event* ev = ph.event) {
        // An event's set fields replace the room's, from prequeue to its end.
        if (ev->total_active_users) {
            s.total_active_users = *ev->total_active_users;
        }
        if (ev->new_users_per_minute) {
            s.new_users_per_minute = *ev->new_users_per_minute;
        }
        if (ev->session_duration) {
            s.session_ms = ev->session_duration->count();
        }
        if (ev->disable_session_renewal) {
            s.disable_session_renewal = *ev->disable_session_renewal;
        }
        if (ev->queueing_method) {
            s.method = *ev->queueing_method;
        }
        if (ev->suspended) {
            s.suspended = *ev->suspended;
        }
        if (ev->custom_page_html) {
            s.custom_page_html = &*ev->custom_page_html;
        }
    }
    if (switches_ != nullptr) {
        // An operator's run-time switch wins over the file and the event until a reload
        // changes the file's value (room_overrides::reconcile).
        s.queue_all = switches_->queue_all().value_or(s.queue_all);
        s.suspended = switches_->suspended().value_or(s.suspended);
    }
    s.origin_unavailable = gate_ != nullptr && !gate_->open();
    return s;
}

room_limits compiled_room::limits_at(std::int64_t now_ms) const {
    auto ph = phase_at(now_ms);
    return make_limits(settings_at(ph), ph, win_);
}

}  // namespace waitroom::room

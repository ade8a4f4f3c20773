#include "waitroom/metrics/room_history.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

namespace waitroom::metrics {

namespace {

constexpr std::int64_t minute_ms = 60'000;

std::int64_t minute_of(std::int64_t t) {
    std::int64_t q = t / minute_ms;
    if (t % minute_ms != 0 && t < 0) {
        --q;
    }
    return q * minute_ms;
}

std::int64_t grown(std::int64_t now, std::int64_t before) {
    return std::max<std::int64_t>(0, now - before);  // a counter never goes back; a reset adds 0
}

void add_into(histogram_reading& into, const histogram_reading& more) {
    if (more.buckets.empty()) {
        return;
    }
    if (into.buckets.size() != more.buckets.size()) {
        into = more;
        return;
    }
    for (std::size_t i = 0; i < into.buckets.size(); ++i) {
        into.buckets[i] += more.buckets[i];
    }
    into.sum += more.sum;
}

// Counts and histograms added up; the gauges as `more` has them (the later reading).
void add_into(room_reading& into, const room_reading& more) {
    into.admitted += more.admitted;
    into.admitted_from_queue += more.admitted_from_queue;
    into.admitted_out_of_order += more.admitted_out_of_order;
    into.queued += more.queued;
    into.abandoned += more.abandoned;
    into.revoked += more.revoked;
    into.flagged += more.flagged;
    add_into(into.queue_wait, more.queue_wait);
    add_into(into.estimate_error, more.estimate_error);
    add_into(into.session_duration, more.session_duration);
    into.active_users = more.active_users;
    into.queued_users = more.queued_users;
}

// "2026-11-26T07:05:00Z"
std::string iso8601(std::int64_t ms) {
    using namespace std::chrono;
    const sys_time<milliseconds> t{milliseconds{ms}};
    const auto day = floor<days>(t);
    const year_month_day ymd{day};
    const hh_mm_ss hms{floor<seconds>(t - day)};
    char buf[40];
    std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02d:%02d:%02dZ", static_cast<int>(ymd.year()),
                  static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                  static_cast<int>(hms.hours().count()), static_cast<int>(hms.minutes().count()),
                  static_cast<int>(hms.seconds().count()));
    return buf;
}

void csv_number(std::string& out, double v) {
    if (std::isfinite(v)) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.1f", v);
        out += buf;
    }
}

void csv_text(std::string& out, std::string_view s) {
    // Quoted always; a leading formula character is defused for spreadsheets.
    out += '"';
    if (!s.empty() && (s[0] == '=' || s[0] == '+' || s[0] == '-' || s[0] == '@')) {
        out += '\'';
    }
    for (char c : s) {
        if (c == '"') {
            out += '"';
        }
        out += c;
    }
    out += '"';
}

}  // namespace

room_reading read_room(const room_metrics& m) {
    room_reading r;
    r.admitted = m.admitted.value();
    r.admitted_from_queue = m.admitted_from_queue.value();
    r.admitted_out_of_order = m.admitted_out_of_order.value();
    r.queued = m.queued.value();
    r.abandoned = m.abandoned.value();
    r.revoked = m.revoked.value();
    r.flagged = m.flagged.value();
    r.queue_wait = m.queue_wait.read();
    r.estimate_error = m.estimate_error.read();
    r.session_duration = m.session_duration.read();
    return r;
}

row_summary summarize(const minute_row& r) {
    row_summary s;
    s.queue_wait_p50 = quantile(r.queue_wait, 0.5);
    s.queue_wait_p90 = quantile(r.queue_wait, 0.9);
    s.estimate_error_median = quantile(r.estimate_error, 0.5);
    s.estimate_error_bias = mean(r.estimate_error);
    s.estimates_compared = r.estimate_error.count();
    s.session_p50 = quantile(r.session_duration, 0.5);
    if (r.admitted_from_queue > 0) {
        s.out_of_order_share = static_cast<double>(std::min(r.admitted_out_of_order,
                                                            r.admitted_from_queue)) /
                               static_cast<double>(r.admitted_from_queue);
    } else {
        s.out_of_order_share = NAN;
    }
    return s;
}

minute_row combine(const std::vector<minute_row>& rows) {
    minute_row out;
    for (const auto& r : rows) {
        add_into(out, r);
    }
    if (!rows.empty()) {
        out.minute_ms = rows.front().minute_ms;
    }
    return out;
}

room_history::room_history(std::size_t max_rows) : max_rows_(std::max<std::size_t>(1, max_rows)) {}

void room_history::record(std::int64_t now_ms, room_reading now) {
    if (!started_ || now_ms < last_ms_) {
        started_ = true;
        last_ms_ = now_ms;
        last_ = std::move(now);
        return;
    }
    const std::int64_t minute = minute_of(now_ms);
    if (rows_.empty() || rows_.back().minute_ms != minute) {
        rows_.emplace_back();
        rows_.back().minute_ms = minute;
        while (rows_.size() > max_rows_) {
            rows_.pop_front();
        }
    }
    // What grew since the previous reading; the gauges as they stand now.
    room_reading grew;
    grew.active_users = now.active_users;
    grew.queued_users = now.queued_users;
    grew.admitted = grown(now.admitted, last_.admitted);
    grew.admitted_from_queue = grown(now.admitted_from_queue, last_.admitted_from_queue);
    grew.admitted_out_of_order = grown(now.admitted_out_of_order, last_.admitted_out_of_order);
    grew.queued = grown(now.queued, last_.queued);
    grew.abandoned = grown(now.abandoned, last_.abandoned);
    grew.revoked = grown(now.revoked, last_.revoked);
    grew.flagged = grown(now.flagged, last_.flagged);
    grew.queue_wait = now.queue_wait.since(last_.queue_wait);
    grew.estimate_error = now.estimate_error.since(last_.estimate_error);
    grew.session_duration = now.session_duration.since(last_.session_duration);
    add_into(rows_.back(), grew);
    last_ms_ = now_ms;
    last_ = std::move(now);
}

std::vector<minute_row> room_history::rows(std::int64_t from_ms, std::int64_t to_ms) const {
    std::vector<minute_row> out;
    for (const auto& r : rows_) {
        if (r.minute_ms >= from_ms && r.minute_ms < to_ms) {
            out.push_back(r);
        }
    }
    return out;
}

std::string to_csv(std::string_view room, const std::vector<minute_row>& rows) {
    std::string out =
        "room,minute_start,admitted,admitted_from_queue,admitted_out_of_order,queued,abandoned,"
        "revoked,flagged,queue_wait_p50_seconds,queue_wait_p90_seconds,estimates_compared,"
        "estimate_error_median_seconds,estimate_error_bias_seconds,session_p50_seconds,"
        "active_users,queued_users\r\n";
    out.reserve(out.size() + rows.size() * 128);
    for (const auto& r : rows) {
        const row_summary s = summarize(r);
        csv_text(out, room);
        out += ',';
        out += iso8601(r.minute_ms);
        for (std::int64_t n : {r.admitted, r.admitted_from_queue, r.admitted_out_of_order,
                               r.queued, r.abandoned, r.revoked, r.flagged}) {
            out += ',';
            out += std::to_string(n);
        }
        out += ',';
        csv_number(out, s.queue_wait_p50);
        out += ',';
        csv_number(out, s.queue_wait_p90);
        out += ',';
        out += std::to_string(s.estimates_compared);
        out += ',';
        csv_number(out, s.estimate_error_median);
        out += ',';
        csv_number(out, s.estimate_error_bias);
        out += ',';
        csv_number(out, s.session_p50);
        out += ',';
        out += std::to_string(r.active_users);
        out += ',';
        out += std::to_string(r.queued_users);
        out += "\r\n";
    }
    return out;
}

}  // namespace waitroom::metrics

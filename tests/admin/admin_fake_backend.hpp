#pragma once
// An in-memory admin_backend for the admin listener's tests and the dashboard's browser test:
// rooms held in a map, every PATCH recorded, readiness settable from the test thread.

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "waitroom/admin/admin_backend.hpp"

namespace waitroom::test {

class fake_admin_backend : public admin::admin_backend {
  public:
    struct patch_call {
        std::string id;
        admin::admin_room_patch patch;
    };

    void add_room(admin::admin_room_status s) {
        std::lock_guard lock(mutex_);
        rooms_.push_back(std::move(s));
    }
    void set_readiness(admin::admin_readiness r) {
        std::lock_guard lock(mutex_);
        ready_ = std::move(r);
    }
    void set_metrics(std::string text) {
        std::lock_guard lock(mutex_);
        metrics_ = std::move(text);
    }
    // Makes the next PATCH fail with 503 and this message.
    void fail_next_patch(std::string message) {
        std::lock_guard lock(mutex_);
        fail_next_ = std::move(message);
    }
    std::vector<patch_call> patches() const {
        std::lock_guard lock(mutex_);
        return patches_;
    }
    // Changes every room under the lock (the browser helper animates the numbers).
    template <class F>
    void update(F&& f) {
        std::lock_guard lock(mutex_);
        for (auto& r : rooms_) {
            f(r);
        }
    }

    std::vector<admin::admin_room_status> rooms() override {
        std::lock_guard lock(mutex_);
        return rooms_;
    }
    std::optional<admin::admin_room_status> room_status(std::string_view id) override {
        std::lock_guard lock(mutex_);
        for (const auto& r : rooms_) {
            if (r.id == id) {
                return r;
            }
        }
        return std::nullopt;
    }
    void patch_room(std::string_view id, const admin::admin_room_patch& patch,
                    patch_done done) override {
        admin::admin_patch_outcome out;
        {
            std::lock_guard lock(mutex_);
            patches_.push_back({std::string(id), patch});
            if (fail_next_) {
                out.result = admin::admin_patch_result::failed;
                out.message = std::move(*fail_next_);
                fail_next_.reset();
            } else {
                out.result = admin::admin_patch_result::unknown_room;
                for (auto& r : rooms_) {
                    if (r.id != id) {
                        continue;
                    }
                    if (patch.queue_all) {
                        r.queue_all = *patch.queue_all;
                    }
                    if (patch.suspended) {
                        r.suspended = *patch.suspended;
                    }
                    r.status = restatus(r);
                    out.result = admin::admin_patch_result::applied;
                    out.status = r;
                }
            }
        }
        done(std::move(out));
    }
    // Echoes what it was asked in a page that holds the language verbatim, so that a test can see
    // the query reach the backend; "xx-XX" is the one language it does not know.
    admin::admin_preview preview_page(std::string_view id, admin::admin_preview_state state,
                                      std::string_view language) override {
        admin::admin_preview out;
        if (!room_status(id)) {
            out.result = admin::admin_preview_result::unknown_room;
            return out;
        }
        if (language == "xx-XX") {
            out.result = admin::admin_preview_result::unknown_language;
            out.languages = {"en-US", "de-DE"};
            return out;
        }
        std::lock_guard lock(mutex_);
        previews_.push_back({std::string(id), state, std::string(language)});
        out.html = "<p>" + std::string(id) + " " + std::to_string(static_cast<int>(state)) + " [" +
                   std::string(language) + "]</p>" + page_probe;
        return out;
    }
    // Appended to every preview: an inline style and script, as the built-in pages carry, that
    // mark the page once they ran (the dashboard's browser test looks for the marks).
    static constexpr const char* page_probe =
        "<style>p{color:rgb(1,2,3)}</style>"
        "<script>document.body.dataset.ran='yes'</script>";
    struct preview_call {
        std::string id;
        admin::admin_preview_state state;
        std::string language;
    };
    std::vector<preview_call> previews() const {
        std::lock_guard lock(mutex_);
        return previews_;
    }
    // Analytics: each room's minute rows, the clock, the events; every query recorded.
    void set_now(std::int64_t ms) {
        std::lock_guard lock(mutex_);
        now_ms_ = ms;
    }
    void set_rows(const std::string& id, std::vector<metrics::minute_row> rows) {
        std::lock_guard lock(mutex_);
        rows_[id] = std::move(rows);
    }
    void add_event(const std::string& id, const std::string& name, admin::admin_event_span span) {
        std::lock_guard lock(mutex_);
        events_[id + "/" + name] = span;
    }
    struct analytics_call {
        std::string id;
        std::int64_t from_ms = 0;
        std::int64_t to_ms = 0;
    };
    std::vector<analytics_call> analytics_calls() const {
        std::lock_guard lock(mutex_);
        return analytics_calls_;
    }
    admin::admin_analytics analytics(std::string_view id, std::int64_t from_ms,
                                     std::int64_t to_ms) override {
        admin::admin_analytics out;
        if (!room_status(id)) {
            return out;
        }
        std::lock_guard lock(mutex_);
        out.found = true;
        analytics_calls_.push_back({std::string(id), from_ms, to_ms});
        for (const auto& r : rows_[std::string(id)]) {
            if (r.minute_ms >= from_ms && r.minute_ms < to_ms) {
                out.rows.push_back(r);
            }
        }
        return out;
    }
    std::optional<admin::admin_event_span> event_span(std::string_view id,
                                                      std::string_view event) override {
        std::lock_guard lock(mutex_);
        auto it = events_.find(std::string(id) + "/" + std::string(event));
        if (it == events_.end()) {
            return std::nullopt;
        }
        return it->second;
    }
    std::int64_t now_ms() override {
        std::lock_guard lock(mutex_);
        return now_ms_;
    }

    admin::admin_readiness readiness() override {
        std::lock_guard lock(mutex_);
        return ready_;
    }
    std::string metrics_text() override {
        std::lock_guard lock(mutex_);
        return metrics_;
    }
    admin::admin_origins origins() override {
        std::lock_guard lock(mutex_);
        return origins_;
    }

    // What the engine would report after a switch changed.
    static admin::room_queue_status restatus(const admin::admin_room_status& r) {
        using admin::room_queue_status;
        if (r.suspended) {
            return room_queue_status::suspended;
        }
        if (r.queue_all || r.estimated_queued_users > 0) {
            return room_queue_status::queueing;
        }
        return room_queue_status::not_queueing;
    }

  private:
    mutable std::mutex mutex_;
    std::vector<admin::admin_room_status> rooms_;
    std::vector<patch_call> patches_;
    std::vector<preview_call> previews_;
    admin::admin_readiness ready_;
    std::string metrics_ = "# no metrics\n";
    admin::admin_origins origins_;
    std::optional<std::string> fail_next_;
    std::int64_t now_ms_ = 1'800'000'000'000;
    std::map<std::string, std::vector<metrics::minute_row>> rows_;
    std::map<std::string, admin::admin_event_span> events_;
    std::vector<analytics_call> analytics_calls_;
};

}  // namespace waitroom::test

#pragma once
// The admin listener's view of the running daemon: room status from the room engine and the
// node's snapshot, run-time room switches (PATCH) through the state store (so every node gets
// them at its next sync) and the node's room_overrides, readiness
// from the drain flag and the sync task, page previews from the published templates, and the
// metrics text with the per-room gauges filled in
// at scrape time (no per-request work for them).

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "waitroom/admin/admin_backend.hpp"
#include "waitroom/gateway/room_filter.hpp"
#include "waitroom/metrics/metrics.hpp"
#include "waitroom/metrics/room_history.hpp"
#include "waitroom/room/overrides.hpp"
#include "waitroom/room/room_state.hpp"
#include "waitroom/state/store.hpp"
#include "waitroom/state/sync_task.hpp"
#include "waitroom/util/clock.hpp"

namespace waitroom::gateway {

class room_admin_backend final : public admin::admin_backend {
  public:
    // Everything referenced outlives the backend (server/ owns them all). `metrics_slot` is the
    // metric slot this backend writes gauges from (one no worker uses). With `store`, a PATCH
    // is written there first and fails (503) when the store cannot take it; without one it sets
    // this node's switches only.
    room_admin_backend(const room_filter& filter, room::node_state& node,
                       const state::sync_task& sync,
                       std::shared_ptr<room::room_overrides> overrides,
                       std::shared_ptr<metrics::metric_set> metrics, unsigned metrics_slot,
                       const util::clock& clock, state::store* store = nullptr);

    // Drain started: /readyz answers 503 from now on. Any thread.
    void set_draining() { draining_.store(true, std::memory_order_release); }

    std::vector<admin::admin_room_status> rooms() override;
    std::optional<admin::admin_room_status> room_status(std::string_view id) override;
    void patch_room(std::string_view id, const admin::admin_room_patch& patch,
                    patch_done done) override;
    admin::admin_preview preview_page(std::string_view id, admin::admin_preview_state state,
                                      std::string_view language) override;
    admin::admin_readiness readiness() override;
    std::string metrics_text() override;
    admin::admin_analytics analytics(std::string_view id, std::int64_t from_ms,
                                     std::int64_t to_ms) override;
    std::optional<admin::admin_event_span> event_span(std::string_view id,
                                                      std::string_view event) override;
    std::int64_t now_ms() override;
    admin::admin_origins origins() override;

    // Takes a reading of every room into its minute rows (metrics::room_history). Called after
    // every sync, on the thread that completed it; skipped, not waited for, while a scrape or an
    // analytics answer holds the lock (a worker may complete the odd sync).
    void record_history();

  private:
    admin::admin_room_status status_of(const room::engine& eng, const room::compiled_room& r,
                                       const room::state_snapshot& snap, std::int64_t now_ms,
                                       bool degraded) const;

    const room_filter& filter_;
    room::node_state& node_;
    const state::sync_task& sync_;
    std::shared_ptr<room::room_overrides> overrides_;
    std::shared_ptr<metrics::metric_set> metrics_;
    unsigned slot_;
    const util::clock& clock_;
    state::store* store_;
    std::atomic<bool> draining_{false};
    std::mutex scrape_mu_;                 // one scrape at a time updates the gauges below
    std::uint64_t failures_reported_ = 0;  // sync failures already added to the counter
    std::map<std::string, std::uint64_t> top_ups_reported_;    // room → top-ups already counted
    std::map<std::string, std::uint64_t> abandoned_reported_;  // room → abandonments counted
    std::map<std::string, std::uint64_t> room_failures_reported_;  // room → its failures counted
    // The rooms' minute rows, by room id: the rooms of the running config only, each bounded
    // (a day of minutes), so memory follows the config, never the visitors or the requests.
    std::map<std::string, metrics::room_history, std::less<>> history_;

    // Brings the room gauges and the counters the sync task feeds up to date, and returns each
    // room's reading (scrape_mu_ held).
    std::vector<std::pair<std::string, metrics::room_reading>> refresh_locked(std::int64_t now_ms);
};

}  // namespace waitroom::gateway

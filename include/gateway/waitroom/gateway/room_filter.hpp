#pragma once
// The waiting room applied to the data plane: the request_filter that routes each request to its
// room, reads the `_cfwaitingroom` cookie, asks the room engine for a decision and turns it into
// "proxy (with a Set-Cookie)" or "answer from memory" (queue page, JSON, reject page). It also
// acts on the origin command `Cf-Waiting-Room-Command: revoke`.

#include <boost/asio/any_io_executor.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "waitroom/config/config.hpp"
#include "waitroom/config/load.hpp"
#include "waitroom/cookie/key_ring.hpp"
#include "waitroom/metrics/metrics.hpp"
#include "waitroom/gateway/node_runtime.hpp"
#include "waitroom/pages/page_renderer.hpp"
#include "waitroom/gateway/request_filter.hpp"
#include "waitroom/room/engine.hpp"
#include "waitroom/room/overrides.hpp"
#include "waitroom/state/sync_task.hpp"
#include "waitroom/util/clock.hpp"

namespace waitroom::gateway {

class room_filter final : public request_filter {
  public:
    // Decides under the runtime each request names (request_info::runtime), or else the one
    // `runtimes` holds now; its engine must not be null.
    // `executors[i]` is worker i's executor: decisions that wait on a store top-up resume there.
    // `metrics` (optional, outlives the filter): per-room counters, bumped in worker i's slot.
    room_filter(std::shared_ptr<const runtime_slot> runtimes, room::node_state& node,
                state::sync_task& sync, const util::clock& clock,
                std::vector<boost::asio::any_io_executor> executors,
                metrics::metric_set* metrics = nullptr);
    ~room_filter() override;

    // The runtime published last.
    std::shared_ptr<const node_runtime> runtime() const;

    // Worker i's counters, for its flush timer. Only on worker i's thread.
    room::worker_state& room_counters(unsigned worker);

    void on_request(const request_head& req, const request_info& info, completion done) override;
    void on_response(response_head& res, const std::shared_ptr<void>& context) override;
    void on_origin_error(header_list& headers, const std::shared_ptr<void>& context) override;

  private:
    struct per_worker;
    struct admitted_context;
    struct answer_traits;
    per_worker& worker(unsigned index);
    // Worker `index`'s part, made ready to decide under `rt` (its templates, its metrics).
    per_worker& worker(unsigned index, const std::shared_ptr<const node_runtime>& rt);
    void apply(per_worker& w, const std::shared_ptr<const node_runtime>& rt,
               const room::decision& d, const cookie::payload* visitor, const answer_traits& t,
               std::int64_t now_ms, completion& done);
    void count(per_worker& w, const room::decision& d, const cookie::payload* visitor);
    // A top-up for the room, then the request decided again as `next` on worker `index`.
    void top_up_then_decide(std::shared_ptr<const node_runtime> rt,
                            const room::compiled_room& room,
                            std::optional<cookie::payload> visitor, const answer_traits& traits,
                            bool solved, unsigned index, std::int64_t now_ms, room::attempt next,
                            completion done);

    room::node_state& node_;
    state::sync_task& sync_;
    const util::clock& clock_;
    metrics::metric_set* metrics_;
    std::shared_ptr<const runtime_slot> runtimes_;
    std::vector<std::unique_ptr<per_worker>> workers_;
};

}  // namespace waitroom::gateway

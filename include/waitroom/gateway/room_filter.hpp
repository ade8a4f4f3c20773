#pragma once
// The waiting room applied to the data plane: the request_filter that routes each request to its
// room, reads the `_cfwaitingroom` cookie, asks the room engine for a decision and turns it into
// "proxy (with a Set-Cookie)" or "answer from memory" (queue page, JSON, reject page). It also
// acts on the origin command `Cf-Waiting-Room-Command: revoke`.

#include <boost/asio/any_io_executor.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "waitroom/config/config.hpp"
#include "waitroom/config/load.hpp"
#include "waitroom/cookie/key_ring.hpp"
#include "waitroom/gateway/metrics.hpp"
#include "waitroom/gateway/page_renderer.hpp"
#include "waitroom/gateway/request_filter.hpp"
#include "waitroom/room/engine.hpp"
#include "waitroom/room/overrides.hpp"
#include "waitroom/state/sync_task.hpp"
#include "waitroom/util/clock.hpp"

namespace waitroom::gateway {

// Everything the decision reads that is built from one config snapshot; swapped whole on reload.
struct room_runtime {
    config::snapshot cfg;
    std::shared_ptr<const room::engine> engine;
    std::shared_ptr<const cookie::key_ring> keys;
    std::shared_ptr<const page_templates> templates;
    std::vector<std::string> cookie_names;  // by room index: _cfwaitingroom[_suffix]
    // The header bypass secrets' field names of every room (each once, any case): stripped
    // from every forwarded request, whichever room (or none) it went to.
    std::vector<std::string> secret_fields;

    struct build_result {
        std::shared_ptr<const room_runtime> runtime;  // null on problems
        std::vector<config::problem> problems;
    };
    // Compiles the engine and the templates of `cfg` with the given key ring; the engine reads
    // the node's run-time room switches from `overrides` (null: none).
    static build_result build(config::snapshot cfg, std::shared_ptr<const cookie::key_ring> keys,
                              std::shared_ptr<room::room_overrides> overrides = nullptr);
};

class room_filter final : public request_filter {
  public:
    // `executors[i]` is worker i's executor: decisions that wait on a store top-up resume there.
    // `metrics` (optional, outlives the filter): per-room counters, bumped in worker i's slot.
    room_filter(std::shared_ptr<const room_runtime> runtime, room::node_state& node,
                state::sync_task& sync, const util::clock& clock,
                std::vector<boost::asio::any_io_executor> executors,
                metrics::metric_set* metrics = nullptr);
    ~room_filter() override;

    // Reload: workers pick the new runtime up at their next request.
    void set_runtime(std::shared_ptr<const room_runtime> runtime);
    std::shared_ptr<const room_runtime> runtime() const;

    // Worker i's counters, for its flush timer. Only on worker i's thread.
    room::worker_state& room_counters(unsigned worker);

    void on_request(const request_head& req, const request_info& info, completion done) override;
    void on_response(response_head& res, const std::shared_ptr<void>& context) override;
    void on_origin_error(header_list& headers, const std::shared_ptr<void>& context) override;

  private:
    struct per_worker;
    struct admitted_context;
    per_worker& worker(unsigned index);
    void apply(per_worker& w, const std::shared_ptr<const room_runtime>& rt,
               const room::decision& d, const cookie::payload* visitor, bool visitor_tls,
               bool wants_json, std::int64_t now_ms, completion& done);
    void count(per_worker& w, const room::decision& d, const cookie::payload* visitor);

    room::node_state& node_;
    state::sync_task& sync_;
    const util::clock& clock_;
    metrics::metric_set* metrics_;
    std::atomic<std::shared_ptr<const room_runtime>> runtime_;
    std::atomic<std::uint64_t> generation_{1};
    std::vector<std::unique_ptr<per_worker>> workers_;
};

}  // namespace waitroom::gateway

#pragma once
// The node's watch over the origin's servers, from one place (the control thread), not from each
// worker: the active health checks (origin.health_check: a GET of its path on each server every
// interval; `unhealthy` failures in a row take a server out, `healthy` passes bring it back), the
// end of each ejection, and the gate the rooms read (closed while no server takes requests). The
// request path sees none of it but the flags it sets.

#include <boost/asio/io_context.hpp>

#include <memory>

#include "waitroom/config/config.hpp"
#include "waitroom/gateway/origin_group.hpp"
#include "waitroom/metrics/metrics.hpp"

namespace waitroom::gateway {

class origin_monitor {
  public:
    // Runs on `ex` (one thread). `m` (optional) outlives it: the health gauges, in slot `slot`.
    origin_monitor(boost::asio::io_context::executor_type ex, metrics::metric_set* m,
                   unsigned slot);
    ~origin_monitor();
    origin_monitor(const origin_monitor&) = delete;
    origin_monitor& operator=(const origin_monitor&) = delete;

    // Watches `group`, reached with the settings `o` (at start, and after each reload): its
    // servers are probed when it has health checks. On `ex`'s thread.
    void watch(std::shared_ptr<const origin_group> group, const config::origin& o);

    // Reads the servers' health again now (a worker ejected one). Any thread.
    void wake();

    // Stops every probe and timer. On `ex`'s thread.
    void stop();

  private:
    struct impl;
    std::shared_ptr<impl> impl_;
};

}  // namespace waitroom::gateway

#pragma once
// One worker's view of the origin's servers: a pool of keep-alive connections per server, the
// requests it has in flight on each, and the choice of a request's server (origin_balancer) among
// those the node's health (origin_group) says take requests. Single-threaded (one per worker).

#include <cstddef>
#include <memory>
#include <random>
#include <vector>

#include "common.hpp"
#include "origin_balancer.hpp"
#include "origin_pool.hpp"
#include "waitroom/gateway/origin_group.hpp"

namespace waitroom::gateway {

// One server as one worker uses it. An exchange holds it while its request is on the server, so
// it outlives a reload that drops the server.
struct origin_target {
    std::shared_ptr<origin_pool> pool;
    std::shared_ptr<const origin_group> group;     // the servers it belongs to (health rules)
    const origin_group::member* member = nullptr;  // in `group`
    std::size_t in_flight = 0;                     // this worker's requests on it now
};

class origin_servers {
  public:
    // `metrics` (optional) outlives it; `slot` is the worker's.
    origin_servers(executor_type ex, metrics::metric_set* metrics, unsigned slot);

    // Follows `group` with the settings `o`: a server it already had keeps its pool (and its
    // idle connections when the address and TLS settings are the same).
    void configure(std::shared_ptr<const origin_group> group, const config::origin& o);
    // Every server of `o` is one of this worker's now, reached the same way.
    bool serves(const config::origin& o) const;
    std::size_t size() const { return targets_.size(); }

    // The server for a request, never `avoid` (one this request just failed on); null when
    // there is no other. Counts the request in flight there until `done`.
    std::shared_ptr<origin_target> pick(const origin_target* avoid = nullptr);
    void done(origin_target& t) {
        if (t.in_flight > 0) {
            --t.in_flight;
        }
    }

    // Gives a connection back to the pool it came from (closed when that pool is gone).
    void release(std::shared_ptr<origin_connection> c, bool reusable);
    void close_idle();

  private:
    executor_type ex_;
    metrics::metric_set* metrics_;
    unsigned slot_;
    std::vector<std::shared_ptr<origin_target>> targets_;
    std::vector<balance_entry> entries_;  // parallel to targets_
    config::balance_policy policy_ = config::balance_policy::least_request;
    std::mt19937_64 random_;
};

}  // namespace waitroom::gateway

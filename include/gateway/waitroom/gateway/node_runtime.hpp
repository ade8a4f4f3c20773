#pragma once
// Everything one configuration file yields for a running node, built and checked whole, then
// published by one atomic swap: the config, the room engine with its key ring and templates, and
// the admin listener's access rules. The data plane, the sync task and the admin listener all read
// the published one, so a reload is one switch: a request is served wholly under one file.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "waitroom/admin/admin_token.hpp"
#include "waitroom/config/config.hpp"
#include "waitroom/config/load.hpp"
#include "waitroom/cookie/key_ring.hpp"
#include "waitroom/gateway/origin_group.hpp"
#include "waitroom/metrics/metrics.hpp"
#include "waitroom/pages/page_renderer.hpp"
#include "waitroom/room/engine.hpp"
#include "waitroom/room/overrides.hpp"

namespace waitroom::gateway {

struct node_runtime {
    config::snapshot cfg;
    // The waiting room (null in a node built from a config alone: every request passes).
    std::shared_ptr<const room::engine> engine;
    std::shared_ptr<const cookie::key_ring> keys;
    std::shared_ptr<const pages::page_templates> templates;
    std::vector<std::string> cookie_names;            // by room index: _cfwaitingroom[_suffix]
    std::vector<std::string> challenge_cookie_names;  // by room index: waitroom_seed[_suffix]
    // The header bypass secrets' field names of every room (each once, any case): stripped
    // from every forwarded request, whichever room (or none) it went to.
    std::vector<std::string> secret_fields;
    // The admin listener's token and Host names (null when the node runs no admin listener).
    std::shared_ptr<const admin::admin_access> admin;
    // The origin's servers, with the node's health of each (never null).
    std::shared_ptr<const origin_group> origins;
    // Set by runtime_slot::publish: 1 for the first runtime published, then one more per reload.
    std::uint64_t generation = 0;

    struct inputs {
        // The key ring to use as it is (tests); when null, the ring is read from cookie.keys,
        // or taken over from `previous` when its cookie.keys named the same keys.
        std::shared_ptr<const cookie::key_ring> keys;
        std::shared_ptr<const node_runtime> previous;
        // The node's run-time room switches, read by the engine (null: none).
        std::shared_ptr<room::room_overrides> overrides;
        // The node runs an admin listener: read admin.token_file / admin.token_env.
        bool admin = false;
        // The node's health of the origin's servers, whose gate the rooms read (null: a health
        // of this runtime's own, and rooms that never close).
        std::shared_ptr<origin_health> health;
        // The per-server metrics' home (null: none).
        metrics::metric_set* metrics = nullptr;
    };
    struct build_result {
        std::shared_ptr<node_runtime> runtime;  // null on problems or error
        std::vector<config::problem> problems;  // the templates' (file:line:column: key: …)
        std::string error;                      // the key ring's or the admin token's
        bool keys_changed = false;              // the ring was read anew (not `previous`'s)
    };
    // Compiles and reads everything `cfg` names. Nothing is published: see runtime_slot.
    static build_result build(config::snapshot cfg, const inputs& in);

    // A runtime with the config alone (no room, no admin): a bare proxy.
    static std::shared_ptr<node_runtime> of_config(config::snapshot cfg);
};

// Where the current runtime lives. Readers on any thread; publish on one thread (the control
// thread's reload).
class runtime_slot {
  public:
    explicit runtime_slot(std::shared_ptr<node_runtime> first) { publish(std::move(first)); }

    std::shared_ptr<const node_runtime> load() const {
        return current_.load(std::memory_order_acquire);
    }
    // The generation of the runtime published last: one load, for a reader to learn of a reload
    // before it copies the pointer.
    std::uint64_t generation() const { return generation_.load(std::memory_order_acquire); }

    // Numbers `next` and makes it the current runtime.
    void publish(std::shared_ptr<node_runtime> next) {
        next->generation = generation_.load(std::memory_order_relaxed) + 1;
        const auto g = next->generation;
        current_.store(std::move(next), std::memory_order_release);
        generation_.store(g, std::memory_order_release);
    }

  private:
    std::atomic<std::shared_ptr<const node_runtime>> current_;
    std::atomic<std::uint64_t> generation_{0};
};

}  // namespace waitroom::gateway

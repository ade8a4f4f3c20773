#pragma once
// The Redis state store (`state.backend: redis`, DESIGN.md §4 "Slots across nodes"): the same
// semantics as local_store, kept in Redis by one Lua script per room so that many nodes share
// each room. One sync is one pipelined round trip (an EVALSHA per room); a top-up is one EVALSHA,
// and so is a write of a room's run-time switches (its own key, read back by every sync).

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "waitroom/state/store.hpp"

namespace waitroom::config {
struct state_settings;
}

namespace waitroom::state {

// A Redis server (or sentinel) by name or address and TCP port.
struct redis_endpoint {
    std::string host;
    std::uint16_t port = 0;
    friend bool operator==(const redis_endpoint&, const redis_endpoint&) = default;
};

struct redis_options {
    std::string host = "127.0.0.1";                  // name or address of the Redis server
    std::uint16_t port = 6379;                       // its TCP port
    unsigned db = 0;                                 // SELECTed after connecting (0: no SELECT)
    std::string username;                            // AUTH user ("" = password-only AUTH)
    std::string password;                            // AUTH password ("" = no AUTH)
    std::chrono::milliseconds timeout{500};          // per call, connecting included
    std::chrono::milliseconds reconnect_min{50};     // first wait after a lost connection
    std::chrono::milliseconds reconnect_max{1'000};  // backoff doubles up to this
    std::string key_prefix = "wr";                   // keys are "<prefix>:{<room>}:<what>"
    // Sentinel: ask these for the master of `master_name` (host and port above unused); the
    // master is re-asked after a lost connection, a READONLY reply or a server that is no
    // longer master, and every write waits for a replica's acknowledgement (WAIT): a call that
    // no connected replica acknowledged in time fails as errc::lost, so that a failover loses
    // nothing a node was told.
    std::vector<redis_endpoint> sentinels;
    std::string master_name;
    // Cluster: seed nodes for the slot map (host and port above unused); each room goes to the
    // master of its hash slot, following MOVED and ASK.
    std::vector<redis_endpoint> cluster_nodes;
};

// Parses `redis://[[user]:password@]host[:port][/db]`; nullopt when malformed.
std::optional<redis_options> redis_options_from_url(std::string_view url);
// From the validated `state:` section (url parts and timeout).
redis_options redis_options_from(const config::state_settings& s);

class redis_store final : public store {
  public:
    // Runs on `ex` (usually one worker's io_context); calls may come from any thread, and
    // handlers are posted to `ex`, never run inline. Connects on first use.
    redis_store(boost::asio::any_io_executor ex, redis_options opt);
    ~redis_store() override;
    redis_store(const redis_store&) = delete;
    redis_store& operator=(const redis_store&) = delete;

    void sync(node_report report, sync_handler done) override;
    void top_up(top_up_request req, top_up_handler done) override;
    void write_overrides(override_write w, override_handler done) override;

    // Starts connecting now instead of on the first call.
    void start();
    // Drops the connection and fails what is pending with errc::unavailable; later calls fail.
    // The executor must still run for the handlers to be delivered.
    void stop();

    // The keys of a room (for operators and tests): the hash tag is the room id.
    static std::string key(const std::string& prefix, const std::string& room,
                           std::string_view what);

  private:
    struct impl;
    std::shared_ptr<impl> impl_;
};

}  // namespace waitroom::state

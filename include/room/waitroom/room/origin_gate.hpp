#pragma once
// Whether the origin can take new visitors: closed while none of its servers is healthy. The
// gateway's health tracking opens and closes it; the room engine reads it on every decision (one
// relaxed load), and a closed gate admits nobody new: new and queued visitors queue, and the page
// says the site is unavailable right now, while admitted visitors keep their places. Owned by the
// node, not by a config snapshot, so that a reload keeps what is known of the servers.

#include <atomic>

namespace waitroom::room {

class origin_gate {
  public:
    bool open() const { return open_.load(std::memory_order_relaxed); }
    void set_open(bool v) { open_.store(v, std::memory_order_relaxed); }

  private:
    std::atomic<bool> open_{true};
};

}  // namespace waitroom::room

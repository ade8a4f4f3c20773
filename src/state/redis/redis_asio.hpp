#pragma once
// Event hooks that run a hiredis async context on Asio. hiredis ships adapters for libevent,
// libev, libuv and others but none for Asio, so this small one (about 100 lines) registers
// read/write interest with stream_descriptor::async_wait and calls redisAsyncHandleRead/Write
// when the socket is ready.

#include <boost/asio/any_io_executor.hpp>

#include <functional>

struct redisAsyncContext;

namespace waitroom::state::redis {

// Attaches `ac` to `ex`, which must be a strand (or a one-thread executor): from then on every
// hiredis call on `ac` must happen there. `on_cleanup` runs once when hiredis frees the
// context (the server closed it, an error, or our redisAsyncFree); it runs inside hiredis, so
// it may only record the fact (no hiredis call). The file descriptor stays hiredis's.
void attach(redisAsyncContext* ac, boost::asio::any_io_executor ex,
            std::function<void()> on_cleanup);

}  // namespace waitroom::state::redis

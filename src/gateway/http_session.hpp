#pragma once
// What the listener starts for each accepted connection. A client connection is made of:
//   client_session.hpp   the connection: request heads read and validated, the client's
//                        timeouts and the worker's sweep, answers from memory, the lingering close
//   proxy_exchange.hpp   one request forwarded to the origin and its response relayed (1xx, 101)
//   tunnel.hpp           the byte tunnel a WebSocket upgrade becomes
//   socket_reader.hpp    how the sessions read plain sockets (edge_read.hpp, pinned to Boost 1.81)

#include "client_session.hpp"

namespace waitroom::gateway {

template <class Stream>
using http_session = client_session<Stream>;

}  // namespace waitroom::gateway

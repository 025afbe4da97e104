// Sessions, private to src/http: one per accepted connection, a coroutine on
// the connection's strand that (over TLS: first completes the handshake
// within request_timeout, then) reads a request, hands it to the router with
// a ResponseWriter, pumps what the writer queues onto the socket, and loops
// while the connection is kept alive. The session is one template over the
// stream (plain TCP or TLS over TCP); the server sees it as a SessionHandle.
#pragma once

#include <cstdint>
#include <memory>

#include "http/exchange.h"
#include "http/server.h"
#include "http/tls_context.h"

namespace pagoda::http::internal {

// The session of an accepted connection: https with `tls` (the context in
// force when it was accepted; the session holds it), plain without. Register
// it, then Start() it. `server` outlives it (Shutdown waits for every session).
std::shared_ptr<SessionHandle> MakeSession(Server::Impl* server, tcp::socket socket, uint64_t id,
                                           std::shared_ptr<ssl::context> tls);

}  // namespace pagoda::http::internal

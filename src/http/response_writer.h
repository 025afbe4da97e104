// ResponseWriter: how a handler answers one request, now or later, from any
// thread. A handler either calls Respond() once, or BeginSse() then
// SendSse()... then EndSse(). Calls are queued to the connection's I/O
// strand, so the engine thread may push events without locks of its own.
// If every reference is dropped before the response is complete, the server
// answers 500 (or ends the stream) itself.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "http/message.h"

namespace pagoda::http {

class ResponseWriter {
 public:
  virtual ~ResponseWriter() = default;

  // A complete response. Ignored (returns false) after the first
  // Respond/BeginSse or once cancelled.
  virtual bool Respond(Response response) = 0;

  // Starts a Server-Sent Events response: 200, text/event-stream, chunked.
  virtual bool BeginSse(Headers extra = {}) = 0;
  // Queues one event, "data: <data>\n\n" (a '\n' inside `data` starts a new
  // data: line). Calls BeginSse() first when needed. Returns false once the
  // client is gone, the response ended, or the server cancelled it.
  virtual bool SendSse(std::string_view data) = 0;
  // Queues events already framed by their producer (a proxy relaying them
  // as they came): `events` is one or more whole events, each its lines
  // (data:, event:, id:, retry:, comments) ending in '\n' and then the
  // blank line ("\n") that ends it. Same rules as SendSse.
  virtual bool SendSseEvents(std::string_view events) = 0;
  // Ends the stream (the final zero-length chunk); the connection stays open
  // for the next request.
  virtual void EndSse() = 0;

  // `callback` runs once, on an I/O thread, when the client disconnects (or
  // the server gives up at its shutdown deadline) before the response is
  // complete; immediately on the calling thread if that already happened.
  // It must be quick and must not block: typically it posts a cancel to the
  // engine. A later call replaces an earlier callback that has not run.
  virtual void OnCancel(std::function<void()> callback) = 0;
  virtual bool cancelled() const = 0;

  // Bytes queued but not yet written (back-pressure for a slow client).
  virtual size_t queued_bytes() const = 0;
};

// Runs on an I/O thread: must not block. Keep `writer` to answer later.
using Handler = std::function<void(const Request& request, std::shared_ptr<ResponseWriter> writer)>;
// A handler that answers at once (health, models, metrics, tokenize).
using SyncHandler = std::function<Response(const Request& request)>;

}  // namespace pagoda::http

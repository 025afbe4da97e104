// Server internals, private to src/http. An Exchange is one request/response
// shared by its connection's session (on the connection's I/O strand) and the
// handler's ResponseWriter (any thread): the writer queues OutItems under
// the exchange's mutex and wakes the session, which writes them out.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "http/message.h"
#include "http/response_writer.h"

namespace pagoda::http::internal {

// Lets writers on foreign threads touch the io_context only while it exists.
struct Liveness {
  std::mutex mu;
  bool alive = true;
};

// One connection as the server and its exchanges see it (the sessions
// themselves are templated over the stream: plain TCP or TLS). Every method
// posts to the connection's strand, so any thread may call it.
class SessionHandle {
 public:
  virtual ~SessionHandle() = default;
  // Starts the connection's coroutine (once, after registration).
  virtual void Start() = 0;
  // Wakes the pump: the pending exchange has something new.
  virtual void Notify() = 0;
  // During draining: close the connection if it waits idle for a request.
  virtual void CloseIfIdle() = 0;
  // At the shutdown deadline: cancel the pending exchange and close.
  virtual void ForceClose() = 0;
};

struct OutItem {
  enum class Kind { kFull, kSseBegin, kSseData, kSseEnd } kind;
  Response response;  // kFull
  Headers headers;    // kSseBegin
  std::string data;   // kSseData: formatted event bytes
};

// "data: <line>\n" per line of `data`, then the blank line.
std::string FormatSseEvent(std::string_view data);

struct Exchange {
  std::mutex mu;
  // Consecutive events share one kSseData item: a writer appends to the
  // last item while the session has not taken it yet, so the session writes
  // whatever accumulated as one chunk.
  std::deque<OutItem> queue;  // guarded by mu
  // Written under mu; read without it (a proxy asks before every upstream read).
  std::atomic<size_t> queued_bytes{0};
  // A wake-up is on its way to the session (set by a writer that posted
  // one, cleared when the session takes the queue): further events need none.
  bool wake_pending = false;  // guarded by mu
  // The buffer of a chunk the session wrote, handed back for the next
  // kSseData item, so a stream reuses two buffers instead of allocating one
  // per event on one thread and freeing it on another.
  std::string spare;  // guarded by mu
  enum class Phase { kNone, kFull, kStreaming, kEnded } phase = Phase::kNone;  // guarded by mu
  bool abandoned = false;               // guarded by mu: writer dropped before completing
  std::function<void()> on_cancel;      // guarded by mu
  std::atomic<bool> cancelled{false};
  std::atomic<bool> complete{false};    // response written, or connection gone
  std::weak_ptr<SessionHandle> session;
  std::shared_ptr<Liveness> liveness;
  std::shared_ptr<std::atomic<int64_t>> server_queued;  // the server's total of queued_bytes

  ~Exchange();
  void Push(OutItem item);   // mu held by the caller
  // Queues SSE bytes (whole events), appended to the last kSseData item if
  // the session has not taken it. mu held by the caller.
  void PushSse(std::string_view bytes);
  // `n` bytes of `chunk` were written; its buffer becomes the spare. mu held by the caller.
  void Written(size_t n, std::string* chunk = nullptr);
  void Wake();
  // Marks the exchange cancelled and runs the callback once (unless complete).
  void Cancel();
};

// The handler's side of `ex`. Dropping every reference before the response
// is complete marks the exchange abandoned (the session answers 500 or ends
// the stream).
std::shared_ptr<ResponseWriter> MakeResponseWriter(std::shared_ptr<Exchange> ex);

}  // namespace pagoda::http::internal

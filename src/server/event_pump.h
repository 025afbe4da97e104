// EventPump: one worker thread that runs posted tasks in order. The engine
// thread's RequestChannel notifications post here (they must not block), and
// the pump turns engine events into text and SSE writes, so neither the
// engine thread nor an I/O thread decodes or formats.
// Post from any thread; Stop from the owning thread.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace pagoda::server {

class EventPump {
 public:
  EventPump();
  ~EventPump();  // Stop()
  EventPump(const EventPump&) = delete;
  EventPump& operator=(const EventPump&) = delete;

  // Queues `task`; dropped after Stop.
  void Post(std::function<void()> task);
  // Runs what is queued, then joins the worker. Idempotent.
  void Stop();

 private:
  void Run();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace pagoda::server

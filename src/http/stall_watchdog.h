// StallWatchdog: bounds how long one socket operation at a time may wait on
// its peer (a body read waiting for the upstream's next bytes, a write to a
// client that stopped reading) with one timer per stream, instead of the
// timer that beast::tcp_stream arms and cancels around every operation (an
// allocation, two timer-queue updates and a cancelled handler per SSE
// event). The timer fires at most once per `period` while no operation
// runs; an operation whose due time passes has `on_stall` called, on the
// timer's executor, which must be the strand the operations run on (so the
// flags need no lock). Private to src/http.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>

#include "http/asio.h"

namespace pagoda::http::internal {

class StallWatchdog {
 public:
  using Clock = std::chrono::steady_clock;

  template <class Executor>
  explicit StallWatchdog(const Executor& ex) : timer_(ex) {}

  // Starts watching. `owner` owns this watchdog (the timer's handler holds
  // it weakly); `on_stall` typically closes the socket, so that the pending
  // operation ends with an error the caller maps through stalled().
  void Start(std::weak_ptr<void> owner, Clock::duration period, std::function<void()> on_stall) {
    owner_ = std::move(owner);
    period_ = std::max<Clock::duration>(period, std::chrono::milliseconds(1));
    on_stall_ = std::move(on_stall);
    running_ = true;
    stalled_ = false;
    busy_ = false;
    Arm(Clock::now() + period_);
  }
  // No more operations (idempotent); the timer's handler drops its hold.
  void Stop() {
    if (!running_) return;
    running_ = false;
    timer_.cancel();
  }
  // An operation starts that must end by `due`.
  void Begin(Clock::time_point due) {
    due_ = due;
    busy_ = true;
    if (running_ && due < armed_at_) Arm(due);  // only when a deadline comes close
  }
  void End() { busy_ = false; }
  // on_stall ran: the operation that just failed was cut off by the watchdog.
  bool stalled() const { return stalled_; }

 private:
  void Arm(Clock::time_point at) {
    armed_at_ = at;
    timer_.expires_at(at);
    timer_.async_wait([this, owner = owner_](const boost::system::error_code& ec) {
      if (ec) return;  // re-armed or stopped; `this` may be gone
      const auto keep = owner.lock();
      if (!keep || !running_) return;
      OnTimer();
    });
  }
  void OnTimer() {
    const auto now = Clock::now();
    if (busy_ && now >= due_) {
      stalled_ = true;
      running_ = false;
      on_stall_();
      return;
    }
    Arm(busy_ ? due_ : now + period_);
  }

  asio::steady_timer timer_;
  std::weak_ptr<void> owner_;
  std::function<void()> on_stall_;
  Clock::duration period_{};
  Clock::time_point due_{};
  Clock::time_point armed_at_ = Clock::time_point::max();
  bool running_ = false;
  bool busy_ = false;
  bool stalled_ = false;
};

}  // namespace pagoda::http::internal

// CircuitBreaker: per-replica closed / open / half-open state machine, as a
// value with the clock passed in (deterministic tests). Closed: requests
// flow; `failure_threshold` consecutive failures open it. Open: no requests
// until `open_duration` has passed; then half-open. Half-open: one trial
// request at a time; its success closes the circuit, its failure re-opens it.
// Not thread-safe: the owner (ReplicaState) locks.
#pragma once

#include <chrono>
#include <cstdint>

namespace pagoda::gateway {

class CircuitBreaker {
 public:
  using Clock = std::chrono::steady_clock;
  enum class State { kClosed, kOpen, kHalfOpen };

  CircuitBreaker(int failure_threshold, std::chrono::milliseconds open_duration)
      : threshold_(failure_threshold < 1 ? 1 : failure_threshold), open_duration_(open_duration) {}

  // The state at `now` (open turns half-open once its time is up).
  State state(Clock::time_point now) const;
  // Whether a request could be sent at `now` (routing filter; takes nothing).
  bool CanSend(Clock::time_point now) const;
  // A request is being sent: in half-open this takes the one trial slot.
  // False when the circuit refuses it.
  bool OnSend(Clock::time_point now);
  void OnSuccess(Clock::time_point now);
  // Returns true when this failure opened the circuit (an ejection).
  bool OnFailure(Clock::time_point now);
  // The trial request ended without a verdict (cancelled by the client).
  void OnAbandoned();

  int consecutive_failures() const { return failures_; }
  uint64_t times_opened() const { return opened_count_; }

 private:
  void Open(Clock::time_point now);

  int threshold_;
  std::chrono::milliseconds open_duration_;
  State state_ = State::kClosed;  // kOpen may be due to turn half-open (see state())
  int failures_ = 0;
  Clock::time_point opened_at_{};
  bool trial_in_flight_ = false;
  uint64_t opened_count_ = 0;
};

const char* CircuitStateName(CircuitBreaker::State s);

}  // namespace pagoda::gateway

#include "gateway/circuit_breaker.h"

namespace pagoda::gateway {

const char* CircuitStateName(CircuitBreaker::State s) {
  switch (s) {
    case CircuitBreaker::State::kClosed: return "closed";
    case CircuitBreaker::State::kOpen: return "open";
    case CircuitBreaker::State::kHalfOpen: return "half_open";
  }
  return "unknown";
}

CircuitBreaker::State CircuitBreaker::state(Clock::time_point now) const {
  if (state_ == State::kOpen && now - opened_at_ >= open_duration_) return State::kHalfOpen;
  return state_;
}

bool CircuitBreaker::CanSend(Clock::time_point now) const {
  switch (state(now)) {
    case State::kClosed: return true;
    case State::kOpen: return false;
    case State::kHalfOpen: return !trial_in_flight_;
  }
  return false;
}

bool CircuitBreaker::OnSend(Clock::time_point now) {
  if (!CanSend(now)) return false;
  if (state(now) == State::kHalfOpen) {
    state_ = State::kHalfOpen;
    trial_in_flight_ = true;
  }
  return true;
}

void CircuitBreaker::OnSuccess(Clock::time_point now) {
  (void)now;
  failures_ = 0;
  if (state_ == State::kHalfOpen) {
    state_ = State::kClosed;
    trial_in_flight_ = false;
  }
}

bool CircuitBreaker::OnFailure(Clock::time_point now) {
  ++failures_;
  if (state_ == State::kHalfOpen) {
    Open(now);
    return true;
  }
  if (state_ == State::kClosed && failures_ >= threshold_) {
    Open(now);
    return true;
  }
  return false;
}

void CircuitBreaker::OnAbandoned() { trial_in_flight_ = false; }

void CircuitBreaker::Open(Clock::time_point now) {
  state_ = State::kOpen;
  opened_at_ = now;
  trial_in_flight_ = false;
  ++opened_count_;
}

}  // namespace pagoda::gateway

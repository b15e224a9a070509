// Time for code that waits: retry backoffs, lock polling. Production uses the steady clock and
// sleeps that a caller's `cancelled` flag cuts short; tests use FakeClock, whose sleeps return
// at once and only move its time, so a test of a 30 s Retry-After takes no 30 s.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

namespace schedwatch::platform {

class Clock {
 public:
  using Duration = std::chrono::steady_clock::duration;
  using TimePoint = std::chrono::steady_clock::time_point;

  virtual ~Clock() = default;
  virtual TimePoint Now() = 0;
  // Wall-clock Unix seconds, for dates a server sends (Retry-After as an HTTP-date).
  virtual std::int64_t UnixSeconds() = 0;
  // Waits `duration`; returns false, at once, when `cancelled` is or becomes true.
  virtual bool SleepFor(Duration duration, const std::atomic<bool>* cancelled) = 0;
};

// The steady clock; a sleep looks at `cancelled` every 10 ms.
Clock& RealClock();

// A clock that moves only when slept on (or advanced). Thread-safe.
class FakeClock : public Clock {
 public:
  TimePoint Now() override;
  std::int64_t UnixSeconds() override;
  // Records the sleep, runs the hook (which may set `cancelled`, as a refresh giving up
  // during a backoff would), then moves time on unless cancelled.
  bool SleepFor(Duration duration, const std::atomic<bool>* cancelled) override;
  void Advance(Duration duration);  // both clocks, as time passing does
  // The wall clock alone, as a clock step (NTP, an operator's `date -s`) moves it.
  void StepWallClock(std::chrono::seconds step);
  std::vector<Duration> sleeps() const;
  void set_on_sleep(std::function<void(Duration)> hook) { on_sleep_ = std::move(hook); }

 private:
  mutable std::mutex mutex_;
  TimePoint now_{std::chrono::hours(1)};
  std::int64_t unix_seconds_ = 1764504000;  // 2025-11-30T12:00:00Z
  std::vector<Duration> sleeps_;
  std::function<void(Duration)> on_sleep_;
};

}  // namespace schedwatch::platform

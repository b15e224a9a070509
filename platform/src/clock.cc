#include "schedwatch/platform/clock.h"

#include <algorithm>
#include <thread>

namespace schedwatch::platform {
namespace {

// How long a cancelled sleep may go on before it notices: the flag has no wake-up of its own.
constexpr std::chrono::milliseconds kCancelPoll{10};

class SteadyClock : public Clock {
 public:
  TimePoint Now() override { return std::chrono::steady_clock::now(); }
  std::int64_t UnixSeconds() override {
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }

  bool SleepFor(Duration duration, const std::atomic<bool>* cancelled) override {
    auto until = Now() + duration;
    for (;;) {
      if (cancelled != nullptr && cancelled->load()) return false;
      auto now = Now();
      if (now >= until) return true;
      std::this_thread::sleep_for(std::min<Duration>(kCancelPoll, until - now));
    }
  }
};

}  // namespace

Clock& RealClock() {
  static SteadyClock clock;
  return clock;
}

Clock::TimePoint FakeClock::Now() {
  std::lock_guard<std::mutex> lock(mutex_);
  return now_;
}

std::int64_t FakeClock::UnixSeconds() {
  std::lock_guard<std::mutex> lock(mutex_);
  return unix_seconds_ + std::chrono::duration_cast<std::chrono::seconds>(now_.time_since_epoch() -
                                                                          std::chrono::hours(1))
                             .count();
}

bool FakeClock::SleepFor(Duration duration, const std::atomic<bool>* cancelled) {
  if (cancelled != nullptr && cancelled->load()) return false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    sleeps_.push_back(duration);
  }
  if (on_sleep_) on_sleep_(duration);
  if (cancelled != nullptr && cancelled->load()) return false;
  Advance(duration);
  return true;
}

void FakeClock::Advance(Duration duration) {
  std::lock_guard<std::mutex> lock(mutex_);
  now_ += duration;
}

void FakeClock::StepWallClock(std::chrono::seconds step) {
  std::lock_guard<std::mutex> lock(mutex_);
  unix_seconds_ += step.count();
}

std::vector<Clock::Duration> FakeClock::sleeps() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return sleeps_;
}

}  // namespace schedwatch::platform

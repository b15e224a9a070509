// Basic auth against the web configuration's bcrypt hashes, on a thread of its own. bcrypt at
// cost 12 takes about 0.3 s of CPU on purpose, so a flood of wrong passwords must not decide
// when a right one is checked:
// - a credential bcrypt accepted (or refused) before is answered at once from a salted digest,
//   without bcrypt and without queueing;
// - the checks wait in one lane per client address (IPv6 by its /64), served in turn, so a
//   flood from one address delays another's check by one bcrypt at most;
// - requests with the same credential from one client wait for one check together;
// - a lane holds few checks and the whole queue a bounded number: what has no room, or has
//   waited longer than `max_wait`, is refused at once (the caller answers 429/503 with
//   Retry-After), never queued without end;
// - an unknown user name is hashed against a dummy hash of the highest configured cost, so it
//   costs what a known name costs.
#pragma once

#include <microhttpd.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace schedwatch {

class PasswordChecker {
 public:
  struct Limits {
    std::size_t per_client = 4;  // checks one client address may have waiting
    std::size_t total = 64;      // checks waiting in all
    std::chrono::milliseconds max_wait{5000};
  };
  enum class Verdict {
    kAccepted,    // the password matches
    kRefused,     // it does not (or the user is unknown)
    kPending,     // queued: `done` is called with the verdict, then the connection resumed
    kClientBusy,  // this client has too many checks waiting (429)
    kServerBusy,  // no room, waited too long, or stopping (503)
  };
  using Done = std::function<void(Verdict)>;

  explicit PasswordChecker(std::map<std::string, std::string> users);
  PasswordChecker(std::map<std::string, std::string> users, Limits limits);
  ~PasswordChecker();
  PasswordChecker(const PasswordChecker&) = delete;
  PasswordChecker& operator=(const PasswordChecker&) = delete;

  // On a server thread. Answers at once from the digests of credentials checked before, or
  // suspends `connection` and queues the check (kPending), or refuses for lack of room. Clears
  // `password` in every case.
  Verdict Check(MHD_Connection* connection, const std::string& client, const std::string& user,
                std::string& password, Done done);

  // Resumes every waiting connection with kServerBusy; no check runs after.
  void Stop();

  // The client address a lane is kept for: the IPv4 address, or an IPv6 address's /64.
  static std::string ClientOf(MHD_Connection* connection);

 private:
  struct Pending {
    MHD_Connection* connection;
    std::string user, password, digest;
    Done done;
    std::chrono::steady_clock::time_point queued;
    // Requests with the same credential from the same client, answered by this one check.
    std::vector<std::pair<MHD_Connection*, Done>> followers;
  };
  void Finish(Pending& pending, Verdict verdict);
  std::string Digest(const std::string& user, const std::string& password) const;
  void Loop();
  bool Verify(const std::string& user, const std::string& password) const;

  const std::map<std::string, std::string> users_;
  const Limits limits_;
  std::string salt_;
  std::string dummy_hash_;  // written by the thread before its first check
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::map<std::string, std::deque<Pending>> lanes_;
  std::deque<std::string> turn_;  // lanes with checks waiting, in the order they are served
  std::size_t waiting_ = 0;
  std::set<std::string> accepted_, refused_;  // digests of credentials checked
  std::thread thread_;
};

}  // namespace schedwatch

#include "exporter/http/web_auth.h"

#include <arpa/inet.h>
#include <crypt.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "exporter/http/web_config.h"

namespace schedwatch {
namespace {

constexpr std::size_t kDigestEntries = 1024;
constexpr std::size_t kFollowers = 64;

void Wipe(std::string& secret) {
  std::fill(secret.begin(), secret.end(), '\0');
  secret.clear();
}

int CostOf(const std::string& bcrypt_hash) {
  return (bcrypt_hash[4] - '0') * 10 + (bcrypt_hash[5] - '0');  // checked when loaded
}

// A bcrypt hash of a random password at `cost`: what an unknown user name is checked against.
std::string DummyHash(int cost) {
  unsigned char random[16];
  gnutls_rnd(GNUTLS_RND_NONCE, random, sizeof(random));
  char setting[CRYPT_GENSALT_OUTPUT_SIZE];
  if (crypt_gensalt_rn("$2b$", static_cast<unsigned long>(cost), reinterpret_cast<char*>(random),
                       sizeof(random), setting, sizeof(setting)) == nullptr) {
    return "";
  }
  auto data = std::make_unique<crypt_data>();
  const char* hash = crypt_r("schedwatch: no such user", setting, data.get());
  return hash != nullptr && hash[0] == '$' ? std::string(hash) : "";
}

}  // namespace

PasswordChecker::PasswordChecker(std::map<std::string, std::string> users)
    : PasswordChecker(std::move(users), Limits{}) {}

PasswordChecker::PasswordChecker(std::map<std::string, std::string> users, Limits limits)
    : users_(std::move(users)), limits_(limits) {
  unsigned char salt[32];
  gnutls_rnd(GNUTLS_RND_NONCE, salt, sizeof(salt));
  salt_.assign(reinterpret_cast<char*>(salt), sizeof(salt));
  thread_ = std::thread([this] { Loop(); });
}

PasswordChecker::~PasswordChecker() { Stop(); }

std::string PasswordChecker::ClientOf(MHD_Connection* connection) {
  const MHD_ConnectionInfo* info =
      MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  if (info == nullptr || info->client_addr == nullptr) return "";
  char text[INET6_ADDRSTRLEN] = "";
  if (info->client_addr->sa_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(info->client_addr)->sin_addr, text,
              sizeof(text));
  } else if (info->client_addr->sa_family == AF_INET6) {
    in6_addr address = reinterpret_cast<const sockaddr_in6*>(info->client_addr)->sin6_addr;
    if (IN6_IS_ADDR_V4MAPPED(&address)) {
      inet_ntop(AF_INET, &address.s6_addr[12], text, sizeof(text));
    } else {
      // One host can hold a whole /64: lanes are kept per /64.
      std::memset(&address.s6_addr[8], 0, 8);
      inet_ntop(AF_INET6, &address, text, sizeof(text));
    }
  }
  return text;
}

std::string PasswordChecker::Digest(const std::string& user, const std::string& password) const {
  std::string input = salt_ + user + '\0' + password;
  unsigned char digest[32];
  gnutls_hash_fast(GNUTLS_DIG_SHA256, input.data(), input.size(), digest);
  Wipe(input);
  return std::string(reinterpret_cast<char*>(digest), sizeof(digest));
}

PasswordChecker::Verdict PasswordChecker::Check(MHD_Connection* connection,
                                                const std::string& client, const std::string& user,
                                                std::string& password, Done done) {
  std::string digest = Digest(user, password);
  std::lock_guard<std::mutex> lock(mutex_);
  if (accepted_.count(digest) > 0) {
    Wipe(password);
    return Verdict::kAccepted;
  }
  // The same wrong credential again costs no bcrypt (the users cannot change while serving).
  if (refused_.count(digest) > 0) {
    Wipe(password);
    return Verdict::kRefused;
  }
  if (stopping_ || waiting_ >= limits_.total) {
    Wipe(password);
    return Verdict::kServerBusy;
  }
  auto& lane = lanes_[client];
  for (auto& pending : lane) {
    if (pending.digest == digest && pending.followers.size() < kFollowers) {
      Wipe(password);
      MHD_suspend_connection(connection);
      pending.followers.emplace_back(connection, std::move(done));
      return Verdict::kPending;
    }
  }
  if (lane.size() >= limits_.per_client) {
    Wipe(password);
    if (lane.empty()) lanes_.erase(client);
    return Verdict::kClientBusy;
  }
  if (lane.empty()) turn_.push_back(client);
  MHD_suspend_connection(connection);
  lane.push_back({connection,
                  user,
                  std::move(password),
                  std::move(digest),
                  std::move(done),
                  std::chrono::steady_clock::now(),
                  {}});
  Wipe(password);
  ++waiting_;
  wake_.notify_one();
  return Verdict::kPending;
}

bool PasswordChecker::Verify(const std::string& user, const std::string& password) const {
  auto it = users_.find(user);
  if (it == users_.end()) {
    // As long as a known name at the highest cost: no oracle for user names.
    if (!dummy_hash_.empty()) VerifyBasicAuthPassword(dummy_hash_, password);
    return false;
  }
  return VerifyBasicAuthPassword(it->second, password);
}

void PasswordChecker::Loop() {
  int cost = 4;
  for (const auto& [user, hash] : users_) cost = std::max(cost, CostOf(hash));
  dummy_hash_ = DummyHash(cost);
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || waiting_ > 0; });
    if (stopping_) break;
    std::string client = std::move(turn_.front());
    turn_.pop_front();
    auto& lane = lanes_[client];
    Pending pending = std::move(lane.front());
    lane.pop_front();
    if (lane.empty()) {
      lanes_.erase(client);
    } else {
      turn_.push_back(client);  // its next check waits for every other lane's
    }
    --waiting_;
    Verdict verdict = Verdict::kServerBusy;
    if (std::chrono::steady_clock::now() - pending.queued <= limits_.max_wait) {
      lock.unlock();
      bool ok = Verify(pending.user, pending.password);
      lock.lock();
      auto& digests = ok ? accepted_ : refused_;
      if (digests.size() >= kDigestEntries) digests.clear();
      digests.insert(pending.digest);
      verdict = ok ? Verdict::kAccepted : Verdict::kRefused;
    }
    Finish(pending, verdict);
  }
  // Every suspended connection must be resumed before the daemon stops.
  for (auto& [client, lane] : lanes_) {
    for (auto& pending : lane) Finish(pending, Verdict::kServerBusy);
  }
  lanes_.clear();
  turn_.clear();
  waiting_ = 0;
}

void PasswordChecker::Finish(Pending& pending, Verdict verdict) {
  Wipe(pending.password);
  pending.done(verdict);
  MHD_resume_connection(pending.connection);
  for (auto& [connection, done] : pending.followers) {
    done(verdict);
    MHD_resume_connection(connection);
  }
}

void PasswordChecker::Stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
}

}  // namespace schedwatch

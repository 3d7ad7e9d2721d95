#include "controller/internal/controller.h"

#include "base/log.h"
#include "client/informer.h"

namespace mkube::controller {

Controller::Controller(std::string name, client::Clock* clock)
    : clock_(clock), name_(std::move(name)), queue_({.name = name_}, clock) {}

Controller::~Controller() { Stop(); }

void Controller::Start(int workers) {
  for (int i = 0; i < workers; ++i) workers_.emplace_back([this] { Work(); });
}

void Controller::Stop() {
  queue_.ShutDown();
  for (auto& w : workers_) {
    if (w.joinable()) w.join();
  }
  workers_.clear();
}

void Controller::Enqueue(const google::protobuf::Message& obj) { queue_.Add(client::KeyOf(obj)); }

void Controller::EnqueueAfter(const google::protobuf::Message& obj, absl::Duration delay) {
  queue_.AddAfter(client::KeyOf(obj), delay);
}

void Controller::Work() {
  spdlog::logger& log = log::Logger(name_.c_str());
  while (auto key = queue_.Get()) {
    absl::Status st = Sync(*key);
    if (st.ok()) {
      queue_.Forget(*key);
    } else {
      log.warn("{}: sync failed (retry {} in {}): {}", *key, queue_.Requeues(*key) + 1,
               absl::FormatDuration(queue_.NextDelay(*key)), st.ToString());
      queue_.AddRateLimited(*key);
    }
    queue_.Done(*key);
  }
}

}  // namespace mkube::controller

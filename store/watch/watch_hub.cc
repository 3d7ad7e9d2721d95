#include "store/watch/watch_hub.h"

#include "spdlog/spdlog.h"

namespace mkube::store::watch {

WatchHub::WatchHub(mvcc::KvStore* store, HubOptions options)
    : store_(store), options_(options) {
  hub_rev_ = store_->Revision();
  std::lock_guard<std::mutex> lock(mu_);
  committed_ = hub_rev_;
}

WatchHub::~WatchHub() { Stop(); }

void WatchHub::Start() {
  next_progress_ = std::chrono::steady_clock::now() + options_.progress_interval;
  thread_ = std::thread([this] { Loop(); });
}

void WatchHub::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void WatchHub::Add(const WatchSinkPtr& sink, int64_t watch_id, WatchSpec spec, int64_t next_rev) {
  std::lock_guard<std::mutex> lock(mu_);
  inbox_.push_back(Command{Command::kAdd, sink, sink.get(), watch_id, std::move(spec), next_rev});
  ++count_;
  cv_.notify_one();
}

void WatchHub::Cancel(const WatchSinkPtr& sink, int64_t watch_id) {
  std::lock_guard<std::mutex> lock(mu_);
  inbox_.push_back(Command{Command::kCancel, sink, sink.get(), watch_id, {}, 0});
  cv_.notify_one();
}

void WatchHub::RemoveSink(const WatchSink* sink) {
  std::lock_guard<std::mutex> lock(mu_);
  inbox_.push_back(Command{Command::kRemoveSink, nullptr, sink, 0, {}, 0});
  cv_.notify_one();
}

void WatchHub::RequestProgress(const WatchSinkPtr& sink) {
  std::lock_guard<std::mutex> lock(mu_);
  inbox_.push_back(Command{Command::kProgress, sink, sink.get(), -1, {}, 0});
  cv_.notify_one();
}

void WatchHub::Wake() {
  std::lock_guard<std::mutex> lock(mu_);
  wake_ = true;
  cv_.notify_one();
}

void WatchHub::OnPublished(int64_t revision) {
  std::lock_guard<std::mutex> lock(mu_);
  committed_ = revision;
  cv_.notify_one();
}

size_t WatchHub::watcher_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return count_;
}

etcdserverpb::WatchResponse WatchHub::NewResponse(int64_t watch_id, int64_t revision) const {
  etcdserverpb::WatchResponse resp;
  auto* h = resp.mutable_header();
  h->set_cluster_id(store_->cluster_id());
  h->set_member_id(store_->member_id());
  h->set_raft_term(mvcc::kRaftTerm);
  h->set_revision(revision);
  resp.set_watch_id(watch_id);
  return resp;
}

void WatchHub::Loop() {
  std::vector<Command> commands;
  bool busy = false;
  for (;;) {
    int64_t target = 0;
    {
      std::unique_lock<std::mutex> lock(mu_);
      auto ready = [&] { return stopping_ || committed_ > hub_rev_ || !inbox_.empty() || wake_; };
      if (!busy) cv_.wait_for(lock, std::chrono::milliseconds(100), ready);
      if (stopping_) return;
      wake_ = false;
      commands.swap(inbox_);
      target = committed_;
    }
    for (auto& cmd : commands) Apply(cmd);
    commands.clear();
    if (target > hub_rev_) FanOut(target);
    CatchUp();
    SendProgress();
    // Keep going without sleeping while unsynced watchers with room remain.
    busy = false;
    for (auto& [key, w] : watchers_) {
      if (!w.synced && w.sink->HasRoom()) busy = true;
    }
  }
}

void WatchHub::Apply(Command& cmd) {
  switch (cmd.kind) {
    case Command::kAdd: {
      Watcher w;
      w.sink = cmd.sink;
      w.id = cmd.watch_id;
      w.range = mvcc::KeyRange(cmd.spec.key, cmd.spec.range_end);
      w.spec = std::move(cmd.spec);
      w.next_rev = cmd.next_rev;
      w.synced = w.next_rev > hub_rev_;
      watchers_[{cmd.raw, cmd.watch_id}] = std::move(w);
      break;
    }
    case Command::kCancel: {
      auto it = watchers_.find({cmd.raw, cmd.watch_id});
      if (it == watchers_.end()) break;
      auto resp = NewResponse(cmd.watch_id, hub_rev_);
      resp.set_canceled(true);
      cmd.sink->Send(std::move(resp), /*force=*/true);
      watchers_.erase(it);
      std::lock_guard<std::mutex> lock(mu_);
      --count_;
      break;
    }
    case Command::kRemoveSink: {
      auto it = watchers_.lower_bound({cmd.raw, INT64_MIN});
      size_t removed = 0;
      while (it != watchers_.end() && it->first.first == cmd.raw) {
        it = watchers_.erase(it);
        ++removed;
      }
      std::erase_if(progress_waiting_, [&](const WatchSinkPtr& s) { return s.get() == cmd.raw; });
      std::lock_guard<std::mutex> lock(mu_);
      count_ -= removed;
      break;
    }
    case Command::kProgress:
      progress_waiting_.push_back(cmd.sink);
      break;
  }
}

bool WatchHub::Deliver(Watcher& w, const std::vector<mvccpb::Event>& events, int64_t header_rev) {
  etcdserverpb::WatchResponse resp;
  bool open = false;
  int64_t first_rev = 0;  // first revision in the pending response
  int64_t last_rev = 0;
  size_t count = 0;
  auto flush = [&]() -> bool {
    if (!open) return true;
    open = false;
    count = 0;
    if (!w.sink->Send(std::move(resp), false)) {
      w.next_rev = first_rev;
      return false;
    }
    return true;
  };
  for (const auto& ev : events) {
    const int64_t rev = ev.kv().mod_revision();
    if (rev < w.next_rev) continue;
    if (!w.range.Contains(ev.kv().key())) continue;
    const bool is_put = ev.type() == mvccpb::Event::PUT;
    if ((is_put && w.spec.no_put) || (!is_put && w.spec.no_delete)) continue;
    if (open && count >= options_.max_events_per_response && rev != last_rev) {
      if (!flush()) return false;
    }
    if (!open) {
      resp = NewResponse(w.id, header_rev);
      open = true;
      first_rev = rev;
    }
    mvccpb::Event* out = resp.add_events();
    *out = ev;
    if (!w.spec.prev_kv) out->clear_prev_kv();
    ++count;
    last_rev = rev;
  }
  return flush();
}

void WatchHub::FanOut(int64_t target) {
  std::vector<mvccpb::Event> events;
  while (hub_rev_ < target) {
    events.clear();
    auto last = store_->ReadEvents(hub_rev_ + 1, target, 10000, &events);
    if (!last.ok()) {
      // History this recent can only be gone if compaction overtook the hub: every synced
      // watcher falls back to catching up, which cancels those that lost events.
      spdlog::warn("watch hub cannot read revisions from {}: {}", hub_rev_ + 1,
                   last.status().ToString());
      for (auto& [key, w] : watchers_) w.synced = false;
      hub_rev_ = target;
      return;
    }
    for (auto& [key, w] : watchers_) {
      if (!w.synced) continue;
      if (Deliver(w, events, *last)) {
        w.next_rev = std::max(w.next_rev, *last + 1);
      } else {
        w.synced = false;
      }
    }
    hub_rev_ = *last;
  }
}

void WatchHub::CatchUp() {
  const int64_t compacted = store_->CompactedRevision();
  std::vector<mvccpb::Event> events;
  for (auto it = watchers_.begin(); it != watchers_.end();) {
    Watcher& w = it->second;
    if (w.synced || !w.sink->HasRoom()) {
      ++it;
      continue;
    }
    absl::StatusOr<int64_t> last = absl::OutOfRangeError("compacted");
    if (w.next_rev >= compacted) {
      events.clear();
      last = store_->ReadEvents(w.next_rev, hub_rev_, options_.catchup_batch, &events);
    }
    if (!last.ok()) {
      auto resp = NewResponse(w.id, 0);
      resp.mutable_header()->set_revision(0);
      resp.set_canceled(true);
      resp.set_compact_revision(store_->CompactedRevision());
      w.sink->Send(std::move(resp), true);
      it = watchers_.erase(it);
      std::lock_guard<std::mutex> lock(mu_);
      --count_;
      continue;
    }
    if (Deliver(w, events, hub_rev_)) {
      w.next_rev = std::max(w.next_rev, *last + 1);
      if (w.next_rev > hub_rev_) w.synced = true;
    }
    ++it;
  }
}

void WatchHub::SendProgress() {
  auto all_synced = [&](const WatchSink* sink) {
    auto it = watchers_.lower_bound({sink, INT64_MIN});
    for (; it != watchers_.end() && it->first.first == sink; ++it) {
      if (!it->second.synced) return false;
    }
    return true;
  };
  std::erase_if(progress_waiting_, [&](const WatchSinkPtr& sink) {
    if (!all_synced(sink.get())) return false;
    sink->Send(NewResponse(-1, hub_rev_), true);
    return true;
  });
  const auto now = std::chrono::steady_clock::now();
  if (now < next_progress_) return;
  next_progress_ = now + options_.progress_interval;
  for (auto& [key, w] : watchers_) {
    if (w.synced && w.spec.progress_notify) w.sink->Send(NewResponse(w.id, hub_rev_), false);
  }
}

}  // namespace mkube::store::watch

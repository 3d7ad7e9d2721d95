#include "store/watch/watch_hub.h"

#include <array>

#include "base/log.h"

namespace mkube::store::watch {

namespace {

spdlog::logger& Log() {
  static spdlog::logger& logger = log::Logger("watch");
  return logger;
}

}  // namespace

WatchHub::WatchHub(mvcc::KvStore* store, HubOptions options)
    : store_(store), options_(options) {
  hub_rev_ = store_->Revision();
  absl::MutexLock lock(&mu_);
  committed_ = hub_rev_;
}

WatchHub::~WatchHub() { Stop(); }

void WatchHub::Start() {
  next_progress_ = std::chrono::steady_clock::now() + options_.progress_interval;
  thread_ = std::thread([this] { Loop(); });
}

void WatchHub::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  cv_.SignalAll();
  if (thread_.joinable()) thread_.join();
}

bool WatchHub::Add(const WatchSinkPtr& sink, int64_t watch_id, WatchSpec spec, int64_t next_rev) {
  absl::MutexLock lock(&mu_);
  if (inbox_adds_ >= options_.max_pending_adds) return false;
  inbox_.push_back(Command{Command::kAdd, sink, sink.get(), watch_id, std::move(spec), next_rev});
  ++inbox_adds_;
  ++count_;
  cv_.Signal();
  return true;
}

void WatchHub::Cancel(const WatchSinkPtr& sink, int64_t watch_id) {
  absl::MutexLock lock(&mu_);
  inbox_.push_back(Command{Command::kCancel, sink, sink.get(), watch_id, {}, 0});
  cv_.Signal();
}

void WatchHub::RemoveSink(const WatchSink* sink) {
  absl::MutexLock lock(&mu_);
  inbox_.push_back(Command{Command::kRemoveSink, nullptr, sink, 0, {}, 0});
  cv_.Signal();
}

void WatchHub::RequestProgress(const WatchSinkPtr& sink) {
  absl::MutexLock lock(&mu_);
  // One already waiting in the inbox answers this one too: it is applied, and answered, no
  // earlier than this one would be.
  if (!progress_asked_.insert(sink.get()).second) return;
  inbox_.push_back(Command{Command::kProgress, sink, sink.get(), -1, {}, 0});
  cv_.Signal();
}

void WatchHub::Wake() {
  absl::MutexLock lock(&mu_);
  wake_ = true;
  cv_.Signal();
}

void WatchHub::OnPublished(int64_t revision) {
  absl::MutexLock lock(&mu_);
  committed_ = revision;
  cv_.Signal();
}

size_t WatchHub::watcher_count() const {
  absl::MutexLock lock(&mu_);
  return count_;
}

etcdserverpb::ResponseHeader WatchHub::Header(int64_t revision) const {
  etcdserverpb::ResponseHeader h;
  h.set_cluster_id(store_->cluster_id());
  h.set_member_id(store_->member_id());
  h.set_raft_term(mvcc::kRaftTerm);
  h.set_revision(revision);
  return h;
}

etcdserverpb::WatchResponse WatchHub::NewResponse(int64_t watch_id, int64_t revision) const {
  etcdserverpb::WatchResponse resp;
  *resp.mutable_header() = Header(revision);
  resp.set_watch_id(watch_id);
  return resp;
}

void WatchHub::Loop() {
  std::vector<Command> commands;
  bool busy = false;
  for (;;) {
    int64_t target = 0;
    {
      absl::MutexLock lock(&mu_);
      // A CondVar, not Await: the condition reads hub_rev_, which only this thread may read.
      if (!busy) {
        const absl::Time deadline = absl::Now() + absl::Milliseconds(100);
        while (!stopping_ && committed_ <= hub_rev_ && inbox_.empty() && !wake_ &&
               !cv_.WaitWithDeadline(&mu_, deadline)) {
        }
      }
      if (stopping_) return;
      wake_ = false;
      commands.swap(inbox_);
      inbox_adds_ = 0;
      progress_asked_.clear();
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
      // A hub still behind the writes may hold history the store has compacted away since
      // the watch was asked for: such a watcher goes through catch-up, which cancels it.
      w.synced = w.next_rev > hub_rev_ && w.next_rev >= store_->CompactedRevision();
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
      absl::MutexLock lock(&mu_);
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
      progress_waiting_.erase(cmd.raw);
      absl::MutexLock lock(&mu_);
      count_ -= removed;
      break;
    }
    case Command::kProgress:
      // A request already waiting for this sink answers this one too.
      progress_waiting_.emplace(cmd.raw, cmd.sink);
      break;
  }
}

bool WatchSink::SendEvents(EncodedEvents&& events, bool force) {
  etcdserverpb::WatchResponse resp;
  resp.set_watch_id(events.watch_id);
  *resp.mutable_header() = std::move(events.header);
  for (const auto& e : events.events) resp.MergeFromString(*e);
  return Send(std::move(resp), force);
}

// The wire forms of a batch of events, made when a watcher first needs them: with and
// without the previous version (watchers that did not ask for prev_kv do not get it).
class WatchHub::EventWire {
 public:
  explicit EventWire(const std::vector<mvccpb::Event>& events)
      : events_(events), wire_(events.size()) {}

  const std::shared_ptr<const std::string>& Get(size_t i, bool prev_kv) {
    auto& slot = wire_[i][prev_kv ? 1 : 0];
    if (slot) return slot;
    const mvccpb::Event* ev = &events_[i];
    mvccpb::Event without;
    if (!prev_kv && ev->has_prev_kv()) {
      without = *ev;
      without.clear_prev_kv();
      ev = &without;
    }
    const size_t body = ev->ByteSizeLong();
    std::string out;
    out.reserve(body + 6);
    out.push_back(static_cast<char>((11 << 3) | 2));  // WatchResponse.events, length-delimited
    for (size_t v = body;; v >>= 7) {
      out.push_back(static_cast<char>((v & 0x7f) | (v >= 0x80 ? 0x80 : 0)));
      if (v < 0x80) break;
    }
    const size_t head = out.size();
    out.resize(head + body);
    ev->SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(out.data() + head));
    slot = std::make_shared<const std::string>(std::move(out));
    return slot;
  }

 private:
  const std::vector<mvccpb::Event>& events_;
  std::vector<std::array<std::shared_ptr<const std::string>, 2>> wire_;
};

bool WatchHub::Deliver(Watcher& w, const std::vector<mvccpb::Event>& events, EventWire& wire,
                       int64_t header_rev) {
  EncodedEvents resp;
  bool open = false;
  int64_t first_rev = 0;  // first revision in the pending response
  int64_t last_rev = 0;
  auto flush = [&]() -> bool {
    if (!open) return true;
    open = false;
    if (!w.sink->SendEvents(std::move(resp), false)) {
      w.next_rev = first_rev;
      return false;
    }
    return true;
  };
  for (size_t i = 0; i < events.size(); ++i) {
    const mvccpb::Event& ev = events[i];
    const int64_t rev = ev.kv().mod_revision();
    if (rev < w.next_rev) continue;
    if (!w.range.Contains(ev.kv().key())) continue;
    const bool is_put = ev.type() == mvccpb::Event::PUT;
    if ((is_put && w.spec.no_put) || (!is_put && w.spec.no_delete)) continue;
    if (open && resp.events.size() >= options_.max_events_per_response && rev != last_rev) {
      if (!flush()) return false;
    }
    if (!open) {
      resp = EncodedEvents{};
      resp.watch_id = w.id;
      resp.header = Header(header_rev);
      open = true;
      first_rev = rev;
    }
    const auto& bytes = wire.Get(i, w.spec.prev_kv);
    resp.bytes += bytes->size();
    resp.events.push_back(bytes);
    last_rev = rev;
  }
  return flush();
}

void WatchHub::FanOut(int64_t target) {
  // With nobody in sync there is nothing to send; watchers added later catch up from history.
  bool any_synced = false;
  for (auto& [key, w] : watchers_) any_synced = any_synced || w.synced;
  if (!any_synced) {
    hub_rev_ = target;
    return;
  }
  std::vector<mvccpb::Event> events;
  while (hub_rev_ < target) {
    events.clear();
    auto last = store_->ReadEvents(hub_rev_ + 1, target, 10000, &events);
    if (!last.ok()) {
      // History this recent can only be gone if compaction overtook the hub: every synced
      // watcher falls back to catching up, which cancels those that lost events.
      Log().warn("watch hub cannot read revisions {} to {}: {}", hub_rev_ + 1, target,
                 last.status().ToString());
      for (auto& [key, w] : watchers_) w.synced = false;
      hub_rev_ = target;
      return;
    }
    EventWire wire(events);
    for (auto& [key, w] : watchers_) {
      if (!w.synced) continue;
      if (Deliver(w, events, wire, *last)) {
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
      absl::MutexLock lock(&mu_);
      --count_;
      continue;
    }
    EventWire wire(events);
    if (Deliver(w, events, wire, hub_rev_)) {
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
  std::erase_if(progress_waiting_, [&](const auto& entry) {
    if (!all_synced(entry.first)) return false;
    entry.second->Send(NewResponse(-1, hub_rev_), true);
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

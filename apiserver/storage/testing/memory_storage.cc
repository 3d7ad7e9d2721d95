#include "apiserver/storage/testing/memory_storage.h"

#include <algorithm>
#include <deque>
#include <map>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "apiserver/storage/requests.h"
#include "base/status.h"

namespace mkube::apiserver::storage::testing {
namespace {

// etcd's words, which the apiserver and its clients match on.
constexpr char kErrCompacted[] = "etcdserver: mvcc: required revision has been compacted";
constexpr char kErrFutureRev[] = "etcdserver: mvcc: required revision is a future revision";
constexpr char kErrEmptyKey[] = "etcdserver: key is not provided";
constexpr char kErrRequestTooLarge[] = "etcdserver: request is too large";

// Whether key is in the range etcd's (start, end) names: start alone when end is empty,
// every key from start on when end is "\0".
bool InRange(const std::string& key, const std::string& start, const std::string& end) {
  if (end.empty()) return key == start;
  if (key < start) return false;
  return end == std::string(1, '\0') || key < end;
}

template <typename T>
bool Compared(etcdserverpb::Compare::CompareResult result, const T& have, const T& want) {
  switch (result) {
    case etcdserverpb::Compare::EQUAL: return have == want;
    case etcdserverpb::Compare::GREATER: return have > want;
    case etcdserverpb::Compare::LESS: return have < want;
    case etcdserverpb::Compare::NOT_EQUAL: return have != want;
    default: return false;
  }
}

bool KeyHolds(const etcdserverpb::Compare& c, const mvccpb::KeyValue& kv) {
  switch (c.target()) {
    case etcdserverpb::Compare::VERSION: return Compared(c.result(), kv.version(), c.version());
    case etcdserverpb::Compare::CREATE:
      return Compared(c.result(), kv.create_revision(), c.create_revision());
    case etcdserverpb::Compare::MOD: return Compared(c.result(), kv.mod_revision(), c.mod_revision());
    case etcdserverpb::Compare::VALUE: return Compared(c.result(), kv.value(), c.value());
    default: return false;
  }
}

absl::Status NotKept(const char* what) {
  return absl::UnimplementedError(std::string("MemoryStorage does not keep ") + what);
}

absl::Status CheckRange(const etcdserverpb::RangeRequest& r) {
  if (r.key().empty()) return absl::InvalidArgumentError(kErrEmptyKey);
  if (r.revision() != 0) return NotKept("past revisions");
  if (r.sort_order() != etcdserverpb::RangeRequest::NONE || r.keys_only() || r.count_only()) {
    return NotKept("sorted, keys-only or count-only ranges");
  }
  return absl::OkStatus();
}

absl::Status CheckOps(const google::protobuf::RepeatedPtrField<etcdserverpb::RequestOp>& ops) {
  for (const auto& op : ops) {
    switch (op.request_case()) {
      case etcdserverpb::RequestOp::kRequestRange:
        MKUBE_RETURN_IF_ERROR(CheckRange(op.request_range()));
        break;
      case etcdserverpb::RequestOp::kRequestPut:
        if (op.request_put().key().empty()) return absl::InvalidArgumentError(kErrEmptyKey);
        if (op.request_put().lease() != 0 || op.request_put().ignore_value() ||
            op.request_put().ignore_lease()) {
          return NotKept("leases");
        }
        break;
      case etcdserverpb::RequestOp::kRequestDeleteRange:
        if (op.request_delete_range().key().empty()) {
          return absl::InvalidArgumentError(kErrEmptyKey);
        }
        break;
      default: return NotKept("nested transactions");
    }
  }
  return absl::OkStatus();
}

}  // namespace

struct MemoryStorage::State {
  explicit State(size_t max_request_bytes) : max_request_bytes(max_request_bytes) {}

  void Header(etcdserverpb::ResponseHeader* header) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    header->set_revision(revision);
  }
  etcdserverpb::RangeResponse Range(const etcdserverpb::RangeRequest& req) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // Whether the compare holds for every key it names (one with none compares as a key that
  // has never been written, except that a value compare on it fails, as etcd's does).
  bool Holds(const etcdserverpb::Compare& c) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // Applies one op of a transaction whose writes make revision `rev`; true if it wrote.
  bool Apply(const etcdserverpb::RequestOp& op, int64_t rev, etcdserverpb::ResponseOp* out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  void Put(const etcdserverpb::PutRequest& req, int64_t rev, etcdserverpb::PutResponse* out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  void Delete(const etcdserverpb::DeleteRangeRequest& req, int64_t rev,
              etcdserverpb::DeleteRangeResponse* out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);

  const size_t max_request_bytes;
  mutable absl::Mutex mu;
  std::map<std::string, mvccpb::KeyValue> keys ABSL_GUARDED_BY(mu);
  // Every event from the compacted revision on, in revision order: for a put, the key as
  // written; for a delete, the key and the revision of its deletion. prev_kv is always kept.
  std::deque<mvccpb::Event> history ABSL_GUARDED_BY(mu);
  int64_t revision ABSL_GUARDED_BY(mu) = 1;
  int64_t compacted ABSL_GUARDED_BY(mu) = 0;
  bool closed ABSL_GUARDED_BY(mu) = false;  // the storage is gone: its watches end
};

etcdserverpb::RangeResponse MemoryStorage::State::Range(
    const etcdserverpb::RangeRequest& req) const {
  etcdserverpb::RangeResponse out;
  Header(out.mutable_header());
  for (auto it = keys.lower_bound(req.key());
       it != keys.end() && InRange(it->first, req.key(), req.range_end()); ++it) {
    out.set_count(out.count() + 1);
    if (req.limit() > 0 && out.kvs_size() == req.limit()) {
      out.set_more(true);
      continue;
    }
    *out.add_kvs() = it->second;
  }
  return out;
}

bool MemoryStorage::State::Holds(const etcdserverpb::Compare& c) const {
  bool any = false;
  for (auto it = keys.lower_bound(c.key());
       it != keys.end() && InRange(it->first, c.key(), c.range_end()); ++it) {
    if (!KeyHolds(c, it->second)) return false;
    any = true;
  }
  if (any) return true;
  return c.target() != etcdserverpb::Compare::VALUE && KeyHolds(c, mvccpb::KeyValue());
}

bool MemoryStorage::State::Apply(const etcdserverpb::RequestOp& op, int64_t rev,
                                 etcdserverpb::ResponseOp* out) {
  switch (op.request_case()) {
    case etcdserverpb::RequestOp::kRequestRange:
      *out->mutable_response_range() = Range(op.request_range());
      return false;
    case etcdserverpb::RequestOp::kRequestPut:
      Put(op.request_put(), rev, out->mutable_response_put());
      return true;
    case etcdserverpb::RequestOp::kRequestDeleteRange: {
      auto* deleted = out->mutable_response_delete_range();
      Delete(op.request_delete_range(), rev, deleted);
      return deleted->deleted() > 0;
    }
    default: return false;  // refused before
  }
}

void MemoryStorage::State::Put(const etcdserverpb::PutRequest& req, int64_t rev,
                               etcdserverpb::PutResponse* out) {
  Header(out->mutable_header());
  mvccpb::KeyValue& kv = keys[req.key()];
  mvccpb::Event event;
  event.set_type(mvccpb::Event::PUT);
  if (kv.create_revision() != 0) {
    *event.mutable_prev_kv() = kv;
    if (req.prev_kv()) *out->mutable_prev_kv() = kv;
  } else {
    kv.set_key(req.key());
    kv.set_create_revision(rev);
  }
  kv.set_mod_revision(rev);
  kv.set_version(kv.version() + 1);
  kv.set_value(req.value());
  *event.mutable_kv() = kv;
  history.push_back(std::move(event));
}

void MemoryStorage::State::Delete(const etcdserverpb::DeleteRangeRequest& req, int64_t rev,
                                  etcdserverpb::DeleteRangeResponse* out) {
  Header(out->mutable_header());
  auto it = keys.lower_bound(req.key());
  while (it != keys.end() && InRange(it->first, req.key(), req.range_end())) {
    mvccpb::Event event;
    event.set_type(mvccpb::Event::DELETE);
    event.mutable_kv()->set_key(it->first);
    event.mutable_kv()->set_mod_revision(rev);
    if (req.prev_kv()) *out->add_prev_kvs() = it->second;
    *event.mutable_prev_kv() = std::move(it->second);
    history.push_back(std::move(event));
    it = keys.erase(it);
    out->set_deleted(out->deleted() + 1);
  }
}

// A watch reads the history from the revision after the last it sent. It waits on the
// storage's lock with a condition, so writers only release the lock to wake it.
class MemoryStorage::MemoryWatch final : public WatchStream {
 public:
  MemoryWatch(std::shared_ptr<State> state, etcdserverpb::WatchCreateRequest create,
              absl::Duration timeout)
      : state_(std::move(state)), create_(std::move(create)), deadline_(absl::Now() + timeout) {}

  bool Read(etcdserverpb::WatchResponse* response) override {
    absl::MutexLock lock(&state_->mu);
    response->Clear();
    if (ended_ || cancelled_ || state_->closed) return false;
    if (!created_) {
      created_ = true;
      next_ = create_.start_revision() > 0 ? create_.start_revision() : state_->revision + 1;
      state_->Header(response->mutable_header());
      response->set_created(true);
      return true;
    }
    for (;;) {
      if (!state_->mu.AwaitWithDeadline(absl::Condition(this, &MemoryWatch::Ready), deadline_) ||
          cancelled_ || state_->closed) {
        ended_ = true;
        return false;
      }
      state_->Header(response->mutable_header());
      if (next_ < state_->compacted) {
        response->set_canceled(true);
        response->set_compact_revision(state_->compacted);
        ended_ = true;
        return true;
      }
      if (Collect(response)) return true;
    }
  }

  void Cancel() override {
    absl::MutexLock lock(&state_->mu);
    cancelled_ = true;
  }

 private:
  bool Ready() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_->mu) {
    return cancelled_ || state_->closed || next_ < state_->compacted ||
           state_->revision >= next_;
  }

  // Adds the events from next_ on that the watch concerns; true if there were any.
  bool Collect(etcdserverpb::WatchResponse* response)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_->mu) {
    const int64_t from = next_;
    auto it = std::partition_point(state_->history.begin(), state_->history.end(),
                                   [from](const auto& e) { return e.kv().mod_revision() < from; });
    for (; it != state_->history.end(); ++it) {
      if (!InRange(it->kv().key(), create_.key(), create_.range_end())) continue;
      mvccpb::Event* event = response->add_events();
      event->set_type(it->type());
      *event->mutable_kv() = it->kv();
      if (create_.prev_kv() && it->has_prev_kv()) *event->mutable_prev_kv() = it->prev_kv();
    }
    next_ = state_->revision + 1;
    return response->events_size() > 0;
  }

  const std::shared_ptr<State> state_;
  const etcdserverpb::WatchCreateRequest create_;
  const absl::Time deadline_;
  bool cancelled_ ABSL_GUARDED_BY(state_->mu) = false;
  bool created_ ABSL_GUARDED_BY(state_->mu) = false;
  bool ended_ ABSL_GUARDED_BY(state_->mu) = false;
  int64_t next_ ABSL_GUARDED_BY(state_->mu) = 0;  // the first revision not yet looked at
};

MemoryStorage::MemoryStorage(size_t max_request_bytes)
    : state_(std::make_shared<State>(max_request_bytes)) {}

MemoryStorage::~MemoryStorage() {
  absl::MutexLock lock(&state_->mu);
  state_->closed = true;
}

absl::StatusOr<etcdserverpb::RangeResponse> MemoryStorage::Range(
    const etcdserverpb::RangeRequest& req) {
  MKUBE_RETURN_IF_ERROR(CheckRange(req));
  absl::MutexLock lock(&state_->mu);
  return state_->Range(req);
}

absl::StatusOr<etcdserverpb::RangeResponse> MemoryStorage::Get(const std::string& key) {
  return Range(RangeOfKey(key));
}

void MemoryStorage::GetAsync(const std::string& key, Done<etcdserverpb::RangeResponse> done) {
  done(Get(key));
}

absl::StatusOr<etcdserverpb::RangeResponse> MemoryStorage::List(const std::string& prefix,
                                                                int64_t limit) {
  return Range(RangeOfPrefix(prefix, limit));
}

absl::StatusOr<etcdserverpb::TxnResponse> MemoryStorage::Txn(const etcdserverpb::TxnRequest& req) {
  if (req.ByteSizeLong() > state_->max_request_bytes) {
    return absl::ResourceExhaustedError(kErrRequestTooLarge);
  }
  for (const auto& c : req.compare()) {
    if (c.key().empty()) return absl::InvalidArgumentError(kErrEmptyKey);
  }
  MKUBE_RETURN_IF_ERROR(CheckOps(req.success()));
  MKUBE_RETURN_IF_ERROR(CheckOps(req.failure()));
  State& s = *state_;
  etcdserverpb::TxnResponse out;
  absl::MutexLock lock(&s.mu);
  bool succeeded = true;
  for (const auto& c : req.compare()) succeeded = succeeded && s.Holds(c);
  out.set_succeeded(succeeded);
  // Every write of one transaction is at the same revision.
  const int64_t rev = s.revision + 1;
  bool wrote = false;
  for (const auto& op : succeeded ? req.success() : req.failure()) {
    wrote = s.Apply(op, rev, out.add_responses()) || wrote;
  }
  if (wrote) s.revision = rev;
  s.Header(out.mutable_header());
  return out;
}

void MemoryStorage::TxnAsync(etcdserverpb::TxnRequest req, Done<etcdserverpb::TxnResponse> done) {
  done(Txn(req));
}

WatchStreamPtr MemoryStorage::Watch(etcdserverpb::WatchCreateRequest create,
                                    absl::Duration timeout) {
  return std::make_unique<MemoryWatch>(state_, std::move(create), timeout);
}

absl::Status MemoryStorage::Compact(int64_t revision) {
  State& s = *state_;
  absl::MutexLock lock(&s.mu);
  if (revision <= s.compacted) return absl::OutOfRangeError(kErrCompacted);
  if (revision > s.revision) return absl::OutOfRangeError(kErrFutureRev);
  s.compacted = revision;
  while (!s.history.empty() && s.history.front().kv().mod_revision() < revision) {
    s.history.pop_front();
  }
  return absl::OkStatus();
}

}  // namespace mkube::apiserver::storage::testing

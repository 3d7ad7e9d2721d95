// The registry's writes to the store: made without waiting (the answer goes to a Done), or
// waited for by the calls that need the answer on their own thread.
#include "absl/synchronization/notification.h"
#include "api/object.h"
#include "apiserver/registry/errors.h"
#include "apiserver/registry/registry.h"
#include "apiserver/storage/requests.h"

namespace mkube::apiserver::registry {
namespace {

// How many times a write is planned again after losing to another writer before it gives
// up. Each try starts from the object that beat it, read by the losing transaction itself,
// so a loss costs one round trip; a hundred in a row means the object is rewritten faster
// than the store answers.
constexpr int kMaxAttempts = 100;

}  // namespace

absl::StatusOr<std::string> Registry::Wait(const std::function<void(Done)>& start) {
  absl::StatusOr<std::string> answer;
  absl::Notification answered;  // may be dropped once waited for, as Notify returns
  start([&](absl::StatusOr<std::string> r) {
    answer = std::move(r);
    answered.Notify();
  });
  answered.WaitForNotification();
  return answer;
}

absl::StatusOr<cache::EntryPtr> Registry::Found(const api::KindInfo& kind, const std::string& key,
                                                const std::string& name,
                                                absl::StatusOr<etcdserverpb::RangeResponse> r) {
  if (!r.ok()) return r.status();
  if (r->kvs().empty()) return NotFound(kind, name);
  return cache::WatchCache::Decode(key, r->kvs(0).value(), r->kvs(0).mod_revision());
}

absl::StatusOr<cache::EntryPtr> Registry::Current(const api::KindInfo& kind, const std::string& key,
                                                  const std::string& name) {
  return Found(kind, key, name, store_->Get(key));
}

void Registry::ReadModifyWrite(const api::KindInfo& kind, const std::string& key,
                               const std::string& name, From from, Plan plan, Done done) {
  auto job = std::make_shared<const Job>(Job{&kind, key, name, std::move(plan)});
  if (from == From::kCache) {
    if (cache::EntryPtr cached = cache_->Get(key)) {
      return Attempt(job, cached, /*cached=*/true, 1, std::move(done));
    }
  }
  ReadAndAttempt(job, 1, std::move(done));
}

void Registry::ReadAndAttempt(JobPtr job, int attempt, Done done) {
  store_->GetAsync(job->key, [this, job, attempt, done = std::move(done)](auto r) mutable {
    auto cur = Found(*job->kind, job->key, job->name, std::move(r));
    if (!cur.ok()) return done(cur.status());
    Attempt(job, *cur, /*cached=*/false, attempt, std::move(done));
  });
}

void Registry::Attempt(JobPtr job, const cache::EntryPtr& current, bool cached, int attempt,
                       Done done) {
  auto w = job->plan(current);
  if (!w.ok()) {
    // A refusal judged on the cache's copy may come of its lagging: the store's copy decides.
    if (cached) return ReadAndAttempt(std::move(job), attempt, std::move(done));
    return done(w.status());
  }
  if (w->answer) return done(std::move(*w->answer));
  etcdserverpb::TxnRequest txn = TxnOf(*w);
  store_->TxnAsync(std::move(txn), [this, job = std::move(job), attempt, w = std::move(*w),
                                    done = std::move(done)](auto r) mutable {
    // A store that did not answer may still have made the write: it is not made again.
    if (!r.ok() || r->succeeded() || w.revision == 0) return done(Outcome(w, std::move(r)));
    // Another writer came first: plan again on what it wrote, which the failure branch read.
    const auto& kvs = r->responses(0).response_range().kvs();
    if (kvs.empty()) return done(NotFound(*job->kind, job->name));
    if (attempt >= kMaxAttempts) return done(KeptChanging(*job->kind, job->name, attempt));
    auto cur = cache::WatchCache::Decode(job->key, kvs[0].value(), kvs[0].mod_revision());
    if (!cur.ok()) return done(cur.status());
    Attempt(std::move(job), *cur, /*cached=*/false, attempt + 1, std::move(done));
  });
}

void Registry::Execute(Write w, Done done) {
  if (w.answer) return done(std::move(*w.answer));
  etcdserverpb::TxnRequest txn = TxnOf(w);
  store_->TxnAsync(std::move(txn), [w = std::move(w), done = std::move(done)](auto r) mutable {
    done(Outcome(w, std::move(r)));
  });
}

absl::StatusOr<std::string> Registry::Outcome(Write& w,
                                              absl::StatusOr<etcdserverpb::TxnResponse> r) {
  if (!r.ok()) return r.status();
  if (!r->succeeded()) {
    if (w.revision == 0) return AlreadyExists(*w.kind, w.name);
    // The failure branch read the key: gone, or changed.
    if (r->responses(0).response_range().kvs().empty()) return NotFound(*w.kind, w.name);
    return Conflict(*w.kind, w.name);
  }
  api::MutableMetaOf(w.object.get())->set_resource_version(std::to_string(r->header().revision()));
  return w.object->SerializeAsString();
}

absl::StatusOr<std::string> Registry::Create(const CreateRequest& req) {
  return Wait([&](Done done) { Create(req, std::move(done)); });
}

absl::StatusOr<std::string> Registry::Update(const UpdateRequest& req, Admit admit) {
  return Wait([&](Done done) { Update(req, std::move(admit), std::move(done)); });
}

etcdserverpb::TxnRequest Registry::TxnOf(const Write& w) {
  if (w.remove) return storage::DeleteTxn(w.key, w.revision);
  api::MutableMetaOf(w.object.get())->clear_resource_version();
  const std::string value = w.object->SerializeAsString();
  return w.revision == 0 ? storage::CreateTxn(w.key, value)
                         : storage::UpdateTxn(w.key, w.revision, value);
}

}  // namespace mkube::apiserver::registry

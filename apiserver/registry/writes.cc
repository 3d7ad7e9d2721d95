// The registry's writes to the store: made without waiting (the answer goes to a Done), or
// waited for by the calls that need the answer on their own thread.
#include "absl/synchronization/notification.h"
#include "api/object.h"
#include "apiserver/registry/errors.h"
#include "apiserver/registry/registry.h"

namespace mkube::apiserver::registry {
namespace {

// Runs `start` and waits for the answer it hands to its Done.
absl::StatusOr<std::string> Wait(const std::function<void(Registry::Done)>& start) {
  absl::StatusOr<std::string> answer;
  absl::Notification answered;  // may be dropped once waited for, as Notify returns
  start([&](absl::StatusOr<std::string> r) {
    answer = std::move(r);
    answered.Notify();
  });
  answered.WaitForNotification();
  return answer;
}

}  // namespace

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
                               const std::string& name, bool dry_run, Plan plan, Done done) {
  auto from_store = [this, kind = &kind, key, name, plan, done] {
    store_->GetAsync(key, [this, kind, key, name, plan, done](auto r) {
      auto cur = Found(*kind, key, name, std::move(r));
      if (!cur.ok()) return done(cur.status());
      Attempt(plan, *cur, done);
    });
  };
  if (!dry_run) {
    if (cache::EntryPtr cached = cache_->Get(key)) {
      Attempt(plan, cached, [done, from_store](absl::StatusOr<std::string> r) {
        // A store that failed to answer may still have made the write: no second one.
        const absl::StatusCode code = r.status().code();
        if (r.ok() || code == absl::StatusCode::kUnavailable ||
            code == absl::StatusCode::kDeadlineExceeded) {
          return done(std::move(r));
        }
        from_store();
      });
      return;
    }
  }
  from_store();
}

void Registry::Attempt(const Plan& plan, const cache::EntryPtr& current, Done done) {
  auto w = plan(current);
  if (!w.ok()) return done(w.status());
  Execute(std::move(*w), std::move(done));
}

void Registry::Execute(Write w, Done done) {
  if (w.answer) return done(std::move(*w.answer));
  etcdserverpb::TxnRequest txn;
  if (w.remove) {
    txn = storage::StoreClient::DeleteTxn(w.key, w.revision);
  } else {
    api::MutableMetaOf(w.object.get())->clear_resource_version();
    const std::string value = w.object->SerializeAsString();
    txn = w.revision == 0 ? storage::StoreClient::CreateTxn(w.key, value)
                          : storage::StoreClient::UpdateTxn(w.key, w.revision, value);
  }
  store_->TxnAsync(std::move(txn), [w = std::move(w), done = std::move(done)](auto r) mutable {
    done(Outcome(w, std::move(r)));
  });
}

absl::StatusOr<std::string> Registry::Outcome(Write& w,
                                              absl::StatusOr<etcdserverpb::TxnResponse> r) {
  if (!r.ok()) return r.status();
  if (!r->succeeded()) {
    if (w.remove) return Conflict(*w.kind, w.name);
    if (w.revision == 0) return AlreadyExists(*w.kind, w.name);
    // The failure branch read the key: gone, or changed.
    if (r->responses(0).response_range().kvs().empty()) return NotFound(*w.kind, w.name);
    return w.lost_race ? *w.lost_race : Conflict(*w.kind, w.name);
  }
  api::MutableMetaOf(w.object.get())->set_resource_version(std::to_string(r->header().revision()));
  return w.object->SerializeAsString();
}

absl::StatusOr<std::string> Registry::Store(const api::KindInfo& kind, const std::string& key,
                                            const std::string& name, int64_t revision,
                                            google::protobuf::Message& obj) {
  // The caller's object, written in place: this waits for the write's end.
  Write w{.kind = &kind, .key = key, .name = name, .revision = revision};
  w.object = std::shared_ptr<google::protobuf::Message>(std::shared_ptr<void>(), &obj);
  return Wait([&](Done done) { Execute(std::move(w), std::move(done)); });
}

absl::StatusOr<std::string> Registry::Remove(const api::KindInfo& kind, const std::string& key,
                                             const std::string& name, int64_t revision,
                                             const google::protobuf::Message& obj) {
  Write w{.kind = &kind, .key = key, .name = name, .revision = revision, .remove = true};
  w.object.reset(obj.New());
  w.object->CopyFrom(obj);
  return Wait([&](Done done) { Execute(std::move(w), std::move(done)); });
}

absl::StatusOr<std::string> Registry::Create(const CreateRequest& req) {
  return Wait([&](Done done) { Create(req, std::move(done)); });
}

absl::StatusOr<std::string> Registry::Update(const UpdateRequest& req, Admit admit) {
  return Wait([&](Done done) { Update(req, std::move(admit), std::move(done)); });
}

}  // namespace mkube::apiserver::registry

#include "apiserver/server/sized_writes.h"

#include <cstdint>
#include <limits>

#include "absl/strings/match.h"
#include "api/kinds.h"
#include "api/object.h"
#include "apiserver/storage/requests.h"
#include "base/status.h"
#include "fmt/format.h"

namespace mkube::apiserver::server {
namespace {

using Done = registry::Registry::Done;

// etcd's words; mkube-store answers with them too.
constexpr char kRequestTooLarge[] = "etcdserver: request is too large";

// A dry run's answer checked by `fits`, then the write itself; `done` gets the store's
// refusals worded.
void Guarded(const std::function<void(Done)>& dry_run, std::function<void(Done)> write,
             std::function<absl::Status(const std::string&)> fits, Done done) {
  Done worded = [done = std::move(done)](absl::StatusOr<std::string> r) {
    done(r.ok() ? std::move(r) : absl::StatusOr<std::string>(SizedWrites::Worded(r.status())));
  };
  if (!dry_run) return write(std::move(worded));
  dry_run([write = std::move(write), fits = std::move(fits),
           worded = std::move(worded)](absl::StatusOr<std::string> r) mutable {
    if (!r.ok()) return worded(std::move(r));
    if (auto st = fits(*r); !st.ok()) return worded(st);
    write(std::move(worded));
  });
}

absl::StatusOr<std::string> GuardedNow(
    bool near, const std::function<absl::StatusOr<std::string>(bool dry_run)>& write,
    const std::function<absl::Status(const std::string&)>& fits) {
  if (near) {
    auto dry = write(true);
    if (!dry.ok()) return SizedWrites::Worded(dry.status());
    MKUBE_RETURN_IF_ERROR(fits(*dry));
  }
  auto r = write(false);
  if (!r.ok()) return SizedWrites::Worded(r.status());
  return r;
}

}  // namespace

absl::Status SizedWrites::Worded(const absl::Status& st) {
  const bool store_refused =
      (st.code() == absl::StatusCode::kResourceExhausted ||
       st.code() == absl::StatusCode::kInvalidArgument) &&
      (st.message() == kRequestTooLarge ||
       absl::StrContains(st.message(), "received message larger than max (") ||
       absl::StrContains(st.message(), "Received message larger than max ("));
  return store_refused ? absl::UnknownError(kRequestTooLarge) : st;
}

bool SizedWrites::Near(size_t body_bytes) const {
  // What a write adds to its object (uid, timestamps, defaults) is far less than this.
  constexpr size_t kGrowth = 64 << 10;
  return body_bytes + kGrowth > store_max_request_bytes_;
}

absl::Status SizedWrites::Fits(const std::string& resource, const std::string& object) const {
  const api::KindInfo* kind = api::FindResource(resource);
  if (kind == nullptr) return absl::OkStatus();
  auto obj = kind->New();
  if (!obj->ParseFromString(object)) return absl::OkStatus();
  api::ObjectMeta* meta = api::MutableMetaOf(obj.get());
  meta->clear_resource_version();  // not stored
  const std::string key =
      kind->namespaced
          ? fmt::format("/registry/{}/{}/{}", kind->resource, meta->namespace_(), meta->name())
          : fmt::format("/registry/{}/{}", kind->resource, meta->name());
  // The larger of the two transactions a write may be (an update's, with its compare and
  // its read of the key when the compare fails).
  const size_t request =
      storage::UpdateTxn(key, std::numeric_limits<int64_t>::max(), obj->SerializeAsString())
          .ByteSizeLong();
  if (request > store_max_request_bytes_) return absl::UnknownError(kRequestTooLarge);
  return absl::OkStatus();
}

void SizedWrites::Create(const CreateRequest& req, Done done) {
  std::function<void(Done)> dry_run;
  if (!req.dry_run() && Near(req.object().size())) {
    dry_run = [this, req](Done d) {
      CreateRequest dry = req;
      dry.set_dry_run(true);
      registry_->Create(dry, std::move(d));
    };
  }
  Guarded(
      dry_run, [this, req](Done d) { registry_->Create(req, std::move(d)); },
      [this, resource = req.resource()](const std::string& o) { return Fits(resource, o); },
      std::move(done));
}

absl::StatusOr<std::string> SizedWrites::Create(const CreateRequest& req) {
  return GuardedNow(
      !req.dry_run() && Near(req.object().size()),
      [&](bool dry_run) {
        if (!dry_run) return registry_->Create(req);
        CreateRequest dry = req;
        dry.set_dry_run(true);
        return registry_->Create(dry);
      },
      [&](const std::string& o) { return Fits(req.resource(), o); });
}

void SizedWrites::Update(const UpdateRequest& req, registry::Registry::Admit admit, Done done) {
  std::function<void(Done)> dry_run;
  if (!req.dry_run() && Near(req.object().size())) {
    dry_run = [this, req, admit](Done d) {
      UpdateRequest dry = req;
      dry.set_dry_run(true);
      registry_->Update(dry, admit, std::move(d));
    };
  }
  Guarded(
      dry_run,
      [this, req, admit = std::move(admit)](Done d) { registry_->Update(req, admit, std::move(d)); },
      [this, resource = req.resource()](const std::string& o) { return Fits(resource, o); },
      std::move(done));
}

absl::StatusOr<std::string> SizedWrites::Update(const UpdateRequest& req,
                                                registry::Registry::Admit admit) {
  return GuardedNow(
      !req.dry_run() && Near(req.object().size()),
      [&](bool dry_run) {
        if (!dry_run) return registry_->Update(req, admit);
        UpdateRequest dry = req;
        dry.set_dry_run(true);
        return registry_->Update(dry, admit);
      },
      [&](const std::string& o) { return Fits(req.resource(), o); });
}

absl::StatusOr<std::string> SizedWrites::Patch(const PatchRequest& req) {
  return GuardedNow(
      !req.dry_run() && Near(req.merge_patch().size()),
      [&](bool dry_run) {
        if (!dry_run) return registry_->Patch(req);
        PatchRequest dry = req;
        dry.set_dry_run(true);
        return registry_->Patch(dry);
      },
      [&](const std::string& o) { return Fits(req.resource(), o); });
}

}  // namespace mkube::apiserver::server

#include "client/testing/fake_client.h"

#include <algorithm>
#include <atomic>
#include <deque>

#include "absl/strings/numbers.h"
#include "api/defaults.h"
#include "api/fields.h"
#include "api/kinds.h"
#include "api/labels.h"
#include "api/object.h"
#include "api/strategy.h"
#include "api/validation.h"
#include "base/status.h"
#include "fmt/format.h"
#include "proto/api/core.pb.h"

namespace mkube::client::testing {
namespace {

std::string Qualified(const api::KindInfo& kind) {
  return kind.group.empty() ? kind.resource : kind.resource + "." + kind.group;
}

absl::StatusOr<const api::KindInfo*> Resolve(const std::string& resource) {
  const api::KindInfo* kind = api::FindResource(resource);
  if (!kind) {
    return absl::NotFoundError(
        fmt::format("the server doesn't have a resource type \"{}\"", resource));
  }
  return kind;
}

std::string KeyOf(const api::KindInfo& kind, const std::string& ns, const std::string& name) {
  return kind.resource + "/" + (kind.namespaced ? ns : "") + "/" + name;
}

// The resource an object's key names ("pods" of "pods/default/web").
std::string ResourceOfKey(const std::string& key) { return key.substr(0, key.find('/')); }

absl::Status NotFound(const api::KindInfo& kind, const std::string& name) {
  return absl::NotFoundError(fmt::format("{} \"{}\" not found", Qualified(kind), name));
}

absl::Status Conflict(const api::KindInfo& kind, const std::string& name) {
  return absl::AbortedError(fmt::format(
      "Operation cannot be fulfilled on {} \"{}\": the object has been modified; please apply "
      "your changes to the latest version and try again",
      Qualified(kind), name));
}

using api::Rfc3339;

// What a list or watch selects.
struct Selection {
  const api::KindInfo* kind = nullptr;
  std::string ns;
  api::Selector labels;
  api::FieldSelector fields;

  static absl::StatusOr<Selection> Make(const std::string& resource, const std::string& ns,
                                        const std::string& labels, const std::string& fields) {
    Selection s;
    MKUBE_ASSIGN_OR_RETURN(auto kind, Resolve(resource));
    s.kind = kind;
    s.ns = s.kind->namespaced ? ns : "";
    auto l = api::Selector::Parse(labels);
    if (!l.ok()) return absl::InvalidArgumentError(l.status().message());
    s.labels = std::move(*l);
    MKUBE_ASSIGN_OR_RETURN(auto f, api::FieldSelector::Parse(fields));
    MKUBE_RETURN_IF_ERROR(f.CheckSupported(*s.kind));
    s.fields = std::move(f);
    return s;
  }
  bool Matches(const std::string& resource, const google::protobuf::Message& obj) const {
    if (resource != kind->resource) return false;
    const auto& meta = api::MetaOf(obj);
    if (!ns.empty() && meta.namespace_() != ns) return false;
    return labels.Matches(meta.labels()) && fields.Matches(obj);
  }
};

}  // namespace

// An open watch: its selection and the events waiting for the reader.
class FakeClient::FakeWatch {
 public:
  explicit FakeWatch(Selection selection) : selection_(std::move(selection)) {}

  const Selection& selection() const { return selection_; }
  void Push(const std::string& type, const std::string& bytes, int64_t revision) {
    absl::MutexLock lock(&mu_);
    if (end_) return;
    auto& ev = queue_.emplace_back();
    ev.set_type(type);
    ev.set_object(bytes);
    ev.set_resource_version(std::to_string(revision));
  }
  void End(absl::Status status) {
    absl::MutexLock lock(&mu_);
    if (!end_) end_ = std::move(status);
  }
  bool ended() const {
    absl::MutexLock lock(&mu_);
    return end_.has_value();
  }
  // Everything queued, or false once ended and drained.
  bool Take(apiserver::WatchBatch* batch) {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](FakeWatch* w) ABSL_EXCLUSIVE_LOCKS_REQUIRED(w->mu_) {
          return !w->queue_.empty() || w->end_.has_value();
        },
        this));
    if (queue_.empty()) return false;
    batch->Clear();
    for (auto& ev : queue_) batch->add_events()->Swap(&ev);
    queue_.clear();
    return true;
  }
  absl::Status status() const {
    absl::MutexLock lock(&mu_);
    return end_.value_or(absl::OkStatus());
  }

 private:
  const Selection selection_;
  mutable absl::Mutex mu_;
  std::deque<apiserver::WatchEvent> queue_ ABSL_GUARDED_BY(mu_);
  std::optional<absl::Status> end_ ABSL_GUARDED_BY(mu_);
};

class FakeClient::FakeWatchStream final : public WatchStream {
 public:
  explicit FakeWatchStream(std::shared_ptr<FakeWatch> watch) : watch_(std::move(watch)) {}
  ~FakeWatchStream() override { watch_->End(absl::CancelledError("watch closed by the client")); }
  bool ReadBatch(apiserver::WatchBatch* batch) override { return watch_->Take(batch); }
  absl::Status Finish() override { return watch_->status(); }
  void Cancel() override { watch_->End(absl::CancelledError("watch cancelled by the client")); }

 private:
  std::shared_ptr<FakeWatch> watch_;
};

FakeClient::FakeClient(Clock* clock) : clock_(clock) {}

FakeClient::~FakeClient() { EndWatches(absl::UnavailableError("the fake apiserver is gone")); }

void FakeClient::PrependReactor(const std::string& verb, const std::string& resource,
                                Reactor reactor) {
  absl::MutexLock lock(&mu_);
  reactors_.insert(reactors_.begin(), ReactorEntry{verb, resource, std::move(reactor)});
}

void FakeClient::FailNext(const std::string& verb, const std::string& resource,
                          absl::Status status, int times) {
  auto left = std::make_shared<std::atomic<int>>(times);
  PrependReactor(verb, resource, [left, status](const Action&) -> std::optional<absl::Status> {
    if (left->fetch_sub(1) > 0) return status;
    return std::nullopt;
  });
}

std::vector<Action> FakeClient::Actions() const {
  absl::MutexLock lock(&mu_);
  return actions_;
}

std::vector<Action> FakeClient::Actions(const std::string& verb,
                                        const std::string& resource) const {
  std::vector<Action> out;
  for (auto& a : Actions()) {
    if (a.verb == verb && (resource.empty() || a.resource == resource)) out.push_back(a);
  }
  return out;
}

bool FakeClient::WaitForActions(const std::string& verb, size_t n, absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  auto enough = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return std::count_if(actions_.begin(), actions_.end(),
                         [&](const Action& a) { return a.verb == verb; }) >= static_cast<long>(n);
  };
  return mu_.AwaitWithTimeout(absl::Condition(&enough), timeout);
}

void FakeClient::ClearActions() {
  absl::MutexLock lock(&mu_);
  actions_.clear();
}

absl::Status FakeClient::React(Action action) {
  std::vector<Reactor> matching;
  {
    absl::MutexLock lock(&mu_);
    actions_.push_back(action);
    for (const auto& r : reactors_) {
      if ((r.verb == "*" || r.verb == action.verb) &&
          (r.resource == "*" || r.resource == action.resource)) {
        matching.push_back(r.reactor);
      }
    }
  }
  for (const auto& r : matching) {
    if (auto st = r(action)) return *st;
  }
  return absl::OkStatus();
}

// The change as a watch sees it: objects entering its selection are ADDED, objects leaving
// it DELETED, as the apiserver's watch cache sends them.
void FakeClient::Deliver(FakeWatch& w, const Change& change) {
  const Selection& s = w.selection();
  const bool now = s.Matches(change.resource, *change.now.object);
  const bool was = change.before && s.Matches(change.resource, *change.before->object);
  std::string type = change.type;
  if (type == "MODIFIED" && now != was) type = now ? "ADDED" : "DELETED";
  if (now || (type == "DELETED" && was)) w.Push(type, change.now.bytes, change.revision);
}

void FakeClient::Record(Change change) {
  std::erase_if(watches_, [](const auto& w) { return w->ended(); });
  for (const auto& w : watches_) Deliver(*w, change);
  history_.push_back(std::move(change));
}

absl::StatusOr<std::string> FakeClient::Write(const api::KindInfo& kind, const std::string& ns,
                                              std::unique_ptr<google::protobuf::Message> obj,
                                              const Stored* current) {
  api::ObjectMeta* meta = api::MutableMetaOf(obj.get());
  meta->set_resource_version(std::to_string(++revision_));
  Stored stored{nullptr, obj->SerializeAsString()};
  stored.object = std::move(obj);
  Change change{revision_, kind.resource, current ? "MODIFIED" : "ADDED", stored, std::nullopt};
  if (current) change.before = *current;
  objects_[KeyOf(kind, ns, meta->name())] = stored;
  Record(std::move(change));
  return stored.bytes;
}

absl::StatusOr<std::string> FakeClient::GetRaw(const apiserver::GetRequest& req) {
  if (auto st = React({"get", req.resource(), req.subresource(), req.namespace_(), req.name(), ""});
      !st.ok()) {
    return st;
  }
  auto kind = Resolve(req.resource());
  if (!kind.ok()) return kind.status();
  absl::MutexLock lock(&mu_);
  auto it = objects_.find(KeyOf(**kind, req.namespace_(), req.name()));
  if (it == objects_.end()) return NotFound(**kind, req.name());
  return it->second.bytes;
}

absl::StatusOr<apiserver::ListReply> FakeClient::List(const apiserver::ListRequest& req) {
  MKUBE_RETURN_IF_ERROR(React({"list", req.resource(), "", req.namespace_(), "", ""}));
  MKUBE_ASSIGN_OR_RETURN(auto sel, Selection::Make(req.resource(), req.namespace_(),
                                                   req.label_selector(), req.field_selector()));
  absl::MutexLock lock(&mu_);
  apiserver::ListReply reply;
  for (const auto& [key, stored] : objects_) {
    if (sel.Matches(ResourceOfKey(key), *stored.object)) reply.add_items(stored.bytes);
  }
  reply.set_resource_version(std::to_string(revision_));
  return reply;
}

WatchStreamPtr FakeClient::Watch(const apiserver::WatchRequest& req) {
  auto sel = Selection::Make(req.resource(), req.namespace_(), req.label_selector(),
                             req.field_selector());
  auto st = React({"watch", req.resource(), "", req.namespace_(), "", ""});
  if (st.ok() && !sel.ok()) st = sel.status();
  auto watch = std::make_shared<FakeWatch>(sel.ok() ? std::move(*sel) : Selection{});
  if (!st.ok()) {
    watch->End(st);
    return std::make_unique<FakeWatchStream>(watch);
  }
  int64_t from = 0;
  if (!req.resource_version().empty() && req.resource_version() != "0" &&
      !absl::SimpleAtoi(req.resource_version(), &from)) {
    watch->End(absl::InvalidArgumentError(
        fmt::format("invalid resource version \"{}\"", req.resource_version())));
    return std::make_unique<FakeWatchStream>(watch);
  }
  absl::MutexLock lock(&mu_);
  const Selection& s = watch->selection();
  if (from == 0) {
    for (const auto& [key, stored] : objects_) {
      if (s.Matches(ResourceOfKey(key), *stored.object)) {
        watch->Push("ADDED", stored.bytes,
                    std::stoll(api::MetaOf(*stored.object).resource_version()));
      }
    }
  } else if (from < compacted_) {
    watch->End(absl::OutOfRangeError(
        fmt::format("too old resource version: {} ({})", from, compacted_ + 1)));
    return std::make_unique<FakeWatchStream>(watch);
  } else {
    for (const auto& c : history_) {
      if (c.revision > from) Deliver(*watch, c);
    }
  }
  watches_.push_back(watch);
  return std::make_unique<FakeWatchStream>(watch);
}

absl::StatusOr<std::string> FakeClient::CreateRaw(const apiserver::CreateRequest& req) {
  if (auto st = React({"create", req.resource(), req.subresource(), req.namespace_(), req.name(),
                       req.object()});
      !st.ok()) {
    return st;
  }
  auto kind = Resolve(req.resource());
  if (!kind.ok()) return kind.status();
  absl::MutexLock lock(&mu_);
  if (req.subresource() == "binding") return Bind(req);
  if (req.subresource() == "eviction") {
    apiserver::DeleteRequest del;
    del.set_resource(req.resource());
    del.set_namespace_(req.namespace_());
    del.set_name(req.name());
    api::Eviction eviction;
    if (eviction.ParseFromString(req.object()) &&
        eviction.delete_options().has_grace_period_seconds()) {
      del.set_grace_period_seconds(eviction.delete_options().grace_period_seconds());
    }
    return DeleteLocked(del);
  }
  if (!req.subresource().empty()) {
    return absl::NotFoundError(fmt::format("no subresource {}/{}", req.resource(), req.subresource()));
  }
  api::Object obj{*kind, (*kind)->New(), (*kind)->api_version()};
  if (!obj.message->ParseFromString(req.object())) {
    return absl::InvalidArgumentError("the request body is not a valid object");
  }
  api::ObjectMeta* meta = api::MutableMetaOf(obj.message.get());
  const std::string ns = (*kind)->namespaced ? (meta->namespace_().empty() ? req.namespace_()
                                                                           : meta->namespace_())
                                             : "";
  meta->set_namespace_(ns);
  if (meta->name().empty() && !meta->generate_name().empty()) {
    meta->set_name(meta->generate_name() + std::to_string(revision_ + 1));
  }
  api::SetTypeMeta(obj.message.get(), (*kind)->api_version(), (*kind)->kind);
  api::Default(obj);
  if (auto* pod = dynamic_cast<api::Pod*>(obj.message.get())) {
    api::AddDefaultTolerations(pod, 300, 300);  // the apiserver's defaults
  }
  MKUBE_RETURN_IF_ERROR(api::Validate(obj));
  if (objects_.contains(KeyOf(**kind, ns, meta->name()))) {
    return absl::AlreadyExistsError(
        fmt::format("{} \"{}\" already exists", Qualified(**kind), meta->name()));
  }
  api::PrepareForCreate(obj.message.get(), Rfc3339(clock_->Now()));
  return Write(**kind, ns, std::move(obj.message), nullptr);
}

absl::StatusOr<std::string> FakeClient::Bind(const apiserver::CreateRequest& req) {
  api::Binding binding;
  if (!binding.ParseFromString(req.object())) {
    return absl::InvalidArgumentError("the request body is not a valid Binding");
  }
  const api::KindInfo& kind = *api::FindResource("pods");
  const std::string name = req.name().empty() ? binding.metadata().name() : req.name();
  auto it = objects_.find(KeyOf(kind, req.namespace_(), name));
  if (it == objects_.end()) return NotFound(kind, name);
  auto pod = std::make_unique<api::Pod>(static_cast<const api::Pod&>(*it->second.object));
  if (!pod->spec().node_name().empty()) {
    return absl::AbortedError(fmt::format(
        "Operation cannot be fulfilled on pods/binding \"{}\": pod {} is already assigned to "
        "node \"{}\"",
        name, name, pod->spec().node_name()));
  }
  api::ApplyBinding(binding, pod.get(), Rfc3339(clock_->Now()));
  const Stored before = it->second;
  return Write(kind, req.namespace_(), std::move(pod), &before);
}

absl::StatusOr<std::string> FakeClient::UpdateRaw(const apiserver::UpdateRequest& req) {
  if (auto st = React({"update", req.resource(), req.subresource(), req.namespace_(), "",
                       req.object()});
      !st.ok()) {
    return st;
  }
  absl::MutexLock lock(&mu_);
  return UpdateLocked(req);
}

absl::StatusOr<std::string> FakeClient::UpdateLocked(const apiserver::UpdateRequest& req) {
  auto kind = Resolve(req.resource());
  if (!kind.ok()) return kind.status();
  api::Object obj{*kind, (*kind)->New(), (*kind)->api_version()};
  if (!obj.message->ParseFromString(req.object())) {
    return absl::InvalidArgumentError("the request body is not a valid object");
  }
  const std::string name = api::MetaOf(*obj.message).name();
  const std::string ns = (*kind)->namespaced ? (req.namespace_().empty()
                                                    ? api::MetaOf(*obj.message).namespace_()
                                                    : req.namespace_())
                                             : "";
  auto it = objects_.find(KeyOf(**kind, ns, name));
  if (it == objects_.end()) return NotFound(**kind, name);
  const Stored current = it->second;
  const auto& cur_meta = api::MetaOf(*current.object);
  const std::string& want = api::MetaOf(*obj.message).resource_version();
  if (!want.empty() && want != cur_meta.resource_version()) return Conflict(**kind, name);
  if (!req.subresource().empty() && req.subresource() != "status") {
    return absl::NotFoundError(fmt::format("no subresource {}/{}", req.resource(), req.subresource()));
  }
  api::PrepareForUpdate(*current.object, req.subresource() == "status", &obj);
  MKUBE_RETURN_IF_ERROR(api::Validate(obj));
  MKUBE_RETURN_IF_ERROR(api::CheckFinalizers(*current.object, *obj.message));
  // The last finalizer of an object being deleted is gone: so is the object.
  if (api::ReadyToRemove(*obj.message)) return Remove(**kind, KeyOf(**kind, ns, name), obj.message.get());
  return Write(**kind, ns, std::move(obj.message), &current);
}

absl::StatusOr<std::string> FakeClient::PatchRaw(const apiserver::PatchRequest& req) {
  if (auto st = React({"patch", req.resource(), req.subresource(), req.namespace_(), req.name(),
                       req.merge_patch()});
      !st.ok()) {
    return st;
  }
  auto kind = Resolve(req.resource());
  if (!kind.ok()) return kind.status();
  absl::MutexLock lock(&mu_);
  auto it = objects_.find(KeyOf(**kind, req.namespace_(), req.name()));
  if (it == objects_.end()) return NotFound(**kind, req.name());
  MKUBE_ASSIGN_OR_RETURN(auto patched, api::ApplyPatch(*it->second.object, req.patch_type(), req.merge_patch()));
  api::MutableMetaOf(patched.get())
      ->set_resource_version(api::MetaOf(*it->second.object).resource_version());
  apiserver::UpdateRequest update;
  update.set_resource(req.resource());
  update.set_namespace_(req.namespace_());
  update.set_subresource(req.subresource());
  update.set_object(patched->SerializeAsString());
  return UpdateLocked(update);
}

absl::StatusOr<std::string> FakeClient::Delete(const apiserver::DeleteRequest& req) {
  if (auto st = React({"delete", req.resource(), "", req.namespace_(), req.name(), ""}); !st.ok()) {
    return st;
  }
  absl::MutexLock lock(&mu_);
  return DeleteLocked(req);
}

absl::StatusOr<std::string> FakeClient::DeleteLocked(const apiserver::DeleteRequest& req) {
  auto kind = Resolve(req.resource());
  if (!kind.ok()) return kind.status();
  const std::string key = KeyOf(**kind, req.namespace_(), req.name());
  auto it = objects_.find(key);
  if (it == objects_.end()) return NotFound(**kind, req.name());
  const Stored current = it->second;
  const auto& meta = api::MetaOf(*current.object);
  if (!req.preconditions().uid().empty() && req.preconditions().uid() != meta.uid()) {
    return absl::AbortedError(fmt::format(
        "Precondition failed: UID in precondition: {}, UID in object meta: {}",
        req.preconditions().uid(), meta.uid()));
  }
  if (!req.preconditions().resource_version().empty() &&
      req.preconditions().resource_version() != meta.resource_version()) {
    return absl::AbortedError(fmt::format(
        "Precondition failed: ResourceVersion in precondition: {}, ResourceVersion in object "
        "meta: {}",
        req.preconditions().resource_version(), meta.resource_version()));
  }
  const std::optional<int64_t> requested =
      req.has_grace_period_seconds() ? std::optional<int64_t>(req.grace_period_seconds())
                                     : std::nullopt;
  MKUBE_ASSIGN_OR_RETURN(auto decision,
                         api::DecideDelete(*current.object, requested, req.propagation_policy(),
                                           Rfc3339(clock_->Now())));
  if (decision.unchanged) return current.bytes;
  if (decision.marked) return Write(**kind, req.namespace_(), std::move(decision.marked), &current);
  return Remove(**kind, key);
}

absl::StatusOr<std::string> FakeClient::Remove(const api::KindInfo& kind, const std::string& key,
                                               const google::protobuf::Message* last_state) {
  auto it = objects_.find(key);
  const Stored current = it->second;
  objects_.erase(it);
  std::unique_ptr<google::protobuf::Message> gone(current.object->New());
  gone->CopyFrom(last_state ? *last_state : *current.object);
  api::MutableMetaOf(gone.get())->set_resource_version(std::to_string(++revision_));
  Stored last{nullptr, gone->SerializeAsString()};
  last.object = std::move(gone);
  Record(Change{revision_, kind.resource, "DELETED", last, current});
  return last.bytes;
}

void FakeClient::EndWatches(const absl::Status& status) {
  absl::MutexLock lock(&mu_);
  for (const auto& w : watches_) w->End(status);
  watches_.clear();
}

void FakeClient::Compact() {
  absl::MutexLock lock(&mu_);
  compacted_ = revision_;
  history_.clear();
}

int FakeClient::open_watches() const {
  absl::MutexLock lock(&mu_);
  int n = 0;
  for (const auto& w : watches_) n += w->ended() ? 0 : 1;
  return n;
}

bool FakeClient::WaitForWatches(int n, absl::Duration timeout) const {
  const absl::Time deadline = absl::Now() + timeout;
  while (open_watches() < n) {
    if (absl::Now() >= deadline) return false;
    absl::SleepFor(absl::Milliseconds(1));
  }
  return true;
}

int64_t FakeClient::resource_version() const {
  absl::MutexLock lock(&mu_);
  return revision_;
}

}  // namespace mkube::client::testing

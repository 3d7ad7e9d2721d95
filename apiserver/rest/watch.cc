// Watches over HTTP: one JSON event per line, each flushed as its own chunk; Tables of one row
// for `kubectl get -w`; BOOKMARKs when asked; a 410 Expired ERROR event for a version the
// cache no longer holds; the stream ends after timeoutSeconds.
#include <atomic>
#include <mutex>
#include <random>

#include "absl/strings/numbers.h"
#include "fmt/format.h"
#include "api/object.h"
#include "apiserver/cache/watch_cache.h"
#include "apiserver/rest/deadlines.h"
#include "apiserver/rest/front.h"
#include "apiserver/rest/relays.h"

namespace mkube::apiserver::rest {

namespace {

// An event as one JSON line, kept with its entry and shared by every HTTP watcher.
struct EncodedLine final : cache::EncodingMemo::Encoding {
  std::string text;
};

// One HTTP watch: the cache pushes events, which go out as lines.
class HttpWatch final : public cache::WatchSink {
 public:
  HttpWatch(const api::KindInfo* kind, bool table, mkube::http::ExchangePtr ex)
      : kind_(kind), table_(table), ex_(std::move(ex)) {}

  bool Push(const cache::Event& e, bool) override {
    mkube::http::Piece line = Line(e);
    std::lock_guard<std::mutex> l(mu_);
    if (!ex_) return false;
    return ex_->Write(std::move(line));
  }

  void Close(const absl::Status& why) override {
    std::lock_guard<std::mutex> l(mu_);
    if (!ex_) return;
    if (why.code() == absl::StatusCode::kOutOfRange) {
      Json ev = {{"type", "ERROR"}, {"object", StatusJson(why, {}, 410, "Expired")}};
      ex_->Write(ev.dump() + "\n");
    }
    ex_->End();
    ex_.reset();
  }

 private:
  // A Table's row says the object's age now, so it is made for each watcher (kubectl get -w);
  // an object's line is made once, kept with its entry, and sent to every watcher as it is.
  mkube::http::Piece Line(const cache::Event& e) const {
    if (!e.entry || e.type == cache::EventType::kBookmark) {
      Json bookmark = {{"type", "BOOKMARK"},
                       {"object",
                        {{"kind", kind_->kind},
                         {"apiVersion", kind_->api_version()},
                         {"metadata", {{"resourceVersion", std::to_string(e.revision)}}}}}};
      return std::make_shared<const std::string>(bookmark.dump() + "\n");
    }
    const char* type = cache::EventTypeName(e.type);
    if (table_) {
      Json row = {{"type", type},
                  {"object", TableJson(*kind_, {e.entry->object.get()}, std::to_string(e.revision))}};
      return std::make_shared<const std::string>(row.dump() + "\n");
    }
    const auto& encoded = e.entry->encoded.GetOrMake(cache::Encoder::kJsonLine, e.type, [&] {
      auto line = std::make_unique<EncodedLine>();
      line->text = fmt::format(R"({{"type":"{}","object":{}}})", type, ObjectText(*e.entry)) + "\n";
      return line;
    });
    // Shares the entry's ownership: the line lives while a write still holds it.
    return mkube::http::Piece(e.entry, &static_cast<const EncodedLine&>(encoded).text);
  }

  const api::KindInfo* kind_;
  const bool table_;
  std::mutex mu_;
  mkube::http::ExchangePtr ex_;
};

}  // namespace

void Front::Watch(std::shared_ptr<Call> call) {
  Call& c = *call;
  const Target& t = c.target;
  if (t.kind->measured) {
    return Answer(c, Refusal(405, "MethodNotAllowed", "metrics are not watched"));
  }
  std::chrono::seconds timeout = options_.min_request_timeout;
  if (std::string s = c.Param("timeoutSeconds"); !s.empty()) {
    int64_t n = 0;
    if (!absl::SimpleAtoi(s, &n) || n < 0) {
      return Answer(c, Refusal(400, "BadRequest", "timeoutSeconds: invalid value \"" + s + "\""));
    }
    timeout = std::chrono::seconds(n);
  } else {
    thread_local std::mt19937 rng(std::random_device{}());
    timeout += std::chrono::seconds(
        std::uniform_int_distribution<int64_t>(0, options_.min_request_timeout.count())(rng));
  }
  WatchRequest r;
  r.set_resource(t.kind->request_resource());
  r.set_namespace_(t.ns);
  r.set_label_selector(c.Param("labelSelector"));
  r.set_field_selector(c.Param("fieldSelector"));
  r.set_resource_version(c.Param("resourceVersion"));
  r.set_allow_bookmarks(c.Flag("allowWatchBookmarks"));
  // The headers go first, so that a client waiting for them is not held up by an idle watch.
  c.ex->Start(200, "application/json");
  Record(c, 200);
  auto sink = std::make_shared<HttpWatch>(t.kind, WantsTable(c.req.Header("accept")), c.ex);
  auto id = registry_->Watch(r, sink);
  if (!id.ok()) {
    // The stream has begun: the refusal goes as an ERROR event, as Kubernetes sends it then.
    Json ev = {{"type", "ERROR"}, {"object", StatusJson(id.status(), {t.kind, ""})}};
    c.ex->Write(ev.dump() + "\n");
    c.ex->End();
    return;
  }
  auto& gauge = longrunning_.With({"WATCH", t.group, t.version, t.kind->resource, "",
                                   t.ns.empty() ? "cluster" : "namespace", "apiserver"});
  gauge.Add(1);
  // The watch ends once: at its deadline, or when the client goes (which cancels the deadline).
  struct Ending {
    std::once_flag once;
    std::atomic<uint64_t> deadline{0};
  };
  auto ending = std::make_shared<Ending>();
  auto end = [this, id = *id, sink, ending, &gauge] {
    std::call_once(ending->once, [&] {
      deadlines_->Cancel(ending->deadline.load());
      registry_->Unwatch(id);
      sink->Close(absl::OkStatus());
      gauge.Add(-1);
    });
  };
  ending->deadline = deadlines_->At(Deadlines::Clock::now() + timeout, end);
  c.ex->OnClose(end);
}

void Front::Stop() {
  if (deadlines_) deadlines_->Flush();
  if (relays_) relays_->Stop();
}

}  // namespace mkube::apiserver::rest

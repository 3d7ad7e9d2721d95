#include "agent/simulated.h"

#include <algorithm>

#include "agent/pods/pod_run.h"
#include "api/object.h"
#include "base/log.h"
#include "fmt/format.h"
#include "spdlog/spdlog.h"

namespace mkube::agent {
namespace {

spdlog::logger& Log() {
  static spdlog::logger& log = log::Logger("simulated");
  return log;
}

bool Ended(const api::Pod& pod) {
  return pod.status().phase() == "Succeeded" || pod.status().phase() == "Failed";
}

void AddCondition(api::PodStatus* st, const std::string& type, bool value,
                  const std::string& reason, const std::string& stamp) {
  auto* c = st->add_conditions();
  c->set_type(type);
  c->set_status(value ? "True" : "False");
  c->set_reason(reason);
  c->set_last_transition_time(stamp);
}

}  // namespace

SimulatedNodes::SimulatedNodes(client::ApiClient* client, runtime::ImageStore* images,
                               client::EventRecorder* events, SimulatedOptions options)
    : client_(client), options_(std::move(options)), pods_(client, "pods") {
  // Each node is looked at once per renewal period; its own interval a second shorter, so
  // that every look renews.
  const absl::Duration period = std::max(options_.node.renew_interval, absl::Seconds(2));
  for (int i = 0; i < options_.count; ++i) {
    node::NodeOptions o = options_.node;
    o.name = fmt::format("{}-{:04d}", options_.prefix, i);
    o.renew_interval = period - absl::Seconds(1);
    o.pod_cidr = fmt::format("10.{}.{}.0/24", 128 + i / 256 % 128, i % 256);
    if (options_.zones > 0) {
      o.labels["topology.kubernetes.io/zone"] = fmt::format("zone-{}", i % options_.zones);
    }
    names_.push_back(o.name);
    ours_.insert(o.name);
    nodes_.push_back(std::make_unique<node::NodeStatusManager>(client, images, events, std::move(o)));
  }
}

absl::Status SimulatedNodes::Register() {
  const int threads = std::clamp(options_.count, 1, 8);
  std::vector<absl::Status> errors(threads);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([this, t, threads, &errors] {
      for (size_t i = t; i < nodes_.size(); i += threads) {
        absl::Status st = nodes_[i]->Register();
        for (int attempt = 0; !st.ok() && attempt < 5; ++attempt) {
          std::this_thread::sleep_for(std::chrono::milliseconds(200));
          st = nodes_[i]->Register();
        }
        if (!st.ok()) {
          errors[t] = absl::Status(
              st.code(), fmt::format("node {}: {}", names_[i], std::string(st.message())));
          return;
        }
      }
    });
  }
  for (auto& w : workers) w.join();
  for (const auto& e : errors) {
    if (!e.ok()) return e;
  }
  Log().info("{} simulated nodes registered ({}-0000 ...)", nodes_.size(), options_.prefix);
  return absl::OkStatus();
}

void SimulatedNodes::Start() {
  {
    absl::MutexLock lock(&mu_);
    started_ = true;
  }
  auto maybe_queue = [this](const client::Informer<api::Pod>::Ptr& pod) {
    if (ours_.contains(pod->spec().node_name())) queue_.Add(client::KeyOf(*pod));
  };
  pods_.AddHandlers(
      {maybe_queue, [maybe_queue](const auto&, const auto& pod) { maybe_queue(pod); }, nullptr});
  pods_.Start();
  // Several threads share the renewals, so that a slow apiserver does not make every node's
  // Lease late at once (one thread renewing 5,000 nodes one by one falls behind).
  for (int t = 0; t < kNodeThreads; ++t) threads_.emplace_back([this, t] { NodeLoop(t); });
  for (int i = 0; i < std::max(options_.workers, 1); ++i) {
    threads_.emplace_back([this] { PodWorker(); });
  }
}

void SimulatedNodes::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_ || !started_) {
      stopping_ = true;
      return;
    }
    stopping_ = true;
  }
  queue_.ShutDown();
  pods_.Stop();
  for (auto& t : threads_) t.join();
  threads_.clear();
  // Steps still waiting for the apiserver call back into this.
  absl::MutexLock lock(&mu_);
  auto answered = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return pod_calls_ == 0; };
  mu_.Await(absl::Condition(&answered));
}

void SimulatedNodes::NodeLoop(int thread) {
  const int64_t period = std::max<int64_t>(absl::ToInt64Seconds(options_.node.renew_interval), 2);
  const size_t stride = static_cast<size_t>(period) * kNodeThreads;
  for (int64_t tick = 0;; ++tick) {
    // A slice of the nodes each second: their renewals spread over the period, and this
    // thread's share of the slice.
    for (size_t i = tick % period + static_cast<size_t>(period) * thread; i < nodes_.size();
         i += stride) {
      nodes_[i]->Sync();
    }
    absl::MutexLock lock(&mu_);
    auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; };
    if (mu_.AwaitWithTimeout(absl::Condition(&stopping), absl::Seconds(1))) return;
  }
}

void SimulatedNodes::PodWorker() {
  while (auto key = queue_.Get()) {
    {
      absl::MutexLock lock(&mu_);
      auto room = [this]()
                      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return pod_calls_ < kPodCallsInFlight; };
      mu_.Await(absl::Condition(&room));
      ++pod_calls_;
    }
    SyncPod(*key, [this, key = *key](bool ok) {
      if (ok) {
        queue_.Forget(key);
      } else {
        queue_.AddRateLimited(key);
      }
      queue_.Done(key);
      absl::MutexLock lock(&mu_);
      --pod_calls_;
    });
  }
}

void SimulatedNodes::SyncPod(const std::string& key, std::function<void(bool)> done) {
  auto pod = pods_.Get(key);
  if (!pod || !ours_.contains(pod->spec().node_name())) return done(true);
  const auto& meta = pod->metadata();
  if (!meta.deletion_timestamp().empty()) return done(pods::FinalDelete(client_, meta).ok());
  if (Ended(*pod)) return done(true);
  auto posted = [done](const absl::Status& st) { done(st.ok()); };
  if (pod->status().phase() != "Running") return PostStatus(*pod, "Running", 0, posted);
  const std::string& policy = pod->spec().restart_policy();
  if (policy.empty() || policy == "Always") return done(true);
  absl::Duration run_for = absl::Seconds(1);
  int exit_code = 0;
  if (auto it = meta.annotations().find(kRunForAnnotation); it != meta.annotations().end()) {
    if (!absl::ParseDuration(it->second, &run_for)) run_for = absl::Seconds(1);
  }
  if (auto it = meta.annotations().find(kExitCodeAnnotation); it != meta.annotations().end()) {
    exit_code = std::atoi(it->second.c_str());
  }
  const absl::Time started = api::ParseRfc3339(pod->status().start_time()).value_or(absl::Now());
  const absl::Time now = absl::Now();
  if (now < started + run_for) {
    queue_.AddAfter(key, started + run_for - now);
    return done(true);
  }
  PostStatus(*pod, exit_code == 0 ? "Succeeded" : "Failed", exit_code, posted);
}

void SimulatedNodes::PostStatus(const api::Pod& pod, const std::string& phase, int exit_code,
                                std::function<void(absl::Status)> done) {
  const std::string now = api::Rfc3339(absl::Now());
  api::Pod update;
  *update.mutable_metadata() = pod.metadata();
  update.mutable_metadata()->clear_resource_version();  // the node owns the status
  api::PodStatus* st = update.mutable_status();
  st->set_phase(phase);
  st->set_host_ip(options_.node.ip);
  std::string ip = pod.status().pod_ip();
  if (ip.empty()) {
    absl::MutexLock lock(&mu_);
    const uint64_t n = next_ip_++;
    ip = fmt::format("10.{}.{}.{}", n >> 16 & 0x7f, n >> 8 & 0xff, n & 0xff);
  }
  st->set_pod_ip(ip);
  st->add_pod_ips()->set_ip(ip);
  const std::string started = pod.status().start_time().empty() ? now : pod.status().start_time();
  st->set_start_time(started);
  st->set_qos_class(pod.status().qos_class());
  const bool running = phase == "Running";
  for (const auto& c : pod.spec().containers()) {
    auto* cs = st->add_container_statuses();
    cs->set_name(c.name());
    cs->set_image(c.image());
    cs->set_image_id("simulated://" + c.image());
    cs->set_container_id(fmt::format("simulated://{}/{}", pod.metadata().uid(), c.name()));
    cs->set_ready(running);
    cs->set_started(running);
    if (running) {
      cs->mutable_state()->mutable_running()->set_started_at(started);
    } else {
      auto* t = cs->mutable_state()->mutable_terminated();
      t->set_exit_code(exit_code);
      t->set_reason(exit_code == 0 ? "Completed" : "Error");
      t->set_started_at(started);
      t->set_finished_at(now);
    }
  }
  AddCondition(st, "Initialized", true, "", started);
  AddCondition(st, "Ready", running, running ? "" : "PodCompleted", now);
  AddCondition(st, "ContainersReady", running, running ? "" : "PodCompleted", now);
  AddCondition(st, "PodScheduled", true, "", started);
  apiserver::UpdateRequest req;
  req.set_resource("pods");
  req.set_namespace_(pod.metadata().namespace_());
  req.set_subresource("status");
  req.set_object(update.SerializeAsString());
  client_->UpdateRawAsync(req, [key = client::KeyOf(pod), done = std::move(done)](auto r) {
    if (r.ok() || r.status().code() == absl::StatusCode::kNotFound) return done(absl::OkStatus());
    Log().warn("pod {}: status update failed: {}", key, r.status().ToString());
    done(r.status());
  });
}

}  // namespace mkube::agent

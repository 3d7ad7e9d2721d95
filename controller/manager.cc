#include "controller/manager.h"

#include <algorithm>

#include "controller/deployment/deployment.h"
#include "controller/daemon/daemonset.h"
#include "controller/disruption/disruption.h"
#include "controller/garbage/garbage_collector.h"
#include "controller/garbage/pod_gc.h"
#include "controller/cronjob/cronjob.h"
#include "controller/job/job.h"
#include "controller/nodelifecycle/taint_eviction.h"
#include "controller/replicaset/replicaset.h"
#include "fmt/format.h"

namespace mkube::controller {

const std::vector<std::string>& Manager::KnownControllers() {
  static const std::vector<std::string> names = {"deployment", "replicaset",
                                                 "replicationcontroller", "garbagecollector",
                                                 "podgc", "nodelifecycle", "taint-eviction",
                                                 "disruption", "daemonset", "job", "cronjob"};
  return names;
}

absl::Status Manager::CheckControllers(const std::vector<std::string>& list) {
  const auto& known = KnownControllers();
  for (const auto& entry : list) {
    const std::string name = entry.starts_with("-") ? entry.substr(1) : entry;
    if (name == "*") continue;
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      return absl::InvalidArgumentError(fmt::format(
          "--controllers: \"{}\" is not a known controller (known: {})", name,
          fmt::join(known, ", ")));
    }
  }
  return absl::OkStatus();
}

bool Manager::Enabled(const std::string& name) const {
  bool all = false;
  for (const auto& entry : options_.controllers) {
    if (entry == name) return true;
    if (entry == "-" + name) return false;
    if (entry == "*") all = true;
  }
  return all;
}

Manager::Manager(client::ApiClient* client, ManagerOptions options)
    : client_(client), options_(std::move(options)) {
  MakeInformers();
  // Controllers add their handlers and indexes now, before the informers start.
  AddControllers();
}

void Manager::MakeInformers() {
  client::InformerOptions io;
  io.clock = options_.clock;
  pods_ = std::make_unique<client::Informer<api::Pod>>(client_, "pods", io);
  replica_sets_ = std::make_unique<client::Informer<api::ReplicaSet>>(client_, "replicasets", io);
  replication_controllers_ = std::make_unique<client::Informer<api::ReplicationController>>(
      client_, "replicationcontrollers", io);
  deployments_ = std::make_unique<client::Informer<api::Deployment>>(client_, "deployments", io);
  nodes_ = std::make_unique<client::Informer<api::Node>>(client_, "nodes", io);
  client::InformerOptions lease_options = io;
  lease_options.ns = "kube-node-lease";
  leases_ = std::make_unique<client::Informer<api::Lease>>(client_, "leases", lease_options);
  budgets_ = std::make_unique<client::Informer<api::PodDisruptionBudget>>(
      client_, "poddisruptionbudgets", io);
  daemon_sets_ = std::make_unique<client::Informer<api::DaemonSet>>(client_, "daemonsets", io);
  jobs_ = std::make_unique<client::Informer<api::Job>>(client_, "jobs", io);
  cronjobs_ = std::make_unique<client::Informer<api::CronJob>>(client_, "cronjobs", io);
}

void Manager::Add(const std::string& name, std::unique_ptr<Controller> controller, int workers) {
  controllers_.emplace_back(std::move(controller), workers);
  names_.push_back(name);
}

void Manager::AddControllers() {
  if (Enabled("replicaset")) {
    Add("replicaset",
        std::make_unique<ReplicaSetControllerImpl>(
            client_, replica_sets_.get(), pods_.get(), Recorder("replicaset-controller"),
            options_.clock, ReplicaSetControllerImpl::Options{}),
        options_.replicaset_workers);
  }
  if (Enabled("replicationcontroller")) {
    Add("replicationcontroller",
        std::make_unique<ReplicationManager>(client_, replication_controllers_.get(), pods_.get(),
                                             Recorder("replication-controller"), options_.clock,
                                             ReplicationManager::Options{}),
        options_.replicaset_workers);
  }
  if (Enabled("deployment")) {
    Add("deployment",
        std::make_unique<deployment::DeploymentController>(
            client_, deployments_.get(), replica_sets_.get(), pods_.get(),
            Recorder("deployment-controller"), options_.clock),
        options_.deployment_workers);
  }
  if (Enabled("garbagecollector")) {
    Add("garbagecollector", MakeGarbageCollector(), options_.gc_workers);
  }
  if (Enabled("podgc")) {
    Add("podgc",
        std::make_unique<garbage::PodGC>(client_, nodes_.get(), pods_.get(), options_.clock), 1);
  }
  if (Enabled("nodelifecycle")) {
    // One worker: its passes and its node changes write the same nodes.
    Add("nodelifecycle",
        std::make_unique<nodelifecycle::NodeLifecycleController>(
            client_, nodes_.get(), leases_.get(), pods_.get(), Recorder("node-controller"),
            options_.clock, options_.node_lifecycle),
        1);
  }
  if (Enabled("taint-eviction")) {
    Add("taint-eviction",
        std::make_unique<nodelifecycle::TaintEvictionController>(
            client_, nodes_.get(), pods_.get(), Recorder("taint-eviction-controller"),
            options_.clock),
        4);
  }
  if (Enabled("disruption")) {
    Add("disruption",
        std::make_unique<disruption::DisruptionController>(
            client_, budgets_.get(), pods_.get(), replica_sets_.get(),
            replication_controllers_.get(), deployments_.get(), options_.clock),
        2);
  }
  if (Enabled("daemonset")) {
    Add("daemonset",
        std::make_unique<daemon::DaemonSetController>(
            client_, daemon_sets_.get(), pods_.get(), nodes_.get(),
            Recorder("daemonset-controller"), options_.clock),
        2);
  }
  if (Enabled("job")) {
    Add("job",
        std::make_unique<job::JobController>(client_, jobs_.get(), pods_.get(),
                                             Recorder("job-controller"), options_.clock),
        options_.job_workers);
  }
  if (Enabled("cronjob")) {
    Add("cronjob",
        std::make_unique<cronjob::CronJobController>(
            client_, cronjobs_.get(), jobs_.get(), Recorder("cronjob-controller"), options_.clock),
        options_.cronjob_workers);
  }
}

std::unique_ptr<Controller> Manager::MakeGarbageCollector() {
  auto gc = std::make_unique<garbage::GarbageCollector>(client_, options_.clock);
  gc->Follow(pods_.get(), "pods");
  gc->Follow(replica_sets_.get(), "replicasets");
  gc->Follow(replication_controllers_.get(), "replicationcontrollers");
  gc->Follow(deployments_.get(), "deployments");
  gc->Follow(daemon_sets_.get(), "daemonsets");
  gc->Follow(jobs_.get(), "jobs");
  gc->Follow(cronjobs_.get(), "cronjobs");
  return gc;
}

Manager::~Manager() { Stop(); }

client::EventRecorder* Manager::Recorder(const std::string& component) {
  auto& r = recorders_[component];
  if (!r) r = std::make_unique<client::EventRecorder>(client_, component, "", 1000, options_.clock);
  return r.get();
}

bool Manager::StartInformers(std::chrono::milliseconds timeout) {
  pods_->Start();
  replica_sets_->Start();
  replication_controllers_->Start();
  deployments_->Start();
  nodes_->Start();
  leases_->Start();
  budgets_->Start();
  daemon_sets_->Start();
  jobs_->Start();
  cronjobs_->Start();
  return pods_->WaitForCacheSync(timeout) && replica_sets_->WaitForCacheSync(timeout) &&
         replication_controllers_->WaitForCacheSync(timeout) &&
         deployments_->WaitForCacheSync(timeout) && nodes_->WaitForCacheSync(timeout) &&
         leases_->WaitForCacheSync(timeout) && budgets_->WaitForCacheSync(timeout) &&
         daemon_sets_->WaitForCacheSync(timeout) && jobs_->WaitForCacheSync(timeout) &&
         cronjobs_->WaitForCacheSync(timeout);
}

void Manager::StartControllers() {
  for (auto& [c, workers] : controllers_) c->Start(workers);
}

void Manager::Stop() {
  for (auto& [c, workers] : controllers_) c->Stop();
  if (cronjobs_) cronjobs_->Stop();
  if (jobs_) jobs_->Stop();
  if (daemon_sets_) daemon_sets_->Stop();
  if (budgets_) budgets_->Stop();
  if (leases_) leases_->Stop();
  if (nodes_) nodes_->Stop();
  if (deployments_) deployments_->Stop();
  if (replication_controllers_) replication_controllers_->Stop();
  if (replica_sets_) replica_sets_->Stop();
  if (pods_) pods_->Stop();
  for (auto& [name, recorder] : recorders_) recorder->Flush();
}

std::vector<std::string> Manager::Running() const { return names_; }

}  // namespace mkube::controller

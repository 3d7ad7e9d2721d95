#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "client/client.h"
#include "client/clock.h"
#include "client/event_recorder.h"
#include "client/informer.h"
#include "controller/internal/controller.h"
#include "controller/nodelifecycle/node_lifecycle.h"
#include "proto/api/apps.pb.h"
#include "proto/api/batch.pb.h"
#include "proto/api/core.pb.h"

namespace mkube::controller {

struct ManagerOptions {
  // Which controllers run: names as kube-controller-manager's --controllers takes them
  // ("replicaset", "deployment", ...); "*" is every one, "-name" leaves one out.
  std::vector<std::string> controllers = {"*"};
  int deployment_workers = 5;
  int replicaset_workers = 5;
  int gc_workers = 20;
  int job_workers = 5;
  int cronjob_workers = 5;
  nodelifecycle::NodeLifecycleOptions node_lifecycle;
  client::Clock* clock = client::RealClock();
};

// The controller-manager: one shared informer per resource, and the controllers that feed on
// them. Informers run from construction (a standby keeps its caches warm); the controllers
// work only between Start and Stop, which leader election decides.
class Manager {
 public:
  // The names --controllers knows.
  static const std::vector<std::string>& KnownControllers();
  // Checks a --controllers list; the error names the unknown entry.
  static absl::Status CheckControllers(const std::vector<std::string>& list);

  Manager(client::ApiClient* client, ManagerOptions options);
  ~Manager();

  // Starts the informers and waits (real time, up to `timeout`) for their first lists.
  bool StartInformers(std::chrono::milliseconds timeout);
  void StartControllers();
  void Stop();
  std::vector<std::string> Running() const;

 private:
  void MakeInformers();
  // Makes the controllers --controllers enables, on the informers.
  void AddControllers();
  void Add(const std::string& name, std::unique_ptr<Controller> controller, int workers);
  // The garbage collector, following every kind the controllers own.
  std::unique_ptr<Controller> MakeGarbageCollector();
  bool Enabled(const std::string& name) const;
  client::EventRecorder* Recorder(const std::string& component);

  client::ApiClient* const client_;
  const ManagerOptions options_;
  // One event recorder per component name, as kube-controller-manager's controllers each
  // have ("deployment-controller", ...): the events' "From".
  std::map<std::string, std::unique_ptr<client::EventRecorder>> recorders_;
  std::unique_ptr<client::Informer<api::Pod>> pods_;
  std::unique_ptr<client::Informer<api::ReplicaSet>> replica_sets_;
  std::unique_ptr<client::Informer<api::ReplicationController>> replication_controllers_;
  std::unique_ptr<client::Informer<api::Deployment>> deployments_;
  std::unique_ptr<client::Informer<api::Node>> nodes_;
  std::unique_ptr<client::Informer<api::Lease>> leases_;
  std::unique_ptr<client::Informer<api::PodDisruptionBudget>> budgets_;
  std::unique_ptr<client::Informer<api::DaemonSet>> daemon_sets_;
  std::unique_ptr<client::Informer<api::Job>> jobs_;
  std::unique_ptr<client::Informer<api::CronJob>> cronjobs_;
  std::vector<std::pair<std::unique_ptr<Controller>, int>> controllers_;  // with workers
  std::vector<std::string> names_;
};

}  // namespace mkube::controller

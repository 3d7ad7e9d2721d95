#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "api/labels.h"
#include "client/event_recorder.h"
#include "client/informer.h"
#include "controller/internal/controller.h"
#include "controller/internal/expectations.h"
#include "controller/internal/pod_control.h"
#include "controller/internal/pods.h"
#include "proto/api/apps.pb.h"

namespace mkube::controller {

// What differs between the two kinds that keep a number of pods: ReplicaSet (apps/v1, a label
// selector) and ReplicationController (v1, a map of labels), which the seeds describe.
template <typename T>
struct SetKind;
template <>
struct SetKind<api::ReplicaSet> {
  static constexpr char kKind[] = "ReplicaSet";
  static constexpr char kApiVersion[] = "apps/v1";
  static constexpr char kResource[] = "replicasets";
  static constexpr char kController[] = "replicaset-controller";
  static absl::StatusOr<api::Selector> SelectorOf(const api::ReplicaSet& rs) {
    return api::Selector::FromLabelSelector(rs.spec().selector());
  }
};
template <>
struct SetKind<api::ReplicationController> {
  static constexpr char kKind[] = "ReplicationController";
  static constexpr char kApiVersion[] = "v1";
  static constexpr char kResource[] = "replicationcontrollers";
  static constexpr char kController[] = "replicationcontroller-controller";
  static absl::StatusOr<api::Selector> SelectorOf(const api::ReplicationController& rc) {
    return api::Selector::FromMap(rc.spec().selector());
  }
};

// Keeps `spec.replicas` pods matching a ReplicaSet's (or ReplicationController's) selector,
// as Kubernetes' ReplicaSet controller: creates from the template in slow-start batches (at
// most `burst_replicas` per sync), deletes the extras the least useful first, adopts matching
// orphans and releases pods whose labels stopped matching, and writes the status (replicas,
// fullyLabeled, ready, available, observedGeneration, ReplicaFailure). Expectations keep a
// slow watch from making it create or delete twice.
template <typename T>
class ReplicaSetController final : public Controller {
 public:
  using SetPtr = std::shared_ptr<const T>;
  struct Options {
    int burst_replicas = 500;
  };

  // The informers are shared with other controllers; the pod informer must be indexed by
  // namespace (IndexByNamespace) and so must `sets`. Handlers are added here, before Start.
  ReplicaSetController(client::ApiClient* client, client::Informer<T>* sets,
                       client::Informer<api::Pod>* pods, client::EventRecorder* events,
                       client::Clock* clock, Options options);
  ~ReplicaSetController() override { Stop(); }

  absl::Status Sync(const std::string& key) override;
  Expectations& expectations() { return expectations_; }

 private:
  void AddPod(const PodPtr& pod);
  void UpdatePod(const PodPtr& old_pod, const PodPtr& pod);
  void DeletePod(const PodPtr& pod);
  // The sets whose selector matches an orphan's labels.
  std::vector<SetPtr> SetsSelecting(const api::Pod& pod) const;

  absl::Status Manage(const T& set, const std::string& key, const std::vector<PodPtr>& pods);
  api::ReplicaSetStatus StatusOf(const T& set, const std::vector<PodPtr>& pods,
                                 const absl::Status& manage_error) const;
  absl::Status WriteStatus(const T& set, const api::ReplicaSetStatus& status);

  client::ApiClient* const client_;
  client::Informer<T>* const sets_;
  client::Informer<api::Pod>* const pods_;
  const Options options_;
  PodControl pod_control_;
  Expectations expectations_;
};

using ReplicaSetControllerImpl = ReplicaSetController<api::ReplicaSet>;
using ReplicationManager = ReplicaSetController<api::ReplicationController>;

}  // namespace mkube::controller

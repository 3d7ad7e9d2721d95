#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "client/event_recorder.h"
#include "client/informer.h"
#include "controller/internal/controller.h"
#include "controller/internal/expectations.h"
#include "controller/internal/pod_control.h"
#include "controller/internal/pods.h"
#include "proto/api/apps.pb.h"
#include "proto/api/core.pb.h"

namespace mkube::controller::daemon {

inline constexpr char kRevisionHash[] = "controller-revision-hash";

// Whether a DaemonSet's pod belongs on `node`: its nodeSelector and required node affinity
// match, and it tolerates the node's NoSchedule and NoExecute taints (with the tolerations
// every daemon pod gets).
bool ShouldRun(const api::PodTemplateSpec& tmpl, const api::Node& node);
// The tolerations Kubernetes adds to every daemon pod: not-ready and unreachable (NoExecute,
// for ever), disk-, memory- and pid-pressure and unschedulable (NoSchedule), and
// network-unavailable for pods on the host's network.
void AddDaemonTolerations(api::PodSpec* spec);

// Kubernetes' DaemonSet controller: one pod on each node that should run one (created with a
// node affinity to that node for the scheduler to bind, extras and misplaced ones deleted),
// following nodes as they come, go and change; a changed template rolls out node by node
// within maxUnavailable (RollingUpdate) or waits for pods to be deleted (OnDelete); status
// desired / current / misscheduled / ready / updated / available.
class DaemonSetController final : public Controller {
 public:
  using DaemonSetPtr = std::shared_ptr<const api::DaemonSet>;
  DaemonSetController(client::ApiClient* client, client::Informer<api::DaemonSet>* sets,
                      client::Informer<api::Pod>* pods, client::Informer<api::Node>* nodes,
                      client::EventRecorder* events, client::Clock* clock);
  ~DaemonSetController() override { Stop(); }

  absl::Status Sync(const std::string& key) override;

 private:
  void OnPod(const PodPtr& pod, bool added, bool deleted);
  void EnqueueAll();
  absl::Status Manage(const api::DaemonSet& ds, const std::string& key, const std::string& hash,
                      const std::map<std::string, std::vector<PodPtr>>& by_node,
                      const std::vector<std::shared_ptr<const api::Node>>& nodes);
  absl::Status DeletePods(const api::DaemonSet& ds, const std::string& key,
                          const std::vector<PodPtr>& remove);
  // Daemon pods on the nodes named, bound there by node affinity; in slow-start batches.
  absl::Status CreatePods(const api::DaemonSet& ds, const std::string& key, const std::string& hash,
                          const std::vector<std::string>& create_on);
  absl::Status WriteStatus(const api::DaemonSet& ds, const std::string& hash,
                           const std::map<std::string, std::vector<PodPtr>>& by_node,
                           const std::vector<std::shared_ptr<const api::Node>>& nodes);

  client::ApiClient* const client_;
  client::Informer<api::DaemonSet>* const sets_;
  client::Informer<api::Pod>* const pods_;
  client::Informer<api::Node>* const nodes_;
  PodControl pod_control_;
  Expectations expectations_;
};

}  // namespace mkube::controller::daemon

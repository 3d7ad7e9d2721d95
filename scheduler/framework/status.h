#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace mkube::scheduler::framework {

// What a plugin says of a pod (and a node), as kube-scheduler's framework.Status: success,
// unschedulable (another node, or a change to this one, may help), unschedulable and
// unresolvable (nothing short of a change to the node helps: preemption would not), or an
// error of the scheduler's own; or skip (a PreScore with nothing to say of this pod).
enum class Code { kSuccess, kUnschedulable, kUnschedulableAndUnresolvable, kError, kSkip };

class Status {
 public:
  Status() = default;  // success
  static Status Unschedulable(std::string reason) {
    return Status(Code::kUnschedulable, std::move(reason));
  }
  static Status Unresolvable(std::string reason) {
    return Status(Code::kUnschedulableAndUnresolvable, std::move(reason));
  }
  static Status Error(std::string message) { return Status(Code::kError, std::move(message)); }
  static Status Skip() { return Status(Code::kSkip, ""); }

  Code code() const { return code_; }
  bool ok() const { return code_ == Code::kSuccess; }
  bool skip() const { return code_ == Code::kSkip; }
  bool rejected() const {
    return code_ == Code::kUnschedulable || code_ == Code::kUnschedulableAndUnresolvable;
  }
  // The reasons in kube-scheduler's words ("node(s) were unschedulable"), as the
  // FailedScheduling event counts them.
  const std::vector<std::string>& reasons() const { return reasons_; }
  Status& add_reason(std::string reason) {
    reasons_.push_back(std::move(reason));
    return *this;
  }
  // The plugin that said it (set by the framework; plugins' names are static).
  std::string_view plugin() const { return plugin_; }
  Status& set_plugin(std::string_view plugin) {
    plugin_ = plugin;
    return *this;
  }

 private:
  Status(Code code, std::string reason) : code_(code) {
    if (!reason.empty()) reasons_.push_back(std::move(reason));
  }

  Code code_ = Code::kSuccess;
  std::vector<std::string> reasons_;
  std::string_view plugin_;
};

}  // namespace mkube::scheduler::framework

// create job / create deployment / run: objects made from flags, as kubectl makes them.
#include <iostream>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "api/kinds.h"
#include "cli/commands.h"
#include "fmt/format.h"
#include "proto/api/apps.pb.h"
#include "proto/api/batch.pb.h"

namespace mkube::cli {
namespace {

// The Job kubectl makes from a CronJob: its template, marked as started by hand, owned by it.
api::Job JobFromCronJob(const std::string& name, const api::CronJob& cj) {
  const auto& tmpl = cj.spec().job_template();
  api::Job job;
  job.set_api_version("batch/v1");
  job.set_kind("Job");
  auto* meta = job.mutable_metadata();
  meta->set_name(name);
  (*meta->mutable_annotations())["cronjob.kubernetes.io/instantiate"] = "manual";
  for (const auto& [k, v] : tmpl.metadata().annotations()) (*meta->mutable_annotations())[k] = v;
  *meta->mutable_labels() = tmpl.metadata().labels();
  auto* ref = meta->add_owner_references();
  ref->set_api_version("batch/v1");
  ref->set_kind("CronJob");
  ref->set_name(cj.metadata().name());
  ref->set_uid(cj.metadata().uid());
  ref->set_controller(true);
  *job.mutable_spec() = tmpl.spec();
  return job;
}

// The container name kubectl gives an image: its last path segment, without tag or digest.
std::string ContainerNameOf(const std::string& image) {
  std::string name = image.substr(image.find_last_of('/') + 1);
  name = name.substr(0, name.find_first_of(":@"));
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '-';
  }
  return name;
}

}  // namespace

absl::Status CreateDeployment(Session& s, const std::vector<std::string>& args,
                              const CreateDeploymentFlags& f) {
  if (args.size() != 1) {
    return UserError(fmt::format("error: exactly one NAME is required, got {}", args.size()));
  }
  if (f.images.empty()) return UserError("error: required flag(s) \"image\" not set");
  if (f.images.size() > 1 && !f.command.empty()) {
    return UserError("error: cannot specify multiple --image options and command");
  }
  const std::string& name = args[0];
  api::Deployment d;
  d.set_api_version("apps/v1");
  d.set_kind("Deployment");
  d.mutable_metadata()->set_name(name);
  (*d.mutable_metadata()->mutable_labels())["app"] = name;
  d.mutable_spec()->set_replicas(f.replicas);
  (*d.mutable_spec()->mutable_selector()->mutable_match_labels())["app"] = name;
  auto* tmpl = d.mutable_spec()->mutable_template_();
  (*tmpl->mutable_metadata()->mutable_labels())["app"] = name;
  for (const auto& image : f.images) {
    auto* c = tmpl->mutable_spec()->add_containers();
    c->set_name(ContainerNameOf(image));
    c->set_image(image);
    for (const auto& arg : f.command) c->add_command(arg);
    if (f.port >= 0) c->add_ports()->set_container_port(f.port);
  }
  const api::KindInfo& deployments = *api::FindResource("deployments");
  MKUBE_RETURN_IF_ERROR(s.Worded(s.res().Create(deployments, s.ns(), d).status()));
  std::cout << KindName(deployments) << "/" << name << " created\n";
  return absl::OkStatus();
}

absl::Status RunPod(Session& s, const std::vector<std::string>& names, const RunFlags& f) {
  if (names.size() != 1) {
    return UserError("error: NAME is required for run");
  }
  if (f.image.empty()) return UserError("error: required flag(s) \"image\" not set");
  if (f.restart != "Always" && f.restart != "OnFailure" && f.restart != "Never") {
    return UserError(fmt::format("error: invalid restart policy: {}", f.restart));
  }
  const std::string& name = names[0];
  api::Pod pod;
  pod.set_api_version("v1");
  pod.set_kind("Pod");
  pod.mutable_metadata()->set_name(name);
  auto* labels = pod.mutable_metadata()->mutable_labels();
  if (f.labels.empty()) (*labels)["run"] = name;
  for (const auto& spec : f.labels) {
    for (absl::string_view kv : absl::StrSplit(spec, ',')) {
      const size_t eq = kv.find('=');
      if (eq == absl::string_view::npos) {
        return UserError(fmt::format("error: invalid label spec: {}", std::string(kv)));
      }
      (*labels)[std::string(kv.substr(0, eq))] = std::string(kv.substr(eq + 1));
    }
  }
  pod.mutable_spec()->set_restart_policy(f.restart);
  auto* c = pod.mutable_spec()->add_containers();
  c->set_name(name);
  c->set_image(f.image);
  for (const auto& arg : f.args) {
    if (f.command) {
      c->add_command(arg);
    } else {
      c->add_args(arg);
    }
  }
  for (const auto& e : f.env) {
    const size_t eq = e.find('=');
    if (eq == std::string::npos) return UserError(fmt::format("error: invalid env: {}", e));
    auto* var = c->add_env();
    var->set_name(e.substr(0, eq));
    var->set_value(e.substr(eq + 1));
  }
  if (f.port >= 0) c->add_ports()->set_container_port(f.port);
  const api::KindInfo& pods = *api::FindResource("pods");
  MKUBE_RETURN_IF_ERROR(s.Worded(s.res().Create(pods, s.ns(), pod).status()));
  std::cout << "pod/" << name << " created\n";
  return absl::OkStatus();
}

absl::Status CreateJob(Session& s, const std::vector<std::string>& args,
                       const CreateJobFlags& f) {
  if (args.size() != 1) {
    return UserError(fmt::format("error: exactly one NAME is required, got {}", args.size()));
  }
  if (f.image.empty() == f.from.empty()) {
    return UserError("error: either --image or --from must be specified");
  }
  if (!f.from.empty() && !f.command.empty()) {
    return UserError("error: cannot specify --from and command");
  }
  const std::string& name = args[0];
  const api::KindInfo& jobs = *api::FindResource("jobs");
  api::Job job;
  if (!f.from.empty()) {
    const auto slash = f.from.find('/');
    const api::KindInfo* kind =
        slash == std::string::npos ? nullptr : api::FindResource(f.from.substr(0, slash));
    if (!kind || slash + 1 == f.from.size()) {
      return UserError(fmt::format(
          "error: from must be of the form TYPE/NAME (cronjob/NAME), not \"{}\"", f.from));
    }
    if (kind->kind != "CronJob") {
      return UserError(fmt::format("error: unknown object type *v1.{}", kind->kind));
    }
    MKUBE_ASSIGN_OR_RETURN(auto obj, s.Worded(s.res().Get(*kind, s.ns(), f.from.substr(slash + 1))));
    job = JobFromCronJob(name, static_cast<const api::CronJob&>(*obj));
  } else {
    job.set_api_version("batch/v1");
    job.set_kind("Job");
    job.mutable_metadata()->set_name(name);
    auto* pod = job.mutable_spec()->mutable_template_()->mutable_spec();
    pod->set_restart_policy("Never");
    auto* c = pod->add_containers();
    c->set_name(name);
    c->set_image(f.image);
    for (const auto& arg : f.command) c->add_command(arg);
  }
  MKUBE_RETURN_IF_ERROR(s.Worded(s.res().Create(jobs, s.ns(), job).status()));
  std::cout << KindName(jobs) << "/" << name << " created\n";
  return absl::OkStatus();
}

}  // namespace mkube::cli

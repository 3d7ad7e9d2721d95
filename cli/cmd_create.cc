// create job: a Job from an image and a command, or from a CronJob's template.
#include <iostream>

#include "absl/strings/match.h"
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

}  // namespace

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

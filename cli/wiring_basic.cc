// The basic commands' flags: apply, create, run, get, delete, replace, edit, patch, wait and
// explain.
#include "CLI/CLI.hpp"
#include "cli/commands.h"
#include "cli/wiring.h"

namespace mkube::cli {

void AddApply(Wiring& w) {
  auto* files = w.Keep<std::vector<std::string>>();
  auto* apply =
      w.app.add_subcommand("apply", "Apply a configuration to a resource by file name or stdin");
  apply
      ->add_option("-f,--filename", *files,
                   "Files, directories or - (stdin) with the configuration")
      ->required();
  auto* server_side = w.Keep<bool>();
  auto* ssf = w.Keep<ServerSideFlags>();
  apply->add_flag("--server-side", *server_side,
                  "The server merges the configuration and tracks who manages each field");
  apply->add_flag("--force-conflicts", ssf->force_conflicts,
                  "With --server-side: take fields other managers set otherwise");
  apply->add_option("--field-manager", ssf->field_manager,
                    "With --server-side: the name the fields are managed under")
      ->capture_default_str();
  apply->callback([&w, files, server_side, ssf] {
    w.action = [&w, files, server_side, ssf] {
      return WithSession(w.g, [&](Session& s) {
        return *server_side ? ApplyServerSide(s, *files, *ssf) : Apply(s, *files, false);
      });
    };
  });
}

void AddCreate(Wiring& w) {
  auto* files = w.Keep<std::vector<std::string>>();
  auto* create = w.app.add_subcommand("create", "Create a resource from a file or from stdin");
  create->require_subcommand(0, 1);
  create->add_option("-f,--filename", *files, "Files, directories or - (stdin) with the resources");
  create->callback([&w, files] {
    if (w.action) return;  // a subcommand's
    w.action = [&w, files] {
      if (files->empty()) return UserError("error: must specify one of -f and -k");
      return WithSession(w.g, [&](Session& s) { return Apply(s, *files, true); });
    };
  });
  struct Job {
    CreateJobFlags flags;
    std::string name;
  };
  auto* job = w.Keep<Job>();
  auto* job_cmd = create->add_subcommand("job", "Create a job with the specified name");
  job_cmd->add_option("name", job->name, "NAME");
  job_cmd->add_option("command", job->flags.command, "The command and its arguments, after --");
  job_cmd->add_option("--image", job->flags.image, "Image name to run");
  job_cmd->add_option("--from", job->flags.from,
                      "The resource to create the job from (only cronjob/NAME)");
  job_cmd->callback([&w, job] {
    w.action = [&w, job] {
      std::vector<std::string> names;
      if (!job->name.empty()) names.push_back(job->name);
      return WithSession(w.g, [&](Session& s) { return CreateJob(s, names, job->flags); });
    };
  });

  struct Deploy {
    CreateDeploymentFlags flags;
    std::string name;
  };
  auto* d = w.Keep<Deploy>();
  auto* cmd = create->add_subcommand("deployment", "Create a deployment with the specified name");
  cmd->alias("deploy");
  cmd->add_option("name", d->name, "NAME");
  cmd->add_option("command", d->flags.command, "The command and its arguments, after --");
  cmd->add_option("--image", d->flags.images, "Image names to run")->take_all();
  cmd->add_option("--replicas", d->flags.replicas, "Number of replicas")->capture_default_str();
  cmd->add_option("--port", d->flags.port, "The port the container exposes");
  cmd->callback([&w, d] {
    w.action = [&w, d] {
      std::vector<std::string> name;
      if (!d->name.empty()) name.push_back(d->name);
      return WithSession(w.g, [&](Session& s) { return CreateDeployment(s, name, d->flags); });
    };
  });
}

void AddRun(Wiring& w) {
  struct Run {
    RunFlags flags;
    std::string name;
  };
  auto* r = w.Keep<Run>();
  auto* run = w.app.add_subcommand("run", "Run a particular image in a pod");
  run->add_option("name", r->name, "NAME");
  run->add_option("args", r->flags.args, "The container's arguments (or command), after --");
  run->add_option("--image", r->flags.image, "The image for the container");
  run->add_option("--restart", r->flags.restart, "Always, OnFailure or Never")
      ->capture_default_str();
  run->add_option("-l,--labels", r->flags.labels, "Labels, key=value[,key=value]");
  run->add_option("--env", r->flags.env, "Environment variables, NAME=VALUE");
  run->add_option("--port", r->flags.port, "The port the container exposes");
  run->add_flag("--command", r->flags.command, "The words after -- are the command");
  run->callback([&w, r] {
    w.action = [&w, r] {
      std::vector<std::string> name;
      if (!r->name.empty()) name.push_back(r->name);
      return WithSession(w.g, [&](Session& s) { return RunPod(s, name, r->flags); });
    };
  });
}

void AddGet(Wiring& w) {
  auto* gf = w.Keep<GetFlags>();
  auto* get = w.app.add_subcommand("get", "Display one or many resources");
  get->add_option("args", w.args, "TYPE[.GROUP] [NAME...] | TYPE/NAME... | all");
  get->add_option("-o,--output", gf->output,
                  "Output format: json|yaml|name|wide|jsonpath=TEMPLATE|custom-columns=SPEC");
  get->add_option("--sort-by", gf->sort_by,
                  "Sort list types by this field (a JSONPath expression, e.g. .metadata.name)");
  get->add_option("-l,--selector", gf->labels, "Label selector (=, ==, !=, in, notin, exists)");
  get->add_option("--field-selector", gf->fields, "Field selector (=, ==, !=)");
  get->add_flag("-A,--all-namespaces", gf->all_namespaces, "List across all namespaces");
  get->add_flag("--show-labels", gf->show_labels, "Show all labels as the last column");
  get->add_flag("--show-managed-fields", gf->show_managed_fields,
                "With -o json or yaml, keep the managedFields (left out by default)");
  get->add_flag("--no-headers", gf->no_headers, "Don't print headers");
  get->add_flag("-w,--watch", gf->watch, "After listing, watch for changes");
  get->add_option("--raw", gf->raw, "A REST path of the API to get, e.g. /api/v1/nodes");
  get->callback([&w, gf] {
    w.action = [&w, gf] {
      if (!gf->raw.empty()) {
        if (!w.args.empty()) {
          return UserError("error: arguments may not be passed when --raw is specified");
        }
        return WithSession(w.g, [&](Session& s) { return GetRaw(s, gf->raw); });
      }
      if (w.args.empty()) {
        return UserError(
            "You must specify the type of resource to get. Use \"mkubectl api-resources\" "
            "for a complete list of supported resources.");
      }
      return WithSession(w.g, [&](Session& s) { return Get(s, w.args, *gf); });
    };
  });
}

void AddDelete(Wiring& w) {
  auto* df = w.Keep<DeleteFlags>();
  auto* del = w.app.add_subcommand(
      "delete", "Delete resources by file names, stdin, resources and names, or by selector");
  del->add_option("args", w.args, "TYPE NAME... | TYPE/NAME...");
  del->add_option("-f,--filename", df->files, "Files with the resources to delete");
  del->add_option("-l,--selector", df->labels, "Label selector");
  del->add_option("--field-selector", df->fields, "Field selector");
  del->add_flag("--all", df->all, "Delete every resource of the type in the namespace");
  del->add_flag("--force", df->force, "Delete at once, without waiting for the pods to stop");
  del->add_option("--grace-period", df->grace,
                  "Seconds given to the resource to terminate gracefully (-1: its default)");
  del->add_option("--wait", df->wait, "Wait for the resources to be gone before returning")
      ->capture_default_str();
  del->add_option("--timeout", df->timeout, "How long to wait before giving up (0: a week)");
  del->add_option("--cascade", df->cascade,
                  "background: dependents are deleted after the owner; foreground: before it "
                  "(waited for); orphan: they are left")
      ->capture_default_str();
  del->add_flag("--ignore-not-found", df->ignore_not_found,
                "Treat \"resource not found\" as a successful delete");
  del->callback([&w, df] {
    w.action = [&w, df] {
      return WithSession(w.g, [&](Session& s) { return Delete(s, w.args, *df); });
    };
  });
}

void AddReplace(Wiring& w) {
  struct Replacing {
    std::vector<std::string> files;
    bool force = false;
  };
  auto* r = w.Keep<Replacing>();
  auto* replace = w.app.add_subcommand("replace", "Replace a resource by file name or stdin");
  replace->add_option("-f,--filename", r->files, "Files, directories or - (stdin)")->required();
  replace->add_flag("--force", r->force, "Delete the resource and create it again");
  replace->callback([&w, r] {
    w.action = [&w, r] {
      return WithSession(w.g, [&](Session& s) { return Replace(s, r->files, r->force); });
    };
  });
}

void AddEdit(Wiring& w) {
  auto* edit = w.app.add_subcommand("edit", "Edit a resource on the server");
  edit->add_option("args", w.args, "TYPE NAME | TYPE/NAME")->required();
  edit->callback([&w] {
    w.action = [&w] { return WithSession(w.g, [&](Session& s) { return Edit(s, w.args); }); };
  });
}

void AddPatch(Wiring& w) {
  auto* pf = w.Keep<PatchFlags>();
  auto* patch = w.app.add_subcommand("patch", "Update fields of a resource using a patch");
  patch->add_option("args", w.args, "TYPE NAME | TYPE/NAME")->required();
  patch->add_option("-p,--patch", pf->patch, "The patch to apply, as JSON");
  patch->add_option("--patch-file", pf->patch_file, "A file holding the patch");
  patch->add_option("--type", pf->type, "The type of patch: json, merge or strategic")
      ->capture_default_str();
  patch->add_option("--subresource", pf->subresource, "status or scale: patch that instead");
  patch->callback([&w, pf] {
    w.action = [&w, pf] {
      return WithSession(w.g, [&](Session& s) { return Patch(s, w.args, *pf); });
    };
  });
}

void AddWait(Wiring& w) {
  auto* wf = w.Keep<WaitFlags>();
  auto* wait =
      w.app.add_subcommand("wait", "Wait for a specific condition on one or many resources");
  wait->add_option("args", w.args, "TYPE NAME... | TYPE/NAME...")->required();
  wait->add_option("--for", wf->for_, "delete, condition=TYPE[=VALUE] or jsonpath='{PATH}'=VALUE");
  wait->add_option("-l,--selector", wf->labels, "Label selector");
  wait->add_flag("--all", wf->all, "Every resource of the type in the namespace");
  wait->add_option("--timeout", wf->timeout, "How long to wait, e.g. 30s, 5m")
      ->capture_default_str();
  wait->callback([&w, wf] {
    w.action = [&w, wf] {
      return WithSession(w.g, [&](Session& s) { return Wait(s, w.args, *wf); });
    };
  });
}

void AddExplain(Wiring& w) {
  auto* path = w.Keep<std::string>();
  auto* explain = w.app.add_subcommand(
      "explain", "Get the fields of a resource, or of a field: TYPE[.FIELD...]");
  explain->add_option("path", *path, "e.g. pod.spec.affinity.nodeAffinity")->required();
  explain->callback([&w, path] { w.action = [path] { return Explain(*path); }; });
}

}  // namespace mkube::cli

// replace -f, edit and api-versions.
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "api/codec.h"
#include "api/object.h"
#include "cli/commands.h"
#include "cli/manifests.h"
#include "fmt/format.h"

namespace mkube::cli {

namespace {

// A replace that named no resourceVersion replaces whatever is there (as Kubernetes allows
// for the kinds mkube has); one that named it must match.
absl::Status ReplaceOne(Session& s, Manifest& m, bool force) {
  const api::KindInfo& kind = *m.object.info;
  google::protobuf::Message* obj = m.object.message.get();
  MKUBE_ASSIGN_OR_RETURN(const std::string ns, NamespaceFor(s, obj, kind));
  const std::string name = api::MetaOf(*obj).name();
  if (force) {
    auto gone = s.res().Delete(kind, ns, name, std::nullopt);
    if (!gone.ok() && !absl::IsNotFound(gone.status())) return s.Worded(gone.status());
    if (gone.ok()) {
      std::cout << KindName(kind) << " \"" << name << "\" deleted\n";
      if (!WaitGone(s, kind, ns, name, std::chrono::seconds(0))) {
        return UserError(fmt::format("error: timed out waiting for {} \"{}\" to be deleted",
                                     KindName(kind), name));
      }
    }
    api::MutableMetaOf(obj)->clear_resource_version();
    api::MutableMetaOf(obj)->clear_uid();
    MKUBE_RETURN_IF_ERROR(s.Worded(s.res().Create(kind, ns, *obj).status()));
  } else {
    auto updated = s.res().Update(kind, ns, *obj);
    if (!updated.ok()) {
      absl::Status st = updated.status();
      if (absl::IsNotFound(st) || absl::IsInvalidArgument(st)) {
        st = absl::Status(st.code(), fmt::format("error when replacing \"{}\": {}", m.source,
                                                 std::string(st.message())));
      }
      return s.Worded(st);
    }
  }
  std::cout << KindName(kind) << "/" << name << " replaced\n";
  return absl::OkStatus();
}

constexpr char kEditHeader[] =
    "# Please edit the object below. Lines beginning with a '#' will be ignored,\n"
    "# and an empty file will abort the edit. If an error occurs while saving, a copy of\n"
    "# your changes is kept and its path printed.\n"
    "#\n";

// The text without its comment lines, trimmed: what counts as the edit.
std::string Uncommented(const std::string& text) {
  std::string out;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (absl::StartsWith(absl::StripLeadingAsciiWhitespace(line), "#")) continue;
    out.append(line.data(), line.size());
    out.push_back('\n');
  }
  return std::string(absl::StripAsciiWhitespace(out));
}

// Runs the user's editor ($KUBE_EDITOR, then $EDITOR, else vi) on `path`, as a shell does:
// the variable may carry arguments.
absl::Status RunEditor(const std::string& path) {
  const char* editor = getenv("KUBE_EDITOR");
  if (!editor || !*editor) editor = getenv("EDITOR");
  const std::string name = editor && *editor ? editor : "vi";
  const std::string command = name + " \"$1\"";
  pid_t pid = fork();
  if (pid < 0) return UserError("error: cannot start the editor");
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", command.c_str(), "sh", path.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return UserError(fmt::format("error: there was a problem with the editor \"{}\"", name));
  }
  return absl::OkStatus();
}

absl::Status EditOne(Session& s, const Target& t) {
  const api::KindInfo& kind = *t.kind;
  MKUBE_ASSIGN_OR_RETURN(auto live, s.Worded(s.res().Get(kind, s.ns(), t.name)));
  // Without managedFields, as kubectl edits: the server keeps them when they are left out.
  api::MutableMetaOf(live.get())->clear_managed_fields();
  const std::string original = api::JsonToYaml(api::EncodeJson(*live));
  char path[] = "/tmp/mkubectl-edit-XXXXXX.yaml";
  const int fd = mkstemps(path, 5);
  if (fd < 0) return UserError("error: cannot create a file to edit");
  close(fd);
  std::ofstream(path) << kEditHeader << original;
  if (absl::Status st = RunEditor(path); !st.ok()) {
    unlink(path);
    return st;
  }
  std::stringstream edited;
  edited << std::ifstream(path).rdbuf();
  const std::string text = Uncommented(edited.str());
  if (text.empty() || text == Uncommented(original)) {
    unlink(path);
    std::cout << "Edit cancelled, no changes made.\n";
    return absl::OkStatus();
  }
  auto kept = [&](const std::string& error) {
    return UserError(
        fmt::format("{}\nA copy of your changes has been stored to \"{}\"", error, path));
  };
  auto objects = api::DecodeManifests(text);
  if (!objects.ok()) return kept("error: " + std::string(objects.status().message()));
  if (objects->size() != 1 || (*objects)[0].info != &kind ||
      api::MetaOf(*(*objects)[0].message).name() != t.name) {
    return kept(
        fmt::format("error: the edited file must hold {} \"{}\" alone", KindName(kind), t.name));
  }
  auto updated = s.res().Update(kind, s.ns(), *(*objects)[0].message);
  if (!updated.ok()) return kept(std::string(s.Worded(updated.status()).message()));
  unlink(path);
  std::cout << KindName(kind) << "/" << t.name << " edited\n";
  return absl::OkStatus();
}

}  // namespace

absl::Status Replace(Session& s, const std::vector<std::string>& files, bool force) {
  return ForEachManifest(files, [&](Manifest& m) { return ReplaceOne(s, m, force); });
}

absl::Status Edit(Session& s, const std::vector<std::string>& args) {
  MKUBE_ASSIGN_OR_RETURN(auto targets, ParseTargets(args, true));
  for (const auto& t : targets) MKUBE_RETURN_IF_ERROR(EditOne(s, t));
  return absl::OkStatus();
}

absl::Status ApiVersions() {
  std::set<std::string> versions;
  for (const auto& k : api::Kinds()) versions.insert(k.api_version());
  for (const auto& v : versions) std::cout << v << "\n";
  return absl::OkStatus();
}

}  // namespace mkube::cli

// patch: a strategic merge (kubectl's default), JSON merge or JSON patch, worked out against
// the object as it is and sent as the merge patch between the two.
#include <fstream>
#include <iostream>
#include <sstream>

#include "api/codec.h"
#include "cli/commands.h"
#include "api/patch.h"
#include "fmt/format.h"

namespace mkube::cli {

using api::PatchJson;

absl::Status Patch(Session& s, const std::vector<std::string>& args, const PatchFlags& f) {
  if (f.type != "strategic" && f.type != "merge" && f.type != "json") {
    return UserError(fmt::format(
        "error: --type must be one of [json merge strategic], not \"{}\"", f.type));
  }
  std::string text = f.patch;
  if (!f.patch_file.empty()) {
    std::ifstream in(f.patch_file);
    if (!in) return UserError(fmt::format("error: unable to read patch file: {}", f.patch_file));
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  if (text.empty()) {
    return UserError(
        "error: must specify --patch or --patch-file containing the contents of the patch");
  }
  const PatchJson patch = PatchJson::parse(text, nullptr, /*allow_exceptions=*/false);
  if (patch.is_discarded()) {
    return UserError(fmt::format("error: unable to parse \"{}\": not valid JSON", text));
  }
  MKUBE_ASSIGN_OR_RETURN(auto targets, ParseTargets(args, true));
  bool failed = false;
  for (const auto& t : targets) {
    auto obj = s.res().Get(*t.kind, s.ns(), t.name);
    if (!obj.ok()) {
      s.PrintError(obj.status());
      failed = true;
      continue;
    }
    const PatchJson before = api::EncodeJson(**obj);
    absl::StatusOr<PatchJson> after =
        f.type == "json"  ? api::ApplyJsonPatch(before, patch)
        : f.type == "merge" ? absl::StatusOr<PatchJson>(before)
                            : api::ApplyStrategicMergePatch(before, patch);
    if (after.ok() && f.type == "merge") after->merge_patch(patch);
    if (!after.ok()) {
      std::cerr << "error: " << after.status().message() << "\n";
      failed = true;
      continue;
    }
    const std::string what = KindName(*t.kind) + "/" + t.name;
    const PatchJson diff = api::MergePatchBetween(before, *after);
    if (diff.empty()) {
      std::cout << what << " patched (no change)\n";
      continue;
    }
    auto r = s.res().Patch(*t.kind, s.ns(), t.name, diff.dump(), f.subresource);
    if (!r.ok()) {
      s.PrintError(r.status());
      failed = true;
      continue;
    }
    std::cout << what << " patched\n";
  }
  return failed ? Reported() : absl::OkStatus();
}

}  // namespace mkube::cli

// explain, completion, api-resources: what mkubectl knows without asking the server.
#include <iostream>
#include <map>
#include <set>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "api/printers.h"
#include "cli/commands.h"
#include "fmt/format.h"

namespace mkube::cli {
namespace {

std::string TypeName(const google::protobuf::FieldDescriptor* f) {
  using FD = google::protobuf::FieldDescriptor;
  std::string t;
  if (f->is_map()) {
    return "<map[string]" + TypeName(f->message_type()->map_value()).substr(1);
  }
  switch (f->cpp_type()) {
    case FD::CPPTYPE_STRING:
      t = "string";
      break;
    case FD::CPPTYPE_BOOL:
      t = "boolean";
      break;
    case FD::CPPTYPE_MESSAGE:
      t = f->message_type()->name() == "IntOrString" ? "string" : "Object";
      break;
    case FD::CPPTYPE_DOUBLE:
    case FD::CPPTYPE_FLOAT:
      t = "number";
      break;
    default:
      t = "integer";
  }
  return std::string("<") + (f->is_repeated() ? "[]" : "") + t + ">";
}

}  // namespace

absl::Status Explain(const std::string& path) {
  std::vector<std::string> parts = absl::StrSplit(path, '.');
  MKUBE_ASSIGN_OR_RETURN(const api::KindInfo* found, KindNamed(parts[0]));
  const api::KindInfo& kind = *found;
  const google::protobuf::Descriptor* d = kind.prototype->GetDescriptor();
  const google::protobuf::FieldDescriptor* field = nullptr;
  for (size_t i = 1; i < parts.size(); ++i) {
    if (!d) return UserError(fmt::format("error: field \"{}\" does not exist", parts[i]));
    field = nullptr;
    for (int j = 0; j < d->field_count(); ++j) {
      if (d->field(j)->json_name() == parts[i]) field = d->field(j);
    }
    if (!field) return UserError(fmt::format("error: field \"{}\" does not exist", parts[i]));
    d = field->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE &&
                !field->is_map() && field->message_type()->name() != "IntOrString"
            ? field->message_type()
            : nullptr;
  }
  std::cout << "KIND:     " << kind.kind << "\nVERSION:  " << kind.api_version() << "\n\n";
  if (field && !d) {
    std::cout << "FIELD:    " << field->json_name() << " " << TypeName(field) << "\n";
    return absl::OkStatus();
  }
  if (field) std::cout << "RESOURCE: " << field->json_name() << " " << TypeName(field) << "\n\n";
  std::cout << "FIELDS:\n";
  std::map<std::string, std::string> fields;
  for (int j = 0; j < d->field_count(); ++j)
    fields[d->field(j)->json_name()] = TypeName(d->field(j));
  for (const auto& [name, type] : fields) std::cout << "   " << name << "\t" << type << "\n";
  return absl::OkStatus();
}

absl::Status Completion(const std::string& shell) {
  if (shell != "bash")
    return UserError(fmt::format("error: Unsupported shell type \"{}\".", shell));
  std::set<std::string> types;
  for (const auto& k : api::Kinds()) {
    types.insert(k.resource);
    types.insert(k.singular);
    for (const auto& s : k.short_names) types.insert(s);
  }
  std::cout << R"SH(# bash completion for mkubectl:  source <(mkubectl completion bash)
_mkubectl() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
  local commands="annotate api-resources apply cluster-info completion cordon create delete describe drain explain get label rollout scale set taint uncordon version"
  local types=")SH"
            << absl::StrJoin(types, " ") << R"SH("
  case "$prev" in
    -o|--output) COMPREPLY=($(compgen -W "json yaml name wide" -- "$cur")); return ;;
    -n|--namespace) COMPREPLY=($(compgen -W "$(mkubectl get namespaces -o name 2>/dev/null | sed 's|.*/||')" -- "$cur")); return ;;
    -f|--filename|--kubeconfig) COMPREPLY=($(compgen -f -- "$cur")); return ;;
  esac
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W "$commands" -- "$cur")); return
  fi
  local cmd=${COMP_WORDS[1]} i type="" words=0
  for ((i = 2; i < COMP_CWORD; i++)); do
    case "${COMP_WORDS[i]}" in -*) ;; *) [ -z "$type" ] && type=${COMP_WORDS[i]}; words=$((words + 1)) ;; esac
  done
  case "$cmd" in
    cordon|uncordon|drain) COMPREPLY=($(compgen -W "$(mkubectl get nodes -o name 2>/dev/null | sed 's|.*/||')" -- "$cur")) ;;
    rollout) [ "$words" -eq 0 ] && COMPREPLY=($(compgen -W "status" -- "$cur")) ;;
    set) [ "$words" -eq 0 ] && COMPREPLY=($(compgen -W "image" -- "$cur")) ;;
    completion) COMPREPLY=($(compgen -W "bash" -- "$cur")) ;;
    get|describe|delete|label|annotate|scale|explain|taint)
      if [ "$words" -eq 0 ]; then
        COMPREPLY=($(compgen -W "$types" -- "$cur"))
        [ "$cmd" = get ] && COMPREPLY+=($(compgen -W "all" -- "$cur"))
      else
        COMPREPLY=($(compgen -W "$(mkubectl get "$type" -o name 2>/dev/null | sed 's|.*/||')" -- "$cur"))
      fi ;;
  esac
}
complete -F _mkubectl mkubectl
)SH";
  return absl::OkStatus();
}

absl::Status ApiResources() {
  api::Table t;
  t.columns = {"NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"};
  std::vector<const api::KindInfo*> kinds;
  for (const auto& k : api::Kinds()) kinds.push_back(&k);
  std::sort(kinds.begin(), kinds.end(), [](auto* a, auto* b) { return a->resource < b->resource; });
  for (const auto* k : kinds) {
    t.rows.push_back({k->resource, absl::StrJoin(k->short_names, ","), k->api_version(),
                      k->namespaced ? "true" : "false", k->kind});
  }
  std::cout << api::RenderTable(t);
  return absl::OkStatus();
}

}  // namespace mkube::cli

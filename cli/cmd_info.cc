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

absl::Status Completion(const std::string& shell, const std::vector<std::string>& commands) {
  if (shell != "bash" && shell != "zsh")
    return UserError(fmt::format("error: Unsupported shell type \"{}\".", shell));
  std::set<std::string> types;
  for (const auto& k : api::Kinds()) {
    types.insert(k.resource);
    types.insert(k.singular);
    for (const auto& s : k.short_names) types.insert(s);
  }
  if (shell == "zsh") {
    // zsh runs the bash function through its bash completion layer.
    std::cout << "# zsh completion for mkubectl:  source <(mkubectl completion zsh)\n"
                 "autoload -U +X compinit && compinit\n"
                 "autoload -U +X bashcompinit && bashcompinit\n";
  } else {
    std::cout << "# bash completion for mkubectl:  source <(mkubectl completion bash)\n";
  }
  std::cout << R"SH(_mkubectl_names() {  # _mkubectl_names TYPE: the names of that type, in the line's namespace
  local ns=() i
  for ((i = 1; i < COMP_CWORD; i++)); do
    case "${COMP_WORDS[i]}" in
      -n|--namespace) ns=(-n "${COMP_WORDS[i+1]}") ;;
      -A|--all-namespaces) ns=(-A) ;;
    esac
  done
  mkubectl get "$1" "${ns[@]}" -o name 2>/dev/null | sed 's|.*/||'
}
_mkubectl() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
  local commands=")SH"
            << absl::StrJoin(commands, " ") << R"SH("
  local types=")SH"
            << absl::StrJoin(types, " ") << R"SH("
  case "$prev" in
    -o|--output) COMPREPLY=($(compgen -W "json yaml name wide jsonpath= custom-columns=" -- "$cur")); return ;;
    -n|--namespace) COMPREPLY=($(compgen -W "$(mkubectl get namespaces -o name 2>/dev/null | sed 's|.*/||')" -- "$cur")); return ;;
    -f|--filename|--kubeconfig|--patch-file) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    --type) COMPREPLY=($(compgen -W "json merge strategic" -- "$cur")); return ;;
    --for) COMPREPLY=($(compgen -W "delete condition= jsonpath=" -- "$cur")); return ;;
    --restart) COMPREPLY=($(compgen -W "Always OnFailure Never" -- "$cur")); return ;;
  esac
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W "$commands" -- "$cur")); return
  fi
  local cmd=${COMP_WORDS[1]} i type="" words=0
  for ((i = 2; i < COMP_CWORD; i++)); do
    case "${COMP_WORDS[i]}" in
      -n|--namespace|-o|--output|-l|--selector|-f|--filename|--kubeconfig|-c|--container|--type|-p|--patch|--for|--timeout) i=$((i + 1)) ;;
      -*) ;;
      *) [ -z "$type" ] && type=${COMP_WORDS[i]}; words=$((words + 1)) ;;
    esac
  done
  case "$cmd" in
    cordon|uncordon|drain) COMPREPLY=($(compgen -W "$(_mkubectl_names nodes)" -- "$cur")) ;;
    logs|exec|attach) [ "$words" -eq 0 ] && COMPREPLY=($(compgen -W "$(_mkubectl_names pods)" -- "$cur")) ;;
    rollout) [ "$words" -eq 0 ] && COMPREPLY=($(compgen -W "status history undo restart pause resume" -- "$cur")) ;;
    set) [ "$words" -eq 0 ] && COMPREPLY=($(compgen -W "image" -- "$cur")) ;;
    create) [ "$words" -eq 0 ] && COMPREPLY=($(compgen -W "deployment job" -- "$cur")) ;;
    config) [ "$words" -eq 0 ] && COMPREPLY=($(compgen -W "view get-contexts current-context use-context set-context" -- "$cur"))
            [ "$words" -eq 1 ] && [ "$type" = use-context ] && COMPREPLY=($(compgen -W "$(mkubectl config get-contexts -o name 2>/dev/null)" -- "$cur")) ;;
    completion) COMPREPLY=($(compgen -W "bash zsh" -- "$cur")) ;;
    get|describe|delete|edit|label|annotate|patch|scale|explain|taint|wait)
      if [ "$words" -eq 0 ]; then
        COMPREPLY=($(compgen -W "$types" -- "$cur"))
        [ "$cmd" = get ] && COMPREPLY+=($(compgen -W "all" -- "$cur"))
      else
        COMPREPLY=($(compgen -W "$(_mkubectl_names "$type")" -- "$cur"))
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

// image load|ls|inspect: images put into nodes' stores from archives (as `kind load
// image-archive`), what each node holds (as `crictl images`, read from the Nodes' status), and
// what an image says of itself (as `crictl inspecti`, asked of the node's agent).

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <set>

#include "absl/strings/str_join.h"
#include "api/printers.h"
#include "cli/commands.h"
#include "client/channel.h"
#include "fmt/format.h"
#include "proto/agent/images.grpc.pb.h"
#include "proto/api/core.pb.h"
#include "proto/grpc_status.h"

namespace mkube::cli {
namespace {

constexpr size_t kChunk = 256 << 10;

// Docker's sizes: three significant figures in powers of 1000 ("3.62MB").
std::string HumanSize(int64_t bytes) {
  static const char* kUnits[] = {"B", "kB", "MB", "GB", "TB"};
  double v = static_cast<double>(bytes);
  size_t u = 0;
  while (v >= 1000 && u + 1 < std::size(kUnits)) {
    v /= 1000;
    ++u;
  }
  return fmt::format("{:.3g}{}", v, kUnits[u]);
}

absl::StatusOr<std::vector<api::Node>> Nodes(Session& s, const std::vector<std::string>& names) {
  const api::KindInfo* kind = api::FindResource("nodes");
  std::vector<api::Node> out;
  if (names.empty()) {
    MKUBE_ASSIGN_OR_RETURN(auto list, s.Worded(s.res().List(*kind, "", "", "")));
    for (const auto& obj : list.items) out.push_back(static_cast<const api::Node&>(*obj));
    return out;
  }
  for (const auto& name : names) {
    MKUBE_ASSIGN_OR_RETURN(auto obj, s.Worded(s.res().Get(*kind, "", name)));
    out.push_back(static_cast<const api::Node&>(*obj));
  }
  return out;
}

// Where an archive's bytes come from, once per node: a file is read again for each; standard
// input is read once and kept.
class Archive {
 public:
  static absl::StatusOr<Archive> Open(const std::string& file) {
    Archive a;
    a.file_ = file;
    if (file == "-") {
      a.stdin_.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
      a.size_ = static_cast<int64_t>(a.stdin_.size());
      return a;
    }
    std::ifstream in(file, std::ios::binary | std::ios::ate);
    if (!in) {
      return UserError(fmt::format("error: cannot read {}: {}", file, std::strerror(errno)));
    }
    a.size_ = static_cast<int64_t>(in.tellg());
    return a;
  }
  int64_t size() const { return size_; }
  const std::string& name() const { return file_; }
  // Calls `send` with each piece in turn; false when `send` stopped.
  template <typename Fn>
  absl::Status Each(Fn send) const {
    if (file_ == "-") {
      for (size_t off = 0; off < stdin_.size(); off += kChunk) {
        if (!send(std::string_view(stdin_).substr(off, kChunk))) return absl::OkStatus();
      }
      return absl::OkStatus();
    }
    std::ifstream in(file_, std::ios::binary);
    std::string buf(kChunk, '\0');
    while (in.read(buf.data(), static_cast<std::streamsize>(buf.size())) || in.gcount() > 0) {
      if (!send(std::string_view(buf.data(), static_cast<size_t>(in.gcount())))) break;
    }
    if (in.bad()) return UserError(fmt::format("error: cannot read {}", file_));
    return absl::OkStatus();
  }

 private:
  std::string file_, stdin_;
  int64_t size_ = 0;
};

// One node's load: the archive streamed through the apiserver to the node's agent.
absl::StatusOr<agent::ImageLoadReply> LoadInto(Session& s, const Archive& archive,
                                               const std::string& node) {
  auto stub = agent::NodeImages::NewStub(client::NewChannel(s.client_options()));
  grpc::ClientContext ctx;
  if (!s.client_options().token.empty()) {
    ctx.AddMetadata("authorization", "Bearer " + s.client_options().token);
  }
  agent::ImageLoadReply reply;
  auto writer = stub->Load(&ctx, &reply);
  agent::ImageLoadChunk chunk;
  chunk.set_node(node);
  bool open = writer->Write(chunk);
  // A large archive says how far it has come, every few seconds.
  using Clock = std::chrono::steady_clock;
  const Clock::time_point began = Clock::now();
  Clock::time_point said = began;
  int64_t sent = 0;
  if (open) {
    MKUBE_RETURN_IF_ERROR(archive.Each([&](std::string_view piece) {
      chunk.Clear();
      chunk.set_data(piece.data(), piece.size());
      sent += static_cast<int64_t>(piece.size());
      if (Clock::now() - said >= std::chrono::seconds(3)) {
        said = Clock::now();
        std::cerr << fmt::format("  {} of {} sent to node \"{}\"\n", HumanSize(sent),
                                 HumanSize(archive.size()), node);
      }
      return open = writer->Write(chunk);
    }));
  }
  if (open) writer->WritesDone();
  if (auto st = writer->Finish(); !st.ok()) return FromGrpc(st);
  return reply;
}

}  // namespace

absl::Status ImageLoad(Session& s, const std::string& file, const ImageLoadFlags& f) {
  MKUBE_ASSIGN_OR_RETURN(Archive archive, Archive::Open(file));
  MKUBE_ASSIGN_OR_RETURN(auto nodes, Nodes(s, f.nodes));
  bool failed = false;
  int loaded = 0;
  for (const auto& node : nodes) {
    const std::string& name = node.metadata().name();
    // Simulated nodes run nothing and have no agent port: only those asked for by name are
    // tried (and refused).
    if (f.nodes.empty() && node.status().daemon_endpoints().kubelet_endpoint().port() <= 0) {
      continue;
    }
    std::cerr << fmt::format("Loading {} ({}) into node \"{}\"...\n",
                             file == "-" ? "standard input" : file, HumanSize(archive.size()),
                             name);
    auto reply = LoadInto(s, archive, name);
    if (!reply.ok()) {
      std::cerr << fmt::format("error: node \"{}\": {}\n", name,
                               std::string(reply.status().message()));
      failed = true;
      continue;
    }
    ++loaded;
    for (const auto& img : reply->images()) {
      const std::string named =
          img.names().empty() ? std::string("<none>") : fmt::format("\"{}\"", img.names(0));
      std::cout << fmt::format("Image: {} with ID \"{}\" loaded into node \"{}\" ({})\n", named,
                               img.digest(), name, HumanSize(img.size_bytes()));
      for (int i = 1; i < img.names_size(); ++i) {
        std::cout << fmt::format("  also named \"{}\"\n", img.names(i));
      }
    }
  }
  if (loaded == 0 && !failed) return UserError("error: no node runs pods to load images into");
  return failed ? Reported() : absl::OkStatus();
}

absl::Status ImageList(Session& s, const ImageListFlags& f) {
  MKUBE_ASSIGN_OR_RETURN(auto nodes, Nodes(s, f.nodes));
  api::Table t;
  t.columns = {"NODE", "IMAGE", "SIZE"};
  for (const auto& node : nodes) {
    std::vector<std::vector<std::string>> rows;
    // A row per tag, as people write it: an image's names in full ("docker.io/library/...")
    // and by digest are other ways of naming the same.
    for (const auto& img : node.status().images()) {
      for (const auto& name : img.names()) {
        if (name.find('@') != std::string::npos || name.rfind("docker.io/", 0) == 0) continue;
        rows.push_back({node.metadata().name(), name, HumanSize(img.size_bytes())});
      }
    }
    std::sort(rows.begin(), rows.end());
    for (auto& r : rows) t.rows.push_back(std::move(r));
  }
  if (t.rows.empty()) {
    std::cerr << "No images found.\n";
    return absl::OkStatus();
  }
  std::cout << api::RenderTable(t, !f.no_headers);
  return absl::OkStatus();
}

namespace {

absl::StatusOr<agent::ImageInspectReply> InspectOn(Session& s, const std::string& node,
                                                   const std::string& image,
                                                   std::chrono::seconds deadline) {
  auto stub = agent::NodeImages::NewStub(client::NewChannel(s.client_options()));
  grpc::ClientContext ctx;
  if (!s.client_options().token.empty()) {
    ctx.AddMetadata("authorization", "Bearer " + s.client_options().token);
  }
  ctx.set_deadline(std::chrono::system_clock::now() + deadline);
  agent::ImageInspectRequest req;
  req.set_node(node);
  req.set_image(image);
  agent::ImageInspectReply reply;
  if (auto st = stub->Inspect(&ctx, req, &reply); !st.ok()) return FromGrpc(st);
  return reply;
}

std::string Listed(const google::protobuf::RepeatedPtrField<std::string>& items,
                   const std::string& sep = ", ") {
  return items.empty() ? "<none>" : absl::StrJoin(items, sep);
}

}  // namespace

absl::Status ImageInspect(Session& s, const std::string& image, const ImageInspectFlags& f) {
  MKUBE_ASSIGN_OR_RETURN(auto nodes, Nodes(s, f.nodes));
  bool found = false, failed = false;
  for (const auto& node : nodes) {
    const std::string& name = node.metadata().name();
    // Every node that runs pods is asked, unless nodes are named.
    const bool named = !f.nodes.empty();
    if (!named && node.status().daemon_endpoints().kubelet_endpoint().port() <= 0) continue;
    auto reply = InspectOn(s, name, image, std::chrono::seconds(30));
    if (!named && absl::IsNotFound(reply.status())) continue;
    if (!reply.ok()) {
      std::cerr << fmt::format("error: node \"{}\": {}\n", name,
                               std::string(reply.status().message()));
      failed = true;
      continue;
    }
    if (found) std::cout << "\n";
    found = true;
    const auto& img = reply->image();
    const std::string platform = reply->os().empty() && reply->architecture().empty()
                                     ? "<none>"
                                     : reply->os() + "/" + reply->architecture();
    std::vector<std::pair<std::string, std::string>> fields = {
        {"Node", name},
        {"Image", image},
        {"Names", Listed(img.names(), "\n               ")},
        {"ID", img.digest()},
        {"Size", HumanSize(img.size_bytes())},
        {"Platform", platform},
        {"Layers", std::to_string(reply->layers())},
        {"Entrypoint", Listed(reply->entrypoint(), " ")},
        {"Cmd", Listed(reply->cmd(), " ")},
        {"Env", Listed(reply->env(), "\n               ")},
        {"User", reply->user().empty() ? "<none>" : reply->user()},
        {"WorkingDir", reply->working_dir().empty() ? "<none>" : reply->working_dir()},
        {"Exposed Ports", Listed(reply->exposed_ports())},
    };
    for (const auto& [k, v] : fields) std::cout << fmt::format("{:<15}{}\n", k + ":", v);
  }
  if (!found && !failed) {
    return UserError(fmt::format("error: no node holds image \"{}\"", image));
  }
  return failed ? Reported() : absl::OkStatus();
}

std::vector<std::string> ImageExposedPorts(Session& s, const std::string& node,
                                           const std::string& image) {
  auto reply = InspectOn(s, node, image, std::chrono::seconds(2));
  if (!reply.ok()) return {};
  return {reply->exposed_ports().begin(), reply->exposed_ports().end()};
}

}  // namespace mkube::cli

#!/usr/bin/env bash
# Installs the Debian packages mkube needs, only those that are missing.
# Idempotent and quiet; works as root or through sudo.
set -euo pipefail

packages=(
  build-essential clang cmake ninja-build ccache pkg-config git openssl libssl-dev libnghttp2-dev zlib1g-dev
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  librocksdb-dev libabsl-dev libspdlog-dev libfmt-dev
  libgtest-dev libgmock-dev libyaml-cpp-dev nlohmann-json3-dev libcli11-dev libboost-dev
  libgoogle-perftools-dev libarchive-dev libcurl4-openssl-dev tzdata
  docker-registry skopeo busybox-static
  etcd-server etcd-client
  python3-kubernetes python3-prometheus-client
)

missing=()
for p in "${packages[@]}"; do
  if [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "deps.sh: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo_cmd=(sudo)
fi

echo "deps.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq >/dev/null
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null

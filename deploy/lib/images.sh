#!/usr/bin/env bash
# Writes the demo image registry the agents pull from:   images.sh REGISTRY_DIR BIN_DIR
#   busybox:latest          the host's shell tools (command/args run as given; cmd: sh)
#   soscscs/myapp:v1, :v2   mkube-demo-server answering "Hello MyApp | Version: vN" on port 80
#   nginx:latest            mkube-demo-server with nginx's welcome page on port 80
# Images are replaced whole, so a rebuilt demo server reaches the next pull.
set -euo pipefail
registry=$1
bin=$2
[ -x "$bin/mkube-demo-server" ] || { echo "images.sh: $bin/mkube-demo-server is missing (build first)" >&2; exit 1; }

image() {  # image NAME TAG IMAGE_JSON [PROGRAM]
  local dir=$registry/$1/$2
  rm -rf "$dir.tmp"
  mkdir -p "$dir.tmp"
  printf '%s\n' "$3" >"$dir.tmp/image.json"
  [ -z "${4:-}" ] || { mkdir -p "$dir.tmp/bin"; cp "$bin/mkube-demo-server" "$dir.tmp/bin/$4"; }
  rm -rf "$dir"
  mv "$dir.tmp" "$dir"
}

image busybox latest '{"cmd": ["sh"]}'
image soscscs/myapp v1 '{"entrypoint": ["myapp"], "env": ["VERSION=v1", "PORT=80"]}' myapp
image soscscs/myapp v2 '{"entrypoint": ["myapp"], "env": ["VERSION=v2", "PORT=80"]}' myapp
image nginx latest '{"entrypoint": ["nginx"], "env": ["DEMO_MODE=nginx", "PORT=80"]}' nginx

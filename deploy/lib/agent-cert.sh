#!/usr/bin/env bash
# The serving certificate of a node's agent, in two steps so that the node's key never leaves
# the node:
#   deploy/lib/agent-cert.sh request DIR        on the node: DIR/agent.key (kept there) and
#                                               DIR/agent.csr (to copy to the control plane)
#   deploy/lib/agent-cert.sh sign PKI CSR NODE IP OUT
#                                               on the control plane: OUT, signed by PKI's CA
#                                               for the node's name and address (serverAuth
#                                               only), whatever the request asked for
# Each step leaves what is already there alone.
set -euo pipefail
usage() {
  sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}
case "${1:-}" in
  request)
    [ $# -eq 2 ] || usage
    dir=$2
    mkdir -p "$dir"
    umask 077
    [ -f "$dir/agent.key" ] || openssl genrsa -out "$dir/agent.key" 2048 >/dev/null 2>&1
    [ -f "$dir/agent.csr" ] || openssl req -new -key "$dir/agent.key" -out "$dir/agent.csr" \
      -subj "/CN=mkube-agent" >/dev/null 2>&1
    ;;
  sign)
    [ $# -eq 6 ] || usage
    pki=$2 csr=$3 node=$4 ip=$5 out=$6
    [ -f "$out" ] && exit 0
    [ -f "$pki/ca.key" ] || { echo "agent-cert.sh: no CA key in $pki" >&2; exit 1; }
    [ -f "$csr" ] || { echo "agent-cert.sh: no request $csr" >&2; exit 1; }
    ext=$(mktemp)
    trap 'rm -f "$ext"' EXIT
    printf 'subjectAltName = DNS:%s, IP:%s\nextendedKeyUsage = serverAuth\n' "$node" "$ip" >"$ext"
    # The certificate names the node; the request's own subject and extensions are not used.
    openssl x509 -req -in "$csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
      -out "$out.tmp" -days 3650 -subj "/CN=system:node:$node" -extfile "$ext" >/dev/null 2>&1
    chmod 644 "$out.tmp"
    mv "$out.tmp" "$out"
    ;;
  *) usage ;;
esac

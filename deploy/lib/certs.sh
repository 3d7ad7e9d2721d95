#!/usr/bin/env bash
# deploy/lib/certs.sh DIR [SAN,...]: the cluster's certificates, made with openssl unless
# already there: a CA; the apiserver's and the store's serving certificates for 127.0.0.1 and
# localhost (and the extra names given, e.g. IP:10.0.0.5,DNS:cp.example.com, for clients on
# other hosts); the client certificates the apiserver presents to the store and to the node
# agents (each agent's serving certificate is deploy/lib/agent-cert.sh's).
set -euo pipefail
dir=$1
extra=${2:+, $2}
mkdir -p "$dir"
cd "$dir"
umask 077
if [ ! -f ca.crt ]; then
  openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 3650 \
    -subj "/CN=mkube-ca" >/dev/null 2>&1
fi

# issue NAME CN EXTENSIONS: NAME.crt and NAME.key signed by the CA.
issue() {
  [ -f "$1.crt" ] && return
  printf '%b\n' "$3" >"$1.ext"
  openssl req -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "/CN=$2" \
    >/dev/null 2>&1
  openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -out "$1.crt" \
    -days 3650 -extfile "$1.ext" >/dev/null 2>&1
  rm -f "$1.csr" "$1.ext"
}
serving="subjectAltName = IP:127.0.0.1, DNS:localhost$extra\nextendedKeyUsage = serverAuth"
issue apiserver mkube-apiserver "$serving"
issue store mkube-store "$serving"
issue apiserver-etcd-client mkube-apiserver "extendedKeyUsage = clientAuth"
issue apiserver-agent-client mkube-apiserver-agent-client "extendedKeyUsage = clientAuth"
chmod 644 ca.crt apiserver.crt store.crt apiserver-etcd-client.crt apiserver-agent-client.crt
chmod 600 ca.key apiserver.key store.key apiserver-etcd-client.key apiserver-agent-client.key

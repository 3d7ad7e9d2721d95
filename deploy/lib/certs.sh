#!/usr/bin/env bash
# deploy/lib/certs.sh DIR [SAN,...]: a CA and an apiserver certificate for 127.0.0.1 and
# localhost (and the extra names given, e.g. IP:10.0.0.5,DNS:cp.example.com, for agents on
# other hosts), made with openssl unless already there.
set -euo pipefail
dir=$1
extra=${2:+, $2}
mkdir -p "$dir"
cd "$dir"
if [ ! -f ca.crt ]; then
  openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 3650 \
    -subj "/CN=mkube-ca" >/dev/null 2>&1
fi
if [ ! -f apiserver.crt ]; then
  cat >apiserver.ext <<EXT
subjectAltName = IP:127.0.0.1, DNS:localhost$extra
extendedKeyUsage = serverAuth
EXT
  openssl req -newkey rsa:2048 -nodes -keyout apiserver.key -out apiserver.csr \
    -subj "/CN=mkube-apiserver" >/dev/null 2>&1
  openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
    -out apiserver.crt -days 3650 -extfile apiserver.ext >/dev/null 2>&1
  rm -f apiserver.csr apiserver.ext
fi
chmod 600 ca.key apiserver.key

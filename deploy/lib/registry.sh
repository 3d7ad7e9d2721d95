# Debian's docker-registry (the Distribution project's registry), configured for a local
# cluster: plain HTTP on loopback, its data in a folder. Sourced by up.sh and the tests.

# registry_config FILE ADDR DATA_DIR [HTPASSWD]: writes the registry's configuration to FILE
# (whole or not at all): listening on ADDR (HOST:PORT), keeping images in DATA_DIR, deleting
# allowed; with HTPASSWD, only its users (bcrypt) may pull and push.
registry_config() {
  local file=$1 addr=$2 data=$3 htpasswd=${4:-}
  {
    printf 'version: 0.1\nlog:\n  level: warn\n'
    printf 'storage:\n  filesystem:\n    rootdirectory: %s\n  delete:\n    enabled: true\n' "$data"
    [ -z "$htpasswd" ] || printf 'auth:\n  htpasswd:\n    realm: mkube\n    path: %s\n' "$htpasswd"
    printf 'http:\n  addr: %s\n' "$addr"
  } >"$file.tmp" && mv -f "$file.tmp" "$file"
}

# registry_answers ADDR: whether the registry at ADDR answers its API's root (any answer, 401
# included: it is up).
registry_answers() {
  local code
  code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://$1/v2/") || return 1
  [ "$code" = 200 ] || [ "$code" = 401 ]
}

"""Bad input on the Kubernetes HTTP API of a cluster up.sh started, as kube-apiserver answers it.

Usage: http_bad_input.py STATE_DIR MKUBECTL. Malformed JSON, a body of another kind, a name
that is not the URL's, a body and headers over their limits: each a metav1.Status with
Kubernetes' code and reason, and nothing written. Then 2,000 idle TLS connections: the HTTP API
and the gRPC API (mkubectl) still answer, and the apiserver's memory grows by a bounded amount
(not checked in a sanitizer build, whose allocator keeps redzones and a quarantine).
Prints one line per check; exits non-zero on the first failure, naming it.
"""
import json
import os
import resource
import socket
import ssl
import subprocess
import sys
import time

from kubernetes import client, config

IDLE = 2000


def connect(cfg):
    host, port = cfg.host.removeprefix("https://").rsplit(":", 1)
    ctx = ssl.create_default_context(cafile=cfg.ssl_ca_cert)
    ctx.set_alpn_protocols(["http/1.1"])
    if cfg.cert_file:
        ctx.load_cert_chain(cfg.cert_file, cfg.key_file)
    sock = socket.create_connection((host, int(port)), timeout=30)
    return ctx.wrap_socket(sock, server_hostname=host)


def request(cfg, method, path, body=b"", headers=None, length=None):
    """One request on its own connection: (status, parsed JSON body or None, raw body).
    `length`: the Content-Length to declare, when not the body's."""
    s = connect(cfg)
    lines = [f"{method} {path} HTTP/1.1", "Host: mkube", "Connection: close",
             "Content-Type: application/json",
             f"Content-Length: {len(body) if length is None else length}"]
    token = cfg.api_key.get("authorization", "")
    if token:
        lines.append(f"Authorization: {token}")
    for k, v in (headers or {}).items():
        lines.append(f"{k}: {v}")
    try:
        s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
    except OSError:
        pass  # refused before all was sent: the answer says why
    data = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except OSError as e:
        if not data:
            sys.exit(f"{method} {path}: the connection failed before an answer: {e}")
    s.close()
    head, _, raw = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    if b"transfer-encoding: chunked" in head.lower():
        out, rest = b"", raw
        while rest:
            size, _, rest = rest.partition(b"\r\n")
            n = int(size, 16)
            if n == 0:
                break
            out, rest = out + rest[:n], rest[n + 2:]
        raw = out
    try:
        return status, json.loads(raw), raw
    except ValueError:
        return status, None, raw


def expect(what, got, code, reason, message_part=""):
    status, doc, raw = got
    ok = (status == code and doc is not None and doc.get("kind") == "Status"
          and doc.get("reason") == reason and message_part in doc.get("message", ""))
    if not ok:
        sys.exit(f"{what}: want {code} {reason} ({message_part!r}), got {status} {raw[:300]!r}")
    print(f"{what}: {code} {reason}: {doc.get('message', '')[:100]}")


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def main(state, mkubectl):
    config.load_kube_config(config_file=f"{state}/config")
    cfg = client.Configuration.get_default_copy()
    pods = "/api/v1/namespaces/default/pods"
    expect("malformed JSON", request(cfg, "POST", pods, b'{"apiVersion": "v1", "kind": '),
           400, "BadRequest")
    node = json.dumps({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "bad01"}}).encode()
    expect("a Node posted as a pod", request(cfg, "POST", pods, node), 400, "BadRequest",
           "unrecognized as Pod")
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "other"},
           "spec": {"containers": [{"name": "c", "image": "soscscs/myapp:v1"}]}}
    expect("a name that is not the URL's", request(cfg, "PUT", f"{pods}/bad01",
                                                   json.dumps(pod).encode()),
           400, "BadRequest", "does not match the name on the URL")
    expect("a body over 3 MiB", request(cfg, "POST", pods, length=(3 << 20) + 1), 413,
           "RequestEntityTooLarge")
    status, _, raw = request(cfg, "GET", pods, headers={"X-Big": "y" * (100 << 10)})
    if status != 431:
        sys.exit(f"headers over the limit: want 431, got {status} {raw[:200]!r}")
    print("headers over 64 KiB: 431")
    names = subprocess.run([mkubectl, "get", "pods", "-o", "name"], capture_output=True, text=True,
                           env={**os.environ, "MKUBECONFIG": f"{state}/config"}, check=True).stdout
    for name in ("bad01", "other"):
        if f"pod/{name}\n" in names:
            sys.exit(f"a refused request wrote pod {name}")
    print("nothing written by the refused requests")

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, IDLE + 256)), hard))
    with open(f"{state}/run/apiserver.pid") as f:
        pid = int(f.read().strip())
    before = rss_kib(pid)
    idle = [connect(cfg) for _ in range(IDLE)]
    time.sleep(0.5)  # let the server take in the last handshakes before measuring
    during = rss_kib(pid)
    status, doc, raw = request(cfg, "GET", "/api/v1/nodes")
    if status != 200 or not doc.get("items"):
        sys.exit(f"with {IDLE} idle connections the HTTP API answered {status} {raw[:200]!r}")
    got = subprocess.run([mkubectl, "get", "nodes", "-o", "name"], capture_output=True, text=True,
                         env={**os.environ, "MKUBECONFIG": f"{state}/config"}, timeout=30)
    if got.returncode != 0 or "node/node01" not in got.stdout:
        sys.exit(f"with {IDLE} idle connections mkubectl said: {got.stdout} {got.stderr}")
    grown_mib = (during - before) / 1024
    if os.environ.get("MKUBE_SANITIZED") == "1":
        print(f"(a sanitizer build: the memory bound is not checked; it grew {grown_mib:.0f} MiB)")
    elif grown_mib > 120:  # about 19 KiB a connection here
        sys.exit(f"{IDLE} idle connections grew the apiserver by {grown_mib:.0f} MiB")
    print(f"{IDLE} idle TLS connections: HTTP and gRPC still answer; "
          f"apiserver RSS {before // 1024} -> {during // 1024} MiB, "
          f"{(during - before) / IDLE:.0f} KiB a connection")
    for s in idle:
        s.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

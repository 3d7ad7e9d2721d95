"""Scrapes every daemon of a cluster up.sh started: /metrics parsed by prometheus_client's
text-format parser, with the names Kubernetes' and etcd's daemons use; /readyz answering 200.

Usage: scrape_metrics.py STATE_DIR. Exits non-zero on the first failure, naming it.
"""
import glob
import os
import ssl
import sys
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

EXPECTED = {
    "apiserver": ["apiserver_request_total", "apiserver_request_duration_seconds",
                  "process_resident_memory_bytes"],
    "store": ["etcd_server_has_leader", "etcd_mvcc_db_total_size_in_bytes",
              "etcd_disk_wal_fsync_duration_seconds", "process_cpu_seconds_total"],
    "scheduler": ["scheduler_schedule_attempts_total", "leader_election_master_status"],
    "controller-manager": ["workqueue_depth", "workqueue_adds_total",
                           "leader_election_master_status"],
    "agent": ["kubelet_running_pods", "kubelet_running_containers"],
}


def get(url, token=None, context=None):
    req = urllib.request.Request(url)
    if token:
        req.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req, context=context, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def check(name, base, token=None, context=None):
    status, text = get(base + "/metrics", token, context)
    assert status == 200, f"{name}: /metrics answered {status}: {text[:200]}"
    families = {f.name for f in text_string_to_metric_families(text)}
    kind = "agent" if name.startswith("agent-") else name
    for want in EXPECTED[kind]:
        # The parser names counters without their _total suffix.
        assert want in families or want.removesuffix("_total") in families, \
            f"{name}: no {want} among {sorted(families)}"
    status, text = get(base + "/readyz?verbose", token, context)
    assert status == 200, f"{name}: /readyz answered {status}: {text}"
    print(f"{name}: {len(families)} metric families parsed, /readyz 200")


def main(state):
    run = os.path.join(state, "run")
    token = open(os.path.join(state, "pki", "admin.token")).read().strip()
    context = ssl.create_default_context(cafile=os.path.join(state, "pki", "ca.crt"))
    api = open(os.path.join(run, "apiserver-http.addr")).read().strip()
    check("apiserver", "https://" + api, token, context)
    status, _ = get("https://" + api + "/metrics", None, context)
    assert status == 401, f"apiserver: /metrics without a token answered {status}"
    for path in sorted(glob.glob(os.path.join(run, "*.metrics"))):
        name = os.path.basename(path)[: -len(".metrics")]
        check(name, "http://" + open(path).read().strip())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))

"""Debian's python3-kubernetes against mkube: list, create, watch until Running, delete.

Usage: python_client.py KUBECONFIG. Prints one line per step; exits non-zero on the first
failure, naming it.
"""
import sys
import time

from kubernetes import client, config, watch


def main(kubeconfig):
    config.load_kube_config(config_file=kubeconfig)
    core = client.CoreV1Api()
    nodes = core.list_node()
    names = sorted(n.metadata.name for n in nodes.items)
    assert "node01" in names, names
    print("listed nodes:", " ".join(names))

    pod = client.V1Pod(
        api_version="v1",
        kind="Pod",
        metadata=client.V1ObjectMeta(name="py", labels={"app": "py"}),
        spec=client.V1PodSpec(containers=[client.V1Container(name="py", image="soscscs/myapp:v1")]),
    )
    created = core.create_namespaced_pod("default", pod)
    assert created.metadata.uid, created
    print("created pod py, resourceVersion", created.metadata.resource_version)

    w = watch.Watch()
    phase = None
    deadline = time.time() + 60
    for event in w.stream(core.list_namespaced_pod, "default", field_selector="metadata.name=py",
                          resource_version=created.metadata.resource_version, timeout_seconds=60):
        phase = event["object"].status.phase
        if phase == "Running":
            w.stop()
            break
        if time.time() > deadline:
            break
    assert phase == "Running", "the pod did not run: " + str(phase)
    print("watched pod py until Running")

    core.delete_namespaced_pod("py", "default", grace_period_seconds=0)
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            core.read_namespaced_pod("py", "default")
        except client.exceptions.ApiException as e:
            assert e.status == 404, e
            print("deleted pod py")
            return 0
        time.sleep(0.2)
    raise AssertionError("pod py was not deleted")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))

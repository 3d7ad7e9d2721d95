#!/usr/bin/env python3
"""Writes an OCI image layout holding a small image made from the node's static busybox:
/bin/busybox with sh, echo, cat and id linked to it, a user "app" (uid 1000) in its own
/etc/passwd, and a /data folder with a file; Entrypoint ["/bin/sh", "-c"], a Cmd that prints
who runs it and where, User app, WorkingDir /data.

    oci_layout.py OUT_DIR TAG
"""
import gzip
import hashlib
import io
import json
import os
import sys
import tarfile


def blob(out, data):
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    with open(os.path.join(out, "blobs", "sha256", digest[7:]), "wb") as f:
        f.write(data)
    return digest


def layer():
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        def add(name, data=None, mode=0o644, link=None, folder=False):
            info = tarfile.TarInfo(name)
            info.mtime = 1700000000
            if folder:
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
            elif link:
                info.type, info.linkname = tarfile.SYMTYPE, link
                tar.addfile(info)
            else:
                info.size, info.mode = len(data), mode
                tar.addfile(info, io.BytesIO(data))
        for d in ("bin", "etc", "data"):
            add(d, folder=True)
        with open("/bin/busybox", "rb") as f:
            add("bin/busybox", f.read(), 0o755)
        for tool in ("sh", "echo", "cat", "id"):
            add("bin/" + tool, link="busybox")
        add("etc/passwd", b"root:x:0:0:root:/root:/bin/sh\napp:x:1000:1000:app:/data:/bin/sh\n")
        add("etc/group", b"root:x:0:\napp:x:1000:\n")
        add("data/motd", b"from the image\n")
    tar_bytes = raw.getvalue()
    return gzip.compress(tar_bytes, mtime=0), "sha256:" + hashlib.sha256(tar_bytes).hexdigest()


def main(out, tag):
    os.makedirs(os.path.join(out, "blobs", "sha256"), exist_ok=True)
    compressed, diff_id = layer()
    layer_digest = blob(out, compressed)
    config = json.dumps({
        "architecture": "amd64", "os": "linux",
        "config": {"Entrypoint": ["/bin/sh", "-c"],
                   "Cmd": ["echo ran as $(id -un) in $(pwd): $(cat motd)"],
                   "Env": ["PATH=/bin"], "User": "app", "WorkingDir": "/data"},
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
    }).encode()
    config_digest = blob(out, config)
    manifest = json.dumps({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                   "digest": config_digest, "size": len(config)},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                    "digest": layer_digest, "size": len(compressed)}],
    }).encode()
    manifest_digest = blob(out, manifest)
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump({"schemaVersion": 2, "manifests": [{
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "digest": manifest_digest, "size": len(manifest),
            "annotations": {"org.opencontainers.image.ref.name": tag}}]}, f)
    with open(os.path.join(out, "oci-layout"), "w") as f:
        json.dump({"imageLayoutVersion": "1.0.0"}, f)
    print(manifest_digest)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

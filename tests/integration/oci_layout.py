#!/usr/bin/env python3
"""Writes an OCI image layout holding a small image made from the node's static busybox:
/bin/busybox with sh, echo, cat, id, ls and sleep linked to it, a user "app" (uid 1000) in its own
/etc/passwd, a /data folder with a file and /etc/old.d with a file a; Entrypoint
["/bin/sh", "-c"], a Cmd that prints who runs it and where, User app, WorkingDir /data.

    oci_layout.py OUT_DIR TAG [plain|layers|index|big:MB|many:N]

layers: a second layer above that whites out /data/motd, adds /data/new, and makes /etc/old.d
opaque holding only b (its /data/new names the tag, so each tag's upper layer is its own). index: an image index of two platforms, linux/arm64 first (its Cmd
says "wrong platform") and linux/amd64. big:MB: a second layer of MB megabytes of random bytes
(/data/random), which gzip cannot shrink. many:N: N layers above, the i-th adding /data/lI
(I in three digits) that says "layer I". Prints the digest the tag stands for.
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


def tar_layer(files):
    """files: (name, bytes | None for a folder, mode, symlink target or None)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for name, data, mode, link in files:
            info = tarfile.TarInfo(name)
            info.mtime = 1700000000
            if link:
                info.type, info.linkname = tarfile.SYMTYPE, link
                tar.addfile(info)
            elif data is None:
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
            else:
                info.size, info.mode = len(data), mode
                tar.addfile(info, io.BytesIO(data))
    tar_bytes = raw.getvalue()
    return gzip.compress(tar_bytes, mtime=0), "sha256:" + hashlib.sha256(tar_bytes).hexdigest()


def base_files():
    with open("/bin/busybox", "rb") as f:
        busybox = f.read()
    files = [(d, None, 0, None) for d in ("bin", "etc", "etc/old.d", "data")]
    files.append(("bin/busybox", busybox, 0o755, None))
    files += [("bin/" + t, None, 0, "busybox") for t in ("sh", "echo", "cat", "id", "ls", "sleep")]
    files += [
        ("etc/passwd", b"root:x:0:0:root:/root:/bin/sh\napp:x:1000:1000:app:/data:/bin/sh\n", 0o644, None),
        ("etc/group", b"root:x:0:\napp:x:1000:\n", 0o644, None),
        ("etc/old.d/a", b"a\n", 0o644, None),
        ("data/motd", b"from the image\n", 0o644, None),
    ]
    return files


def upper_files(tag):
    return [("data", None, 0, None), ("data/.wh.motd", b"", 0o644, None),
            ("data/new", ("added above in " + tag + "\n").encode(), 0o644, None), ("etc", None, 0, None),
            ("etc/old.d", None, 0, None), ("etc/old.d/.wh..wh..opq", b"", 0o644, None),
            ("etc/old.d/b", b"b\n", 0o644, None)]


def image(out, layers, architecture="amd64", cmd="echo ran as $(id -un) in $(pwd): $(cat motd)"):
    """An image's manifest (written with its config); returns its descriptor."""
    descriptors, diff_ids = [], []
    for compressed, diff_id in layers:
        descriptors.append({"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                            "digest": blob(out, compressed), "size": len(compressed)})
        diff_ids.append(diff_id)
    config = json.dumps({
        "architecture": architecture, "os": "linux",
        "config": {"Entrypoint": ["/bin/sh", "-c"], "Cmd": [cmd],
                   "Env": ["PATH=/bin"], "User": "app", "WorkingDir": "/data"},
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
    }).encode()
    manifest = json.dumps({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                   "digest": blob(out, config), "size": len(config)},
        "layers": descriptors,
    }).encode()
    return {"mediaType": "application/vnd.oci.image.manifest.v1+json",
            "digest": blob(out, manifest), "size": len(manifest),
            "platform": {"architecture": architecture, "os": "linux"}}


def main(out, tag, kind):
    os.makedirs(os.path.join(out, "blobs", "sha256"), exist_ok=True)
    base = tar_layer(base_files())
    if kind == "plain":
        top = image(out, [base])
    elif kind == "layers":
        top = image(out, [base, tar_layer(upper_files(tag))])
    elif kind == "index":
        manifests = [image(out, [base], "arm64", "echo wrong platform"), image(out, [base])]
        index = json.dumps({"schemaVersion": 2,
                            "mediaType": "application/vnd.oci.image.index.v1+json",
                            "manifests": manifests}).encode()
        top = {"mediaType": "application/vnd.oci.image.index.v1+json",
               "digest": blob(out, index), "size": len(index)}
    elif kind.startswith("big:"):
        noise = os.urandom(int(kind[4:]) << 20)
        top = image(out, [base, tar_layer([("data", None, 0, None), ("data/random", noise, 0o644, None)])])
    elif kind.startswith("many:"):
        uppers = [tar_layer([("data", None, 0, None),
                             ("data/l%03d" % i, ("layer %d\n" % i).encode(), 0o644, None)])
                  for i in range(int(kind[5:]))]
        top = image(out, [base] + uppers)
    else:
        sys.exit("oci_layout.py: the kind is plain, layers, index, big:MB or many:N, not " + kind)
    top = {k: v for k, v in top.items() if k != "platform"}
    top["annotations"] = {"org.opencontainers.image.ref.name": tag}
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump({"schemaVersion": 2, "manifests": [top]}, f)
    with open(os.path.join(out, "oci-layout"), "w") as f:
        json.dump({"imageLayoutVersion": "1.0.0"}, f)
    print(top["digest"])


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "plain")

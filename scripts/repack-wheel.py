#!/usr/bin/env python3
"""Repack a wheel smaller for the GPU machine's 64 MiB a call: keep only the
files that match KEEP patterns (all files when none is given), store them
LZMA-compressed (pip reads any method Python's zipfile reads), and write a
RECORD that lists what is left. The wheel stays installable with pip.

usage: repack-wheel.py IN.whl OUT_DIR [KEEP_GLOB...]

The dist-info folder is always kept. Used by scripts/fetch-gpu-deps.sh
--dsl for the CuTe DSL and cuTile compilers, whose wheels hold far more than
a kernel needs (nvcc's wheel for its ptxas, nvvm's for libnvvm)."""
import base64
import fnmatch
import hashlib
import os
import sys
import zipfile


def record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest())
    return "%s,sha256=%s,%d" % (name, digest.rstrip(b"=").decode(), len(data))


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__.splitlines()[-5])
    src, out_dir, keep = sys.argv[1], sys.argv[2], sys.argv[3:]
    os.makedirs(out_dir, exist_ok=True)
    dst = os.path.join(out_dir, os.path.basename(src))
    with zipfile.ZipFile(src) as zin:
        names = zin.namelist()
        record = [n for n in names if n.endswith(".dist-info/RECORD")]
        if len(record) != 1:
            sys.exit("%s: not a wheel (no single RECORD)" % src)
        dist_info = record[0].rsplit("/", 1)[0] + "/"
        kept = [n for n in names
                if n != record[0] and not n.endswith("/") and
                (n.startswith(dist_info) or not keep or
                 any(fnmatch.fnmatch(n, k) for k in keep))]
        lines = []
        with zipfile.ZipFile(dst + ".part", "w", zipfile.ZIP_LZMA) as zout:
            for n in kept:
                info = zin.getinfo(n)
                data = zin.read(n)
                out = zipfile.ZipInfo(n, info.date_time)
                out.external_attr = info.external_attr  # keeps +x
                out.compress_type = zipfile.ZIP_LZMA
                zout.writestr(out, data)
                lines.append(record_line(n, data))
            lines.append(record[0] + ",,")
            zout.writestr(record[0], "\n".join(lines) + "\n")
    os.replace(dst + ".part", dst)
    print("%s: %d of %d files, %.1f MB" %
          (os.path.basename(dst), len(kept), len(names) - 1,
           os.path.getsize(dst) / 1e6))


if __name__ == "__main__":
    main()

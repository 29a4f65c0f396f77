"""Builds the edrpack wheel: the package, libedrpack.so inside it, a manylinux tag.

Standard library only, no network: a PEP 517 build backend (pyproject.toml names it, so
`pip install sdk/python` works offline) and a command line that sdk/build.sh runs:

    python3 sdk/python/_build/edrpack_build.py --lib OUT/linux_amd64/libedrpack.so --out OUT/linux_amd64

The wheel is a zip (PEP 427): edrpack/ with the library, edrpack-VERSION.dist-info/ with
METADATA, WHEEL and RECORD (sha256 of every file), entries in a fixed order with a fixed
time, so the same inputs give the same bytes. Its platform tag is manylinux_2_M_ARCH: ARCH
from the library's ELF header (x86_64, aarch64), M the newest glibc symbol version the
library needs (its .gnu.version_r section): pip installs it on any glibc at least that new.
The library must need no shared library but glibc's (manylinux's rule); the backend refuses
one that does, or one built for another machine than its name says.
"""

import base64
import hashlib
import os
import re
import struct
import subprocess
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)  # sdk/python
PACKAGE = os.path.join(ROOT, "edrpack")

# ELF e_machine -> the wheel's architecture name
MACHINES = {0x3E: "x86_64", 0xB7: "aarch64"}
# what manylinux lets a wheel's libraries need
ALLOWED_NEEDED = re.compile(r"^(libc\.so\.6|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|librt\.so\.1|ld-linux-x86-64\.so\.2|ld-linux-aarch64\.so\.1)$")


def _project():
    """name, version, summary and requires-python from pyproject.toml."""
    path = os.path.join(ROOT, "pyproject.toml")
    with open(path, "rb") as f:
        raw = f.read()
    try:
        import tomllib
        p = tomllib.loads(raw.decode())["project"]
        return p
    except ImportError:  # Python < 3.11: the few keys this file uses, one per line
        out, section = {}, None
        for line in raw.decode().splitlines():
            line = line.strip()
            if line.startswith("["):
                section = line
            elif section == "[project]" and "=" in line:
                k, v = (x.strip() for x in line.split("=", 1))
                if v.startswith('"'):
                    out[k] = v.strip('"')
        return out


def elf_facts(path):
    """(architecture, newest GLIBC_2.N minor needed, [needed libraries]) of an ELF shared library."""
    with open(path, "rb") as f:
        b = f.read()
    if b[:4] != b"\x7fELF" or b[4] != 2 or b[5] != 1:
        raise ValueError("%s: not a 64-bit little-endian ELF file" % path)
    (machine,) = struct.unpack_from("<H", b, 18)
    if machine not in MACHINES:
        raise ValueError("%s: ELF machine %#x is neither x86_64 nor aarch64" % (path, machine))
    shoff, = struct.unpack_from("<Q", b, 40)
    shentsize, shnum = struct.unpack_from("<HH", b, 58)
    secs = [struct.unpack_from("<IIQQQQIIQQ", b, shoff + i * shentsize) for i in range(shnum)]
    # (name, type, flags, addr, offset, size, link, info, addralign, entsize)
    glibc, needed = 0, []

    def cstr(sec, off):
        start = sec[4] + off
        return b[start:b.index(b"\0", start)].decode()

    for s in secs:
        if s[1] == 0x6FFFFFFE:  # SHT_GNU_verneed
            strtab = secs[s[6]]
            off, count = s[4], s[7]
            for _ in range(count):
                _ver, cnt, _file, aux, nxt = struct.unpack_from("<HHIII", b, off)
                a = off + aux
                for _ in range(cnt):
                    _hash, _flags, _other, name, anext = struct.unpack_from("<IHHII", b, a)
                    m = re.match(r"GLIBC_2\.(\d+)", cstr(strtab, name))
                    if m:
                        glibc = max(glibc, int(m.group(1)))
                    a += anext
                    if anext == 0:
                        break
                off += nxt
                if nxt == 0:
                    break
        if s[1] == 6:  # SHT_DYNAMIC
            strtab = secs[s[6]]
            for i in range(s[5] // 16):
                tag, val = struct.unpack_from("<qQ", b, s[4] + 16 * i)
                if tag == 0:
                    break
                if tag == 1:  # DT_NEEDED
                    needed.append(cstr(strtab, val))
    return MACHINES[machine], glibc, needed


def _find_lib(config_settings):
    """The library to ship: --config-settings lib=..., $EDRPACK_LIB, beside the package, or built
    now with go from the repository this tree sits in."""
    for c in [(config_settings or {}).get("lib"), os.environ.get("EDRPACK_LIB"), os.path.join(PACKAGE, "libedrpack.so")]:
        if c and os.path.exists(c):
            return c
    repo = os.path.dirname(os.path.dirname(ROOT))
    if os.path.exists(os.path.join(repo, "sdk", "libedrpack")):
        out = os.path.join(HERE, "libedrpack.so")
        env = dict(os.environ, CGO_ENABLED="1")
        subprocess.run(["go", "build", "-trimpath", "-buildmode=c-shared", "-o", out, "./sdk/libedrpack"], cwd=repo, env=env, check=True)
        return out
    raise FileNotFoundError("no libedrpack.so: pass --config-settings lib=PATH, set EDRPACK_LIB, or build from the edr-lite repository")


def _record_hash(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def build(lib, out_dir):
    """Writes the wheel into out_dir and returns its file name."""
    arch, glibc, needed = elf_facts(lib)
    bad = [n for n in needed if not ALLOWED_NEEDED.match(n)]
    if bad:
        raise ValueError("%s needs %s: a manylinux wheel may need glibc's libraries only" % (lib, ", ".join(bad)))
    p = _project()
    name, version = p["name"], p["version"]
    tag = "py3-none-manylinux_2_%d_%s" % (glibc, arch)
    dist = "%s-%s.dist-info" % (name, version)
    files = []
    for fn in sorted(os.listdir(PACKAGE)):
        if fn.endswith(".py"):
            with open(os.path.join(PACKAGE, fn), "rb") as f:
                files.append(("edrpack/" + fn, f.read()))
    with open(lib, "rb") as f:
        files.append(("edrpack/libedrpack.so", f.read()))
    readme = ""
    rp = os.path.join(ROOT, "README.md")
    if os.path.exists(rp):
        with open(rp, encoding="utf-8") as f:
            readme = f.read()
    meta = ["Metadata-Version: 2.1", "Name: " + name, "Version: " + version, "Summary: " + p.get("description", ""),
            "Requires-Python: " + p.get("requires-python", ">=3.8"), "License: " + "see the edr-lite repository",
            "Provides-Extra: numpy", 'Requires-Dist: numpy; extra == "numpy"',
            "Description-Content-Type: text/markdown", "", readme]
    files.append((dist + "/METADATA", "\n".join(meta).encode()))
    files.append((dist + "/WHEEL", ("Wheel-Version: 1.0\nGenerator: edrpack_build (edr-lite sdk/python)\n"
                                    "Root-Is-Purelib: false\nTag: %s\n" % tag).encode()))
    files.append((dist + "/top_level.txt", b"edrpack\n"))
    record = "".join("%s,%s,%d\n" % (n, _record_hash(d), len(d)) for n, d in files) + dist + "/RECORD,,\n"
    files.append((dist + "/RECORD", record.encode()))
    wheel = "%s-%s-%s.whl" % (name, version, tag)
    os.makedirs(out_dir, exist_ok=True)
    tmp = os.path.join(out_dir, wheel + ".tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for n, d in files:
            zi = zipfile.ZipInfo(n, date_time=(1980, 1, 1, 0, 0, 0))
            zi.external_attr = (0o755 if n.endswith(".so") else 0o644) << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, d)
    os.replace(tmp, os.path.join(out_dir, wheel))
    return wheel


# ---- PEP 517 ----

def get_requires_for_build_wheel(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return build(_find_lib(config_settings), wheel_directory)


def main(argv):
    import argparse
    ap = argparse.ArgumentParser(description="builds the edrpack wheel around a libedrpack.so")
    ap.add_argument("--lib", required=True, help="the libedrpack.so to ship (its architecture names the wheel)")
    ap.add_argument("--out", required=True, help="the directory to write the wheel to")
    a = ap.parse_args(argv)
    print(os.path.join(a.out, build(a.lib, a.out)))


if __name__ == "__main__":
    main(sys.argv[1:])

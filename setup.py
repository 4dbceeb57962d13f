"""Declares the cykafka._native and cykafka._codecs extensions and finds the
librdkafka _native links.

Which librdkafka (see the README, "Which librdkafka"):

* default: compile against the librdkafka headers from Debian's ``librdkafka-dev``
  (``/usr/include/librdkafka``) and link against the librdkafka 2.16 shared library
  inside the pinned ``confluent-kafka`` wheel.  Debian's own 2.0.2 library cannot
  talk to the test broker, the wheel's can, and the C API is ABI-stable across
  these versions.  The library is found at run time through an ``$ORIGIN``
  relative rpath (both packages live in the same site-packages), so one
  librdkafka serves the process, shared with ``confluent_kafka``.
* ``CYKAFKA_LIBRDKAFKA=system``: headers and library from pkg-config ``rdkafka``.

Anything missing fails the build loudly; there is no silent fallback.
"""

from __future__ import annotations

import glob
import os
import shlex
import subprocess
import sys
from importlib.util import find_spec

from Cython.Build import cythonize
from setuptools import Extension, setup

HEADER_DIRS = [os.environ.get("CYKAFKA_RDKAFKA_INCLUDE", "/usr/include")]


def _fail(msg: str) -> None:
    sys.stderr.write(f"\ncykafka build error: {msg}\n\n")
    raise SystemExit(1)


def _wheel_librdkafka() -> dict:
    spec = find_spec("confluent_kafka")
    if spec is None or not spec.submodule_search_locations:
        _fail("confluent-kafka==2.16.1 is not importable in the build environment; "
              "it provides the librdkafka the extension links against.")
    site = os.path.dirname(list(spec.submodule_search_locations)[0])
    libs = sorted(glob.glob(os.path.join(site, "confluent_kafka.libs", "librdkafka*.so*")))
    if len(libs) != 1:
        _fail(f"expected exactly one librdkafka in {site}/confluent_kafka.libs, found {libs}")
    header = None
    for d in HEADER_DIRS:
        if os.path.exists(os.path.join(d, "librdkafka", "rdkafka.h")):
            header = d
    if header is None:
        _fail("librdkafka headers not found (looked for librdkafka/rdkafka.h in "
              f"{HEADER_DIRS}). Install them: apt-get install librdkafka-dev, "
              "or set CYKAFKA_RDKAFKA_INCLUDE.")
    libdir, libname = os.path.split(libs[0])
    return {
        "include_dirs": [header],
        "library_dirs": [libdir],
        # Link the wheel's file by name: its soname carries a hash, so -lrdkafka
        # would find Debian's 2.0.2 instead.
        "extra_link_args": [f"-l:{libname}", "-Wl,-rpath,$ORIGIN/../confluent_kafka.libs"],
        "libraries": [],
    }


def _system_librdkafka() -> dict:
    try:
        cflags = subprocess.check_output(["pkg-config", "--cflags", "rdkafka"], text=True)
        ldflags = subprocess.check_output(["pkg-config", "--libs", "rdkafka"], text=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        _fail(f"CYKAFKA_LIBRDKAFKA=system but pkg-config cannot find rdkafka: {exc}")
    inc = [f[2:] for f in shlex.split(cflags) if f.startswith("-I")]
    # rdkafka.pc points at .../include/librdkafka; we include <librdkafka/rdkafka.h>.
    inc += [os.path.dirname(d.rstrip("/")) for d in inc]
    return {"include_dirs": inc or ["/usr/include"], "library_dirs": [],
            "extra_link_args": shlex.split(ldflags), "libraries": []}


#: The C of the codecs, compiled with _codecs (declared in ext/includes/*.h).
CODECS_C = ["ext/csrc/arrowjson.c", "ext/csrc/avrobin.c"]


def _ext_files() -> list[str]:
    """The files whose change rebuilds the extensions: the .pxi files in ext/, the
    extern declarations and C headers in ext/includes/, the C in ext/csrc/."""
    return [p for pat in ("*.pxi", "*.pxd", "*.h") for d in ("ext", "ext/includes")
            for p in glob.glob(os.path.join(d, pat))] + CODECS_C


def _extension() -> Extension:
    mode = os.environ.get("CYKAFKA_LIBRDKAFKA", "wheel")
    if mode not in ("wheel", "system"):
        _fail(f"CYKAFKA_LIBRDKAFKA must be 'wheel' or 'system', not {mode!r}")
    lib = _wheel_librdkafka() if mode == "wheel" else _system_librdkafka()
    extra_compile = ["-O2", "-Wno-unused-function"]
    if os.environ.get("CYKAFKA_ASAN"):
        extra_compile += ["-fsanitize=address", "-fno-omit-frame-pointer", "-O1", "-g"]
        lib["extra_link_args"].append("-fsanitize=address")
    return Extension(
        "cykafka._native",
        sources=["ext/_native.pyx"],
        include_dirs=lib["include_dirs"] + ["ext", "ext/includes"],
        library_dirs=lib["library_dirs"],
        libraries=lib["libraries"],
        extra_compile_args=extra_compile,
        extra_link_args=lib["extra_link_args"],
        depends=_ext_files(),
    )


def _codecs() -> Extension:
    """cykafka._codecs: the codecs from input to message bytes (Arrow to JSON and
    Avro, lines, CSV).  They need no librdkafka, so they build and load apart from
    the producer core."""
    return Extension(
        "cykafka._codecs",
        sources=["ext/codecs.pyx", *CODECS_C],
        include_dirs=["ext", "ext/includes"],
        # Hidden: the C functions are the module's own, called directly (not through
        # the PLT) and never clashing with another library's names.
        extra_compile_args=["-O2", "-Wno-unused-function", "-fvisibility=hidden"],
        depends=_ext_files(),
    )


def _pxd_dir() -> str:
    """Cython finds a module's own declarations by its package path
    (cykafka/_native.pxd in an include directory); they live in ext/_native.pxd,
    so a copy under build/ serves as that path."""
    out = os.path.join("build", "cython-include")
    os.makedirs(os.path.join(out, "cykafka"), exist_ok=True)
    with open(os.path.join("ext", "_native.pxd")) as src:
        text = src.read()
    dest = os.path.join(out, "cykafka", "_native.pxd")
    if not os.path.exists(dest) or open(dest).read() != text:
        with open(dest, "w") as f:
            f.write(text)
    return out


setup(
    ext_modules=cythonize(
        [_extension(), _codecs()],
        language_level=3,
        compiler_directives={"embedsignature": True, "binding": False},
        include_path=["ext", "ext/includes", _pxd_dir()],
    ),
)

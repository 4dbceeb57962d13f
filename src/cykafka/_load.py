"""Import the compiled extension, finding the librdkafka it links against.

The extension links the librdkafka inside the ``confluent-kafka`` wheel (see
setup.py) and finds it through an ``$ORIGIN``-relative rpath when both
packages sit in the same site-packages.  When they do not (an in-place build,
a ``--target`` install), load that library by path first: the dynamic linker
then resolves the extension's dependency to the copy already loaded.
"""

from __future__ import annotations

import os
from types import ModuleType


def _preload_wheel_librdkafka() -> str | None:
    # Imported here: only this fallback needs them, and every `cykafka` command pays
    # for what the package imports (ctypes and glob: about 5 ms).
    import ctypes
    import glob
    from importlib.util import find_spec

    spec = find_spec("confluent_kafka")
    if spec is None or not spec.submodule_search_locations:
        return None
    site = os.path.dirname(next(iter(spec.submodule_search_locations)))
    libs = glob.glob(os.path.join(site, "confluent_kafka.libs", "librdkafka*.so*"))
    if not libs:
        return None
    ctypes.CDLL(libs[0], mode=ctypes.RTLD_GLOBAL)
    return libs[0]


def load_native() -> ModuleType:
    try:
        from . import _native
    except ImportError as exc:
        if "librdkafka" not in str(exc):
            raise
        if _preload_wheel_librdkafka() is None:
            raise ImportError(
                f"{exc}; cykafka needs the librdkafka bundled in confluent-kafka==2.16.1 "
                f"(pip install confluent-kafka==2.16.1)"
            ) from exc
        from . import _native
    return _native

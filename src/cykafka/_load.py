"""Find the librdkafka the compiled extension links against, whoever imports it first.

The extension links the librdkafka inside the ``confluent-kafka`` wheel (see
setup.py) and finds it through an ``$ORIGIN``-relative rpath when both
packages sit in the same site-packages.  When they do not (an in-place build,
a ``--target`` install), that library is loaded by path first: the dynamic
linker then resolves the extension's dependency to the copy already loaded.

The package imports the extension only when something needs it (its face is
lazy, see ``cykafka/__init__.py``), and any module may be the first to import
``cykafka._native``; so the fallback sits in the import system, as a finder for
that one module, installed when the package is imported.
"""

from __future__ import annotations

import importlib
import os
import sys
from importlib.abc import Loader, MetaPathFinder
from importlib.machinery import ModuleSpec, PathFinder
from types import ModuleType
from typing import Optional, Sequence

_NATIVE = "cykafka._native"


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


class _PreloadingLoader(Loader):
    """The extension's own loader, with the librdkafka fallback around its dlopen."""

    def __init__(self, inner: Loader) -> None:
        self.inner = inner

    def create_module(self, spec: ModuleSpec) -> Optional[ModuleType]:
        try:
            return self.inner.create_module(spec)
        except ImportError as exc:
            if "librdkafka" not in str(exc):
                raise
            if _preload_wheel_librdkafka() is None:
                raise ImportError(
                    f"{exc}; cykafka needs the librdkafka bundled in confluent-kafka==2.16.1 "
                    f"(pip install confluent-kafka==2.16.1)"
                ) from exc
            return self.inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.inner.exec_module(module)


class _NativeFinder(MetaPathFinder):
    def find_spec(
        self,
        fullname: str,
        path: Optional[Sequence[str]],
        target: Optional[ModuleType] = None,
    ) -> Optional[ModuleSpec]:
        if fullname != _NATIVE:
            return None
        spec = PathFinder.find_spec(fullname, path, target)
        if spec is not None and spec.loader is not None:
            spec.loader = _PreloadingLoader(spec.loader)
        return spec


def install_native_finder() -> None:
    """Put the finder first on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, _NativeFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _NativeFinder())


def load_native() -> ModuleType:
    """The compiled extension, imported (through the finder)."""
    install_native_finder()
    return importlib.import_module(_NATIVE)

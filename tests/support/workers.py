"""The suite's tests in groups on pytest-xdist's workers (``./run tests``: ``-n 3 --dist
loadgroup``): what one worker must run together (``tests/conftest.py`` says which), every
other test on whichever worker is free.

xdist's own ``xdist_group`` marker does not work with pytest 9: xdist renames the
grouped items through ``item._nodeid``, which pytest 9 no longer reads (a node's id is
``item._id``), and every test is then scheduled alone.  So the workers say the groups
themselves: the first worker writes each grouped test's group into a file the
controller named (:data:`GROUPS_ENV`) before it reports its collection, and the
controller's scheduler (:class:`GroupScheduling`, xdist's ``LoadScopeScheduling`` with
these groups as its scopes) reads it when it first schedules, once every worker has
collected the same tests.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

#: The file the first worker writes the groups to (set by the controller, inherited by
#: the workers it starts).
GROUPS_ENV = "CYKAFKA_TEST_GROUPS_FILE"


def name_groups_file() -> Path:
    """In the controller, before it starts the workers: a new file's path, in the
    environment they inherit."""
    path = Path(tempfile.mkdtemp(prefix="cykafka-test-groups-")) / "groups.json"
    os.environ[GROUPS_ENV] = str(path)
    return path


def write_groups(groups: Mapping[str, str]) -> None:
    """In the first worker: each grouped test's node id and its group, whole or not at
    all (renamed into place)."""
    path = Path(os.environ[GROUPS_ENV])
    part = path.with_suffix(".part")
    part.write_text(json.dumps(dict(groups)))
    part.replace(path)


def remove_groups_file() -> None:
    path = os.environ.pop(GROUPS_ENV, None)
    if path:
        for p in (Path(path), Path(path).parent):
            try:
                p.unlink() if p.is_file() else p.rmdir()
            except OSError:
                pass


def scheduler(config: Any, log: Any) -> Any:
    """xdist's scope scheduling with the workers' groups as scopes: a group is one unit
    of work, sent to one worker whole; a test of no group is a unit of its own."""
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):  # type: ignore[misc]
        _groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self._groups is None:
                # Read once every worker has collected: the first wrote it before it
                # said so.
                self._groups = json.loads(Path(os.environ[GROUPS_ENV]).read_text())
            return self._groups.get(nodeid, nodeid)

    return GroupScheduling(config, log)


def grouped(items: Iterable[Any], group_of: Any) -> dict[str, str]:
    """``{node id: group}`` of the items ``group_of`` gives a group."""
    return {item.nodeid: g for item in items if (g := group_of(item)) is not None}

# stdlib.pxi -- the Python modules the .pxi files of _native use, imported once
# here, included first by _native.pyx: so no .pxi relies on another having
# imported a module, and include order does not matter.
#
# Module-level imports only; a module needed by one rarely called function (and
# slow to import, or optional) is imported inside that function instead.

import atexit as _atexit
import collections.abc as _abc
import concurrent.futures as _cf
import datetime as _datetime
import enum as _enum
import logging as _logging
import operator as _operator
import os as _os
import re as _re
import signal as _signal
import sys as _sys
import threading as _threading
import warnings as _warnings
import weakref as _weakref
from collections import deque as _deque
from collections import namedtuple as _namedtuple
from time import monotonic as _monotonic

# The package's logger, which several .pxi log to.
_logger = _logging.getLogger("cykafka")

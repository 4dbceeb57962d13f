# codecs_stdlib.pxi -- the Python modules the .pxi files of _codecs use, imported
# once here, included first by codecs.pyx (see stdlib.pxi for _native).

import json as _json

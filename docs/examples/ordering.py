"""max.in.flight=1 without idempotence reorders on librdkafka; the 'ordered' preset does not."""

import time
import warnings

from cykafka.config import ConfigWarning
from cykafka.testing import MockCluster, verify_ordering

# The Java-style config is what this example is about; its warning says the same.
warnings.simplefilter("ignore", ConfigWarning)

every_7th = (["NO_ERROR"] * 6 + ["NOT_ENOUGH_REPLICAS"]) * 150
java_style = {"acks": "all", "max.in.flight.requests.per.connection": 1, "batch.num.messages": 10}
with MockCluster(num_brokers=3) as mock:
    for preset in (None, "ordered"):
        report = verify_ordering(
            java_style,
            mock,
            messages=2000,
            preset=preset,
            faults=[(0, lambda m: m.push_request_errors("Produce", every_7th))]
            + [(n, lambda m: time.sleep(0.005)) for n in range(10, 2000, 10)],
        )
        print(
            f"preset={preset}:",
            report.inversions,
            "inversions,",
            report.duplicates,
            "duplicates,",
            report.losses,
            "lost",
        )

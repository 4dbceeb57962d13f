# Sourced by the example scripts that need a broker which outlives one command: starts
# `cykafka broker` (the embedded Tansu) on a free port in the background, exports
# BOOTSTRAP, and stops it when the script exits.
port=$(python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cykafka broker --port "$port" "$@" > broker.log 2>&1 &
broker_pid=$!
trap 'kill "$broker_pid" 2>/dev/null; wait "$broker_pid" 2>/dev/null' EXIT
export BOOTSTRAP="127.0.0.1:$port"
python - "$BOOTSTRAP" <<'PY'
import sys, time
from confluent_kafka.admin import AdminClient
deadline = time.monotonic() + 30
while True:
    try:
        md = AdminClient({"bootstrap.servers": sys.argv[1], "log_level": 0}).list_topics(timeout=2)
        if md.brokers:
            break
    except Exception:
        pass
    if time.monotonic() > deadline:
        sys.exit("broker did not start")
    time.sleep(0.2)
PY

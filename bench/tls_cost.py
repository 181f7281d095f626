"""Benchmark: what TLS costs on the secured broker, against the same broker's SASL_PLAINTEXT listener.

Needs a secured broker started with a clear listener beside the TLS one (measuring only; never on a floor)::

    KAFKA_DATA_DIR=var/kafka-tls KAFKA_PORT=29392 KAFKA_CONTROLLER_PORT=29393 KAFKA_CLEAR_PORT=29394 \\
      bash infra/kafka/kafka.sh start --secure
    .venv/bin/python bench/tls_cost.py --data-dir var/kafka-tls [--pytest tests/system/test_broker_smoke.py]

Both legs connect as the super user ``admin``, in the same process, alternating (TLS, clear, TLS, clear, ...),
``--repeats`` times each:

1. **records**: one idempotent producer (acks=all) sends ``--records`` records of ``--size`` bytes in batches of
   ``--batch`` (``send`` then ``flush``), then one consumer reads them back from offset zero; seconds for both,
   including each client's connect (the TLS handshakes).
2. **pytest** (with ``--pytest FILE``): the system test file run as a subprocess against each listener, the way
   ``.ci/run``'s secured run runs it (``KAFKA_SECURITY_PROTOCOL``, ``KAFKA_SSL_CAFILE``, the admin's password
   file), wall seconds.

Prints each run, the medians and the ratio TLS / clear; last line
``tls_cost: records_ratio=<r> [pytest_ratio=<p>]``.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import re
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition  # noqa: E402
from aiokafka.admin import AIOKafkaAdminClient, NewTopic  # noqa: E402

from services.runtime.settings import Settings  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
logging.getLogger("aiokafka").setLevel(logging.ERROR)  # a deleted topic's metadata warnings


def legs(data_dir: Path) -> dict[str, tuple[Settings, dict[str, str]]]:
    """``{"tls": ..., "clear": ...}``: the admin's settings and the environment of a pytest run, per listener."""
    props = (data_dir / "server.properties").read_text()
    tls_port = re.findall(r"^advertised\.listeners=SASL_SSL://127\.0\.0\.1:(\d+)", props, re.M)
    clear_port = re.findall(r"^advertised\.listeners=.*CLEAR://127\.0\.0\.1:(\d+)", props, re.M)
    if not tls_port or not clear_port:
        sys.exit(f"{data_dir}: not a secured kafka.sh broker with KAFKA_CLEAR_PORT (see this file's docstring)")
    password_file = data_dir / "passwords" / "admin"
    password = password_file.read_text().strip()
    cafile = str(data_dir / "tls" / "ca.pem")
    tls = Settings(bootstrap_servers=f"127.0.0.1:{tls_port[0]}", security_protocol="SSL", ssl_cafile=cafile)
    clear = Settings(bootstrap_servers=f"127.0.0.1:{clear_port[-1]}")
    base = {"KAFKA_SASL_USERNAME": "admin", "KAFKA_SASL_PASSWORD_FILE": str(password_file),
            "KAFKA_SASL_MECHANISM": "SCRAM-SHA-512"}
    return {
        "tls": (tls.as_principal("admin", password), {**base, "KAFKA_BOOTSTRAP_SERVERS": tls.bootstrap_servers,
                                                      "KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
                                                      "KAFKA_SSL_CAFILE": cafile}),
        "clear": (clear.as_principal("admin", password), {**base, "KAFKA_BOOTSTRAP_SERVERS": clear.bootstrap_servers,
                                                          "KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT"}),
    }


async def records_run(settings: Settings, records: int, size: int, batch: int) -> float:
    """Seconds to write ``records`` records of ``size`` bytes to a fresh topic and read them back."""
    topic = f"tlscost.{uuid.uuid4().hex[:10]}"
    admin = AIOKafkaAdminClient(**settings.client_options())
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, 1, 1)])
    finally:
        await admin.close()
    value = os.urandom(size // 2).hex().encode()[:size]
    t0 = time.perf_counter()
    producer = AIOKafkaProducer(**settings.client_options(), acks="all", enable_idempotence=True, linger_ms=5)
    await producer.start()
    try:
        for i in range(0, records, batch):
            for _ in range(min(batch, records - i)):
                await producer.send(topic, value, key=b"T1")
            await producer.flush()
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(**settings.client_options(), enable_auto_commit=False)
    await consumer.start()
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        await consumer.seek_to_beginning(tp)
        got = 0
        while got < records:
            for recs in (await consumer.getmany(tp, timeout_ms=1000)).values():
                got += len(recs)
    finally:
        await consumer.stop()
    took = time.perf_counter() - t0
    admin = AIOKafkaAdminClient(**settings.client_options())
    await admin.start()
    try:
        await admin.delete_topics([topic])
    finally:
        await admin.close()
    return took


def pytest_run(path: str, env: dict[str, str]) -> float:
    """Wall seconds of ``pytest -q path`` against the listener ``env`` names (fails loudly if the tests fail)."""
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("KAFKA_", "CROUPIER_SECURE_KAFKA"))}
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", path],
                          cwd=REPO, env={**keep, **env, "CROUPIER_REQUIRE_KAFKA": "1"}, capture_output=True, text=True)
    took = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"pytest {path} failed over {env['KAFKA_SECURITY_PROTOCOL']}:\n{proc.stdout[-3000:]}")
    return took


def summary(name: str, runs: dict[str, list[float]]) -> float:
    tls, clear = statistics.median(runs["tls"]), statistics.median(runs["clear"])
    print(f"{name}: median TLS {tls:.3f} s, clear {clear:.3f} s, TLS/clear {tls / clear:.3f} "
          f"(runs TLS {[round(x, 3) for x in runs['tls']]}, clear {[round(x, 3) for x in runs['clear']]})")
    return tls / clear


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", type=Path, required=True, help="the secured broker's KAFKA_DATA_DIR")
    ap.add_argument("--records", type=int, default=5000)
    ap.add_argument("--size", type=int, default=600, help="bytes a record (an event is a few hundred)")
    ap.add_argument("--batch", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--pytest", help="a system test file to time over each listener too")
    ap.add_argument("--pytest-repeats", type=int, default=3)
    args = ap.parse_args()
    both = legs(args.data_dir.resolve())
    runs: dict[str, list[float]] = {"tls": [], "clear": []}
    for _ in range(args.repeats):
        for leg in ("tls", "clear"):
            runs[leg].append(asyncio.run(records_run(both[leg][0], args.records, args.size, args.batch)))
    line = f"tls_cost: records_ratio={summary(f'{args.records} records of {args.size} B', runs):.3f}"
    if args.pytest:
        pruns: dict[str, list[float]] = {"tls": [], "clear": []}
        for _ in range(args.pytest_repeats):
            for leg in ("tls", "clear"):
                pruns[leg].append(pytest_run(args.pytest, both[leg][1]))
        line += f" pytest_ratio={summary(f'pytest {args.pytest}', pruns):.3f}"
    print(line)


if __name__ == "__main__":
    main()

"""Add the ACLs of :mod:`acls` for one topic prefix in a single CreateAcls request (``kafka.sh acl``).

    <venv python> infra/kafka/acl_apply.py BOOTSTRAP CAFILE PASSWORD_FILE PREFIX GROUPS

connects to ``BOOTSTRAP`` (the secured broker's SASL_SSL listener) as the super user ``admin`` (SCRAM-SHA-512,
password read from ``PASSWORD_FILE``, the broker's certificate verified against ``CAFILE``) and creates every
binding of :func:`acls.bindings` at once. Exit 0 when the broker accepted every binding (adding one that
exists already is accepted: the call is idempotent); 2 with the reason on stderr otherwise.

Why: ``kafka.sh`` adds the same ACLs with Kafka's ``AclCommand``, one JVM per call and about 25 calls for a
prefix (20-50 s on a shared 2-core machine, minutes when it is loaded); one request takes well under a second.
``kafka.sh`` uses this script when a Python with aiokafka is at hand (the project's ``.venv``) and falls back
to ``AclCommand`` otherwise or when this script fails.

aiokafka 0.14 knows CreateAcls v0-v1 only, which Kafka 4 no longer accepts (KIP-896); the request and
response below are CreateAcls v3 as the Kafka protocol defines it (``CreateAclsRequest.json``: v2 is the first
flexible version, v3 adds nothing to the wire format), built from aiokafka's own protocol types.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from aiokafka.client import AIOKafkaClient  # noqa: E402
from aiokafka.helpers import create_ssl_context  # noqa: E402
from aiokafka.protocol.api import Request, RequestStruct, Response  # noqa: E402
from aiokafka.protocol.types import CompactArray, CompactString, Int8, Int16, Int32, Schema, TaggedFields  # noqa: E402

import acls  # noqa: E402

#: CreateAcls (Kafka protocol api key 30)
API_KEY = 30


class CreateAclsResponseV3(Response):
    """CreateAcls v3 response: one result (error code, message) per creation, in request order."""

    API_KEY = API_KEY
    API_VERSION = 3
    SCHEMA = Schema(
        ("throttle_time_ms", Int32),
        ("results", CompactArray(("error_code", Int16), ("error_message", CompactString("utf-8")),
                                 ("tags", TaggedFields))),
        ("tags", TaggedFields),
    )


class CreateAclsRequestV3(RequestStruct):
    """CreateAcls v3 request: the bindings (resource type, name, pattern type, principal, host, operation,
    permission type, as Kafka's codes)."""

    FLEXIBLE_VERSION = True
    API_KEY = API_KEY
    API_VERSION = 3
    RESPONSE_TYPE = CreateAclsResponseV3
    SCHEMA = Schema(
        ("creations", CompactArray(
            ("resource_type", Int8), ("resource_name", CompactString("utf-8")), ("resource_pattern_type", Int8),
            ("principal", CompactString("utf-8")), ("host", CompactString("utf-8")), ("operation", Int8),
            ("permission_type", Int8), ("tags", TaggedFields))),
        ("tags", TaggedFields),
    )


class CreateAcls(Request[CreateAclsRequestV3]):
    """The CreateAcls request of ``bindings`` (:func:`acls.bindings` tuples); v3 only (Kafka 4 brokers)."""

    API_KEY = API_KEY

    def __init__(self, bindings: list[tuple[int, str, int, str, str, int, int]]) -> None:
        self._bindings = bindings

    def build(self, request_struct_class: type[CreateAclsRequestV3]) -> CreateAclsRequestV3:
        return request_struct_class([(*b, {}) for b in self._bindings], {})


async def apply(bootstrap: str, cafile: str, password: str, prefix: str, groups: str) -> list[str]:
    """Creates the ACLs of ``prefix`` on the broker; returns the errors ("<binding>: <code> <message>"), empty
    when every binding was accepted. Raises aiokafka's errors when the broker cannot be reached."""
    bindings = acls.bindings(prefix, groups)
    client = AIOKafkaClient(bootstrap_servers=bootstrap, security_protocol="SASL_SSL",
                            ssl_context=create_ssl_context(cafile=cafile), sasl_mechanism="SCRAM-SHA-512",
                            sasl_plain_username=acls.ADMIN, sasl_plain_password=password,
                            request_timeout_ms=30_000, client_id="kafka.sh-acl")
    try:
        await client.bootstrap()
        node = client.get_random_node()
        response = await client.send(node, CreateAcls(bindings))
    finally:
        await client.close()
    results = list(response.results)
    if len(results) != len(bindings):
        return [f"the broker answered {len(results)} results for {len(bindings)} bindings"]
    return [f"{b}: error {code} {message or ''}".rstrip()
            for b, (code, message, _tags) in zip(bindings, results) if code != 0]


def main(argv: list[str]) -> int:
    if len(argv) != 5:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    bootstrap, cafile, password_file, prefix, groups = argv
    password = Path(password_file).read_text().strip()
    try:
        errors = asyncio.run(apply(bootstrap, cafile, password, prefix, groups))
    except Exception as e:  # noqa: BLE001 - kafka.sh falls back to AclCommand on any failure
        print(f"acl_apply: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    for line in errors:
        print(f"acl_apply: {line}", file=sys.stderr)
    if not errors:
        print(f"acl_apply: {len(acls.bindings(prefix, groups))} ACL bindings in place for prefix '{prefix}'")
    return 0 if not errors else 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

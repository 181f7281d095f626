"""``croupier demo``: a whole floor dealt on this machine (or against running services), its dashboard, summary
and audit.

Registered on the app by :mod:`croupier.cli`.
"""

from typing import Annotated, Optional

import typer

from croupier.cli_common import _check_port, _settings, fail, kafka_detail, out
from croupier.group import is_closed_pipe


def demo(
    tables: Annotated[int, typer.Option(help="Tables on the floor (1-50).")] = 8,
    shoes: Annotated[int, typer.Option(help="8-deck shoes each table deals (1-10).")] = 1,
    rounds: Annotated[int, typer.Option(help="Close each shoe after this many rounds (0: deal it to the "
                                             "cutting card).")] = 0,
    speed: Annotated[float, typer.Option(help="At most this many rounds per second per table (0: as fast as "
                                              "the services go).")] = 0.0,
    bootstrap: Annotated[Optional[str], typer.Option(help="Kafka bootstrap servers (default: "
                                                          "$KAFKA_BOOTSTRAP_SERVERS; none: start the "
                                                          "project's local broker and stop it at the end; with "
                                                          "--no-services 127.0.0.1:19092).")
                         ] = None,
    seed: Annotated[Optional[int], typer.Option(help="Seed of the simulated players (the shoes are always "
                                                     "shuffled by the shoe service's CSPRNG).")] = None,
    prefix: Annotated[Optional[str], typer.Option(help="Topic prefix (default: a new demo-<time>-<id>.).")] = None,
    run_id: Annotated[Optional[str], typer.Option(
        "--run-id", help="This run's namespace of command, shoe and round ids (1-32 letters, digits, . _ -; "
        "default: a new random one), so the same tables can be dealt again on the same prefix.")] = None,
    services_: Annotated[bool, typer.Option("--services/--no-services",
                                            help="Run the five services here (default), or only the floor, "
                                                 "against services already running (croupier serve --prefix).")
                         ] = True,
    timeout: Annotated[float, typer.Option(help="With --no-services: seconds to wait for the services to "
                                                "answer each table's first command.")] = 30.0,
    floor: Annotated[str, typer.Option(help="The games the tables deal: standard (punto banco, every third "
                                            "table no-vig dragon 7) or mixed (punto banco with a curator, "
                                            "no-vig dragon 7, casino night and chemin de fer side by "
                                            "side).")] = "standard",
    pit_port: Annotated[int, typer.Option(help="Serve the floor's pages (read-only) on 127.0.0.1 at this port "
                                               "while the demo runs, the next free one if taken (0: not at "
                                               "all); tokens in var/<prefix>pit-tokens.")] = 8080,
) -> None:
    """A whole floor: the five services, dealers dealing real shoes to the cutting card, players with
    bankrolls betting every wager, an advantage player for surveillance to find; a live dashboard, then a
    summary and a full audit of the log."""
    import asyncio
    import os

    from croupier.demo import FLOORS, DemoError, run_demo
    from croupier.replay import Unreachable
    from croupier.topics import NoSuchPrefix
    from services.floor.ids import BadRunId, check_run_id

    if not 1 <= tables <= 50:
        raise fail(f"--tables must be 1..50, got {tables}")
    if not 1 <= shoes <= 10:
        raise fail(f"--shoes must be 1..10, got {shoes}")
    if rounds < 0:
        raise fail(f"--rounds must be 0 or more, got {rounds}")
    if speed < 0:
        raise fail(f"--speed must be 0 or more, got {speed}")
    if timeout <= 0:
        raise fail(f"--timeout must be more than 0 seconds, got {timeout:g}")
    if floor not in FLOORS:
        raise fail(f"--floor must be one of {', '.join(FLOORS)}, got {floor!r}")
    if pit_port:
        _check_port(pit_port)
    pre = _settings(None, prefix).topic_prefix if prefix is not None else None
    if not services_ and not pre:
        raise fail("--no-services needs the --prefix the running services use")
    try:
        run = check_run_id(run_id) if run_id is not None else None
    except BadRunId as e:
        raise fail(f"--run-id: {e}") from None
    boot = bootstrap or os.environ.get("KAFKA_BOOTSTRAP_SERVERS") or None
    if boot is None and not services_:  # services running elsewhere have a broker already: never start one
        boot = _settings(None, None).bootstrap_servers
    try:
        code = asyncio.run(run_demo(tables, shoes, speed, boot, out, seed, prefix=pre, with_services=services_,
                                    run_id=run, rounds=rounds or None, answer_timeout=timeout, floor=floor,
                                    pit_port=pit_port or None))
    except KeyboardInterrupt:
        raise fail("interrupted", code=130) from None
    except NoSuchPrefix as e:
        raise fail(str(e)) from None
    except (DemoError, Unreachable) as e:
        raise fail(str(e), code=1) from None
    except Exception as e:  # a broker that stopped answering, and the like: one line
        if is_closed_pipe(e):
            raise
        import dataclasses

        detail = (kafka_detail(dataclasses.replace(_settings(None, None), bootstrap_servers=boot), e) if boot
                  else f"{type(e).__name__}: {e}")
        raise fail(f"cannot run the demo against Kafka at {boot or 'the local broker'}: {detail}", code=1) from None
    raise typer.Exit(code)


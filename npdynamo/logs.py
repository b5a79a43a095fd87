"""Logging switches: ``NPDYNAMO_LOGS=graph_breaks,recompiles,...`` or ``npdynamo.set_logs(...)``.

Every stage logs through the standard ``logging`` module on a logger named ``npdynamo.<topic>``;
a topic switched on gets a stderr handler at INFO. Topics: graph_breaks, recompiles, guards,
graph_code, bytecode, output_code, aot_graphs, dynamic, tuning, tiers.
"""

from __future__ import annotations

import logging
import sys

from npdynamo import config
from npdynamo.errors import InvalidArgument, user_location

TOPICS = (
    "graph_breaks",
    "recompiles",
    "guards",
    "graph_code",
    "bytecode",
    "output_code",
    "aot_graphs",
    "dynamic",
    "tuning",
    "tiers",
)
_handler: logging.Handler | None = None


def get_logger(topic: str) -> logging.Logger:
    """The logger of one topic (``npdynamo.<topic>``)."""
    if topic not in TOPICS:
        raise ValueError(f"unknown npdynamo log topic {topic!r}; topics: {', '.join(TOPICS)}")
    return logging.getLogger(f"npdynamo.{topic}")


def set_logs(*topics: str, **switches: bool) -> None:
    """Switch topics on (``set_logs("graph_breaks")`` or ``set_logs(recompiles=True)``); topics
    not named are switched off. ``set_logs()`` switches everything off."""
    global _handler
    unknown = [t for t in (*topics, *switches) if t not in TOPICS]
    if unknown:
        raise InvalidArgument(
            f"{user_location()}: unknown log topic(s) {', '.join(map(repr, unknown))}; the "
            f"topics are {', '.join(TOPICS)}"
        )
    wanted = {t for t in topics} | {t for t, on in switches.items() if on}
    for topic in TOPICS:
        logger = get_logger(topic)
        if _handler is not None and _handler in logger.handlers:
            logger.removeHandler(_handler)
        logger.setLevel(logging.INFO if topic in wanted else logging.NOTSET)
    if wanted:
        if _handler is None:
            _handler = logging.StreamHandler(sys.stderr)
            _handler.setFormatter(logging.Formatter("[npdynamo.%(topic)s] %(message)s"))
            _handler.addFilter(_add_topic)
        for topic in wanted:
            get_logger(topic).addHandler(_handler)


def _add_topic(record: logging.LogRecord) -> bool:
    record.topic = record.name.removeprefix("npdynamo.")
    return True


def enabled(topic: str) -> bool:
    return get_logger(topic).isEnabledFor(logging.INFO)


def _from_environment() -> None:
    value = config.environment("NPDYNAMO_LOGS")
    topics = [t.strip() for t in value.split(",") if t.strip()]
    unknown = [t for t in topics if t not in TOPICS]
    if unknown:
        print(
            f"npdynamo: ignoring unknown NPDYNAMO_LOGS topics {unknown}; known: {TOPICS}",
            file=sys.stderr,
        )
    if topics:
        set_logs(*[t for t in topics if t in TOPICS])


_from_environment()

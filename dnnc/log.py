"""dnnc's logger, and messages that should be said once per process."""

from __future__ import annotations

import logging

from dnnc import knobs

logger = logging.getLogger("dnnc")
_said: set[str] = set()


def configure() -> None:
    logger.setLevel(knobs.get().log_level.upper())


def say_once(message: str, level: int = logging.WARNING) -> None:
    if message not in _said:
        _said.add(message)
        logger.log(level, message)

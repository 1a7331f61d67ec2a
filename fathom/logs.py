"""Logging filters named in settings.LOGGING."""

import logging


class HousekeepingQuiet(logging.Filter):
    """Drops the INFO lines Celery writes for each run of a housekeeping task (`maintenance.*`): beat's
    "Sending due task" and the worker's "received" and "succeeded". The outbox relay alone runs every
    3 s, and its lines buried `fathom up`'s console; a housekeeping task's warnings and errors still show."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno > logging.INFO or "maintenance." not in record.getMessage()

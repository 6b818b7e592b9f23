"""The one way people read dates: ``when`` (a moment) and ``day``.

A moment reads "1 December 2027, 14:05 UTC" and a day "1 December 2027", everywhere a
person reads a date (pages, e-mails, plain-words strings). Machine formats (ISO 8601)
belong only in the API, the export and ``<time datetime="…">`` attributes.

A leaf like ``ledger.choices``: it imports nothing of the project, so the presenters, the
actions that write reasons people read (``expiry``) and the template filters
(``ledger.templatetags.dates``) use the same two functions.
"""

from datetime import date, datetime

from django.utils import timezone
from django.utils.dateformat import format as format_date

WHEN_FORMAT = "j F Y, H:i T"
DAY_FORMAT = "j F Y"


def _local(value: datetime) -> datetime:
    # Naive datetimes (never stored with USE_TZ, but possible in a test) are shown as
    # they are rather than guessed into a zone.
    return timezone.localtime(value) if timezone.is_aware(value) else value


def when(value: datetime | None) -> str:
    """A moment in the viewer's time zone, with the zone named."""
    if value is None or value == "":
        return ""
    return format_date(_local(value), WHEN_FORMAT)


def day(value: date | datetime | None) -> str:
    """A calendar day; a datetime is first taken to the local zone, so the day is right."""
    if value is None or value == "":
        return ""
    if isinstance(value, datetime):
        value = _local(value)
    return format_date(value, DAY_FORMAT)

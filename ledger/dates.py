"""The one way people read dates: ``when`` (a moment) and ``day``.

A moment reads "1 December 2027, 14:05 UTC" and a day "1 December 2027", everywhere a
person reads a date (pages, e-mails, plain-words strings). Machine formats (ISO 8601)
belong only in the API, the export and ``<time datetime="…">`` attributes.

A leaf like ``ledger.choices``: it imports nothing of the project, so the presenters, the
actions that write reasons people read (``expiry``) and the template filters
(``ledger.templatetags.dates``) use the same two functions.
"""

from datetime import date, datetime, time, timedelta

from django.utils import timezone
from django.utils.dateformat import format as format_date
from django.utils.dates import MONTHS

WHEN_FORMAT = "j F Y, H:i T"


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
    """A calendar day; a datetime is first taken to the local zone, so the day is right.

    Django's "j F Y" written out, as its formatting says it (the month's name in the
    active language): a page of cards says hundreds of days, and parsing the format for
    each was a tenth of the subject page's time."""
    if value is None or value == "":
        return ""
    if isinstance(value, datetime):
        value = _local(value)
    return f"{value.day} {MONTHS[value.month]} {value.year:04d}"


# The days people may ask about: wide enough for any record, narrow enough that a day's
# window (its start, the next day's start, a day either side) is always a real moment.
FIRST_YEAR, LAST_YEAR = 1900, 9998


def askable(value: date) -> bool:
    """Whether a typed day or moment is one the pages can look around."""
    return FIRST_YEAR <= value.year <= LAST_YEAR


def day_window(first: date | None, last: date | None) -> tuple[datetime | None, datetime | None]:
    """From the start of ``first`` to the start of the day after ``last``, in local time,
    so both days are included; either end may be left open."""

    def midnight(value: date) -> datetime:
        return timezone.make_aware(datetime.combine(value, time.min))

    return (
        midnight(first) if first else None,
        midnight(last + timedelta(days=1)) if last else None,
    )

"""``{{ value|when }}`` and ``{{ value|day }}``: the dates of ``ledger.dates`` in templates;
``{{ text|when_iso }}`` for a moment kept as ISO 8601 text in JSON (a webhook attempt's)."""

from datetime import datetime

from django import template

from ledger import dates

register = template.Library()
register.filter("when", dates.when)
register.filter("day", dates.day)


@register.filter
def when_iso(text: str) -> str:
    return dates.when(datetime.fromisoformat(text))

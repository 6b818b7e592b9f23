"""``{{ value|when }}`` and ``{{ value|day }}``: the dates of ``ledger.dates`` in templates."""

from django import template

from ledger import dates

register = template.Library()
register.filter("when", dates.when)
register.filter("day", dates.day)

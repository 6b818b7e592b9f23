"""``{{ problem.check|check_title }}``: a snapshot check's name as people read it."""

from django import template

from ledger.rules.snapshots.checks import CHECK_TITLES

register = template.Library()


@register.filter
def check_title(check: str) -> str:
    return CHECK_TITLES.get(check, check)

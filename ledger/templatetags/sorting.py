"""``{% sort_header sort "opened" "Opened" %}``: a staff table's column header that sorts the
list by its column (``ledger.views.sorting.Sort``), saying how it is sorted now."""

from typing import Any

from django import template
from django.utils.html import format_html

register = template.Library()

ARROWS = {"ascending": "▲", "descending": "▼"}


@register.simple_tag
def sort_header(sort: Any, name: str, label: str) -> str:
    aria = sort.aria(name)
    if not aria:
        return format_html('<th scope="col"><a href="?{}">{}</a></th>', sort.link(name), label)
    return format_html(
        '<th scope="col" aria-sort="{}"><a href="?{}">{} '
        '<span aria-hidden="true">{}</span></a></th>',
        aria,
        sort.link(name),
        label,
        ARROWS[aria],
    )

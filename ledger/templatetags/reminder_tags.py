"""The unread-reminder count shown in the navigation."""

from typing import Any

from django import template

from ledger.models import Reminder

register = template.Library()


@register.simple_tag(takes_context=True)
def unread_reminders(context: dict[str, Any]) -> int:
    request = context.get("request")
    if request is None or not request.user.is_authenticated:
        return 0
    return Reminder.objects.for_person(request.user).unread().count()

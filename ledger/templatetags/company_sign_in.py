"""``{% company_sign_in %}``: whether the sign-in page offers the identity provider."""

from __future__ import annotations

from django import template
from django.conf import settings

register = template.Library()


@register.simple_tag
def company_sign_in() -> bool:
    return bool(settings.MEMORYADMIN_OIDC)

"""``“{{ statement }}”{{ statement|full_stop }}``: end a sentence that ends by quoting a
statement, without doubling the statement's own full stop."""

from django import template

from ledger.words import full_stop

register = template.Library()
register.filter("full_stop", full_stop)

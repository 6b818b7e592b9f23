"""Staff accounts at the company's identity provider (OpenID Connect), linked to people."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class SignInIdentity(models.Model):
    """A person's account at an identity provider: the provider (its issuer URL) and the
    provider's never-reused id for them (the ``sub`` claim).

    A sign-in there is matched to a person by these two alone, never by an e-mail address
    or a username: at many providers a user can set those, and one chosen to look like an
    admin's would otherwise be that admin here. Written by ``ledger.actions.staff_sign_in``
    with a ``PersonChange`` beside it.
    """

    person = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sign_in_identity"
    )
    issuer = models.CharField(max_length=255)
    subject = models.CharField(max_length=255)
    linked_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["issuer", "subject"], name="one_person_per_identity")
        ]

    def __str__(self) -> str:
        return f"{self.issuer} {self.subject}"

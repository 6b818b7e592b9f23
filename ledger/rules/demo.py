"""The demo's published sign-ins (``manage.py seed_demo``): a key and a password the README
prints, so everyone has them. Known here so that a deployment refuses them: the demo loads
only with DEBUG on, the API takes the key only with DEBUG on (``actions.agents.use_key``),
and ``check --deploy`` fails while either is still there (``ledger.checks``).
"""

from __future__ import annotations

import hmac

DEMO_KEY = "ma_demo00000000_local-demo-key-do-not-use-in-production"
DEMO_PASSWORD = "demo-password-1"
# The people seed_demo makes, each with DEMO_PASSWORD.
DEMO_USERNAMES = ("dana", "sam", "alex")

DEMO_KEY_REFUSED = (
    "This is the demo's published API key (printed in the README): it works only with "
    "DEBUG on. Give the agent a key of its own (manage.py create_agent_key)."
)
NEEDS_DEBUG = (
    "seed_demo loads the demo's published sign-ins (password 'demo-password-1', a key the "
    "README prints) and runs only with DEBUG on: DEBUG=1 manage.py seed_demo, on a database "
    "of your own machine. Nothing was loaded."
)


def is_demo_key(key: str) -> bool:
    """Whether ``key`` is the demo's published key (compared in constant time, like any key)."""
    return hmac.compare_digest(key.encode(), DEMO_KEY.encode())

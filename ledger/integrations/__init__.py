"""memoryadmin behind the interfaces agent frameworks already use, over ``ledger.client``.

Nothing here imports Django: an agent's process needs only the client and the framework."""

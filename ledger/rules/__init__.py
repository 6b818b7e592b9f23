"""Pure decisions, by topic: no writes, no queries. Actions and pages ask these."""

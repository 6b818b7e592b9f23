"""Developer tooling run from the repository's root: ``make run``'s ``devserver``, the
benchmark (``bench``) and the README's ``screenshots``. Not packaged in the wheel, and
imported by nothing in ``ledger`` or ``memoryadmin``."""

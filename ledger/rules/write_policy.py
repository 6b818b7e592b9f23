"""The write policy's settings: one table for the admin's page, its form and
``change_policy``, so that no route can store a value the writes cannot live with."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ledger.rules.refusals import Refusal
from ledger.rules.text import KEY_PATTERN, forbidden_character

# A hundred years: a longer life would give dates beyond what the pages can show.
POLICY_DAYS_MAX = 36_500
KEYS_SETTING = "system_of_record_keys"
# Whether agents may change what another agent (or a person) wrote: a yes-or-no setting.
OTHERS_SETTING = "agents_change_others"
# The usual lives of the three kinds: a guess may not be given a longer one.
LIFE_SETTINGS = ("ttl_preference_days", "ttl_account_fact_days", "ttl_episode_days")


@dataclass(frozen=True)
class PolicySetting:
    """One setting: what the page says of it, and the values it may take (``low`` to
    ``high`` of ``many``; for the system-of-record keys, how many keys the list holds; for
    a switch, ``off_on``: what each of its two values means)."""

    name: str
    label: str
    meaning: str
    one: str
    many: str
    low: int
    high: int
    off_on: tuple[str, str] | None = None

    def amount(self, count: int) -> str:
        if self.off_on is not None:
            return self.off_on[bool(count)]
        return f"{count} {self.one if count == 1 else self.many}"

    @property
    def bounds(self) -> str:
        if self.off_on is not None:
            return "on or off"
        if self.low == 0:
            return f"at most {self.amount(self.high)}"
        return f"from {self.low} to {self.amount(self.high)}"


def _days(name: str, label: str, meaning: str) -> PolicySetting:
    return PolicySetting(name, label, meaning, "day", "days", 1, POLICY_DAYS_MAX)


POLICY_SETTINGS: tuple[PolicySetting, ...] = (
    _days(
        "ttl_preference_days",
        "Life of a preference",
        "When an agent gives no expiry, a new preference (how the person likes things "
        "done) expires after this many days.",
    ),
    _days(
        "ttl_account_fact_days",
        "Life of an account fact",
        "When an agent gives no expiry, a new account fact (their plan, a setting of "
        "their account) expires after this many days.",
    ),
    _days(
        "ttl_episode_days",
        "Life of an episode",
        "When an agent gives no expiry, a new episode (something that happened) expires "
        "after this many days.",
    ),
    _days(
        "inferred_max_days",
        "Longest life of a guess",
        "A guess (a memory an agent inferred rather than heard) never lives longer than "
        "this, whatever expiry the agent asks for. It may not be longer than the shortest "
        "life above: a guess never outlives what a person said.",
    ),
    PolicySetting(
        "inferred_sources_required",
        "Agents a guess needs",
        "A guess waits, unused, until this many different agents have written it, or the "
        "person confirms it. One agent repeating itself counts once, however many messages "
        "or tools it names. 1 means the agent that wrote it is enough.",
        "agent",
        "agents",
        1,
        10,
    ),
    _days(
        "review_preference_days",
        "Review of a preference",
        "The person is reminded to check a new preference this many days after it is written.",
    ),
    _days(
        "review_account_fact_days",
        "Review of an account fact",
        "The person is reminded to check a new account fact this many days after it is written.",
    ),
    _days(
        "review_episode_days",
        "Review of an episode",
        "The person is reminded to check a new episode this many days after it is written.",
    ),
    PolicySetting(
        "subject_active_cap",
        "Live memories per subject",
        "The most memories in use or waiting for confirmation one subject may hold; a new "
        "one beyond it is refused until some are deleted or expire.",
        "memory",
        "memories",
        1,
        10_000,
    ),
    PolicySetting(
        "recall_cap",
        "Memories per recall",
        "The most memories an agent is given in one recall: the largest number it may ask for.",
        "memory",
        "memories",
        1,
        100,
    ),
    PolicySetting(
        KEYS_SETTING,
        "Slots another system owns",
        "Slot keys whose truth lives in another system (billing, the customer database): an "
        "agent's write to one of them is refused, so that it reads them from there. One "
        "key per line, such as billing.address.",
        "key",
        "keys",
        0,
        100,
    ),
    PolicySetting(
        OTHERS_SETTING,
        "Agents change each other's writes",
        "Off: an agent may correct or delete only what it wrote itself, and what another "
        "agent or a person wrote is refused; keys given the staff permission (on the Agents "
        "page) still may change it. On: any agent that may write may change any agent's "
        "memories and ledger entries. An agent's own runs and their notes stay its own "
        "either way.",
        "",
        "",
        0,
        1,
        off_on=(
            "off: each agent changes only its own writes",
            "on: any agent changes any agent's writes",
        ),
    ),
)
POLICY_SETTING_NAMES = frozenset(setting.name for setting in POLICY_SETTINGS)


def _shown(value: int) -> str:
    # A number too long to read (or, past 4300 digits, to print) is not echoed back.
    return str(value) if value.bit_length() <= 64 else "that number"


def _number_problem(setting: PolicySetting, value: object) -> str | None:
    if not isinstance(value, int) or isinstance(value, bool):
        return f"Give a whole number of {setting.many}."
    if not setting.low <= value <= setting.high:
        return f"Choose {setting.bounds}; {_shown(value)} is outside that."
    return None


def _switch_problem(setting: PolicySetting, value: object) -> str | None:
    return None if isinstance(value, bool) else "Choose on or off."


def _keys_problem(setting: PolicySetting, value: object) -> str | None:
    if not isinstance(value, list) or not all(isinstance(key, str) for key in value):
        return "Give the slot keys, one per line."
    if len(value) > setting.high:
        return f"At most {setting.amount(setting.high)}; this is {len(value)}."
    seen: set[str] = set()
    for key in value:
        if (found := forbidden_character(key)) is not None:
            return f"A key holds an invisible character ({found}): type it again."
        if not KEY_PATTERN.fullmatch(key):
            return (
                f"“{key[:50]}” is not a slot key: use lower-case letters, digits, dots, "
                "dashes and underscores, starting with a letter or a digit, at most 100 "
                "characters, such as billing.address."
            )
        if key in seen:
            return f"“{key}” is listed twice."
        seen.add(key)
    return None


def _guess_problem(numbers: Mapping[str, int]) -> str | None:
    shortest = min(LIFE_SETTINGS, key=lambda name: numbers[name])
    longest_guess = numbers["inferred_max_days"]
    if longest_guess <= numbers[shortest]:
        return None
    label = next(s.label for s in POLICY_SETTINGS if s.name == shortest).lower()
    return (
        f"At most {numbers[shortest]} days, the {label}: a guess never outlives what a "
        f"person said. {longest_guess} is longer."
    )


def policy_problems(values: Mapping[str, object]) -> dict[str, str]:
    """What is wrong with a whole policy (a value for every setting), setting by setting,
    in words to show beside each; empty when every value may be stored."""
    problems: dict[str, str] = {}
    for setting in POLICY_SETTINGS:
        check = _keys_problem if setting.name == KEYS_SETTING else _number_problem
        if setting.off_on is not None:
            check = _switch_problem
        if (problem := check(setting, values.get(setting.name))) is not None:
            problems[setting.name] = problem
    if not problems.keys() & {*LIFE_SETTINGS, "inferred_max_days"}:
        numbers = {name: value for name, value in values.items() if isinstance(value, int)}
        if (problem := _guess_problem(numbers)) is not None:
            problems["inferred_max_days"] = problem
    return problems


class PolicyRefusal(Refusal):
    """Settings a policy change may not take: ``problems`` names each, with why."""

    def __init__(self, problems: Mapping[str, str]) -> None:
        labels = {setting.name: setting.label for setting in POLICY_SETTINGS}
        detail = " ".join(f"{labels[name]} ({name}): {words}" for name, words in problems.items())
        super().__init__("policy_out_of_bounds", f"{detail} Nothing was changed.", 400)
        self.problems = dict(problems)


def refuse_bad_policy(values: Mapping[str, object]) -> None:
    if problems := policy_problems(values):
        raise PolicyRefusal(problems)


def refuse_unknown_settings(changes: Mapping[str, object]) -> None:
    if unknown := sorted(changes.keys() - POLICY_SETTING_NAMES):
        raise Refusal(
            "policy_unknown_setting",
            f"Not settings of the write policy: {', '.join(unknown)}. Nothing was changed.",
            400,
        )


def refuse_stale_policy(expected: int | None, current: int) -> None:
    """A change made on the page of an earlier version would silently undo the one since."""
    if expected is not None and expected != current:
        raise Refusal(
            "policy_changed",
            f"The policy changed while you were editing it: it is now version {current}, not "
            f"{expected}. Check the values in force and submit again. Nothing was changed.",
            409,
        )


def refuse_unchanged_policy(changed: Mapping[str, object]) -> None:
    if not changed:
        raise Refusal(
            "policy_unchanged",
            "Nothing to save: every setting already has the value you gave, so no new "
            "version was made.",
            400,
        )

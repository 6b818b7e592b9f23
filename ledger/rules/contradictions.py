"""Do two statements likely contradict each other? A pure, deterministic rule, no model.

Slots catch disagreement only where agents name a key. This rule reads the words instead:
each statement becomes a set of *concepts* (content words after stop words and stemming,
with the domain's synonyms folded: phone, telephone, call and ring are one concept), each
with a *stance* (for it, or against it: a negation word, a negative verb such as "dislikes"
or "forbidden", or the losing side of "prefers X over Y").

Two statements likely contradict when they share a core concept (the thing acted on, not
a time or an "about" topic) with opposite stances, the opposed concepts outweigh the ones
they agree on, and neither names a different object of the same sort (email against phone,
weekends against weekdays, the spouse against the accountant), nor a time window the other
lacks ("never after 6pm" narrows a general "happy to be called", it does not deny it).
A past event ("phoned last week") contradicts no standing preference.

``tests/test_possible_conflicts.py`` measures precision and recall on a labelled set.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_NUMBERS = {
    "one": "1",
    "two": "2",
    "three": "3",
    "four": "4",
    "five": "5",
    "six": "6",
    "seven": "7",
    "eight": "8",
    "nine": "9",
    "ten": "10",
    "eleven": "11",
    "twelve": "12",
}

# Phrases read as one word before splitting; "rather than" and the like become "over".
_PHRASES = (
    (re.compile(r"\be-mail"), "email"),
    (re.compile(r"\b(?:call|ring|phone) ?back\b"), "callback"),
    (re.compile(r"\bvideo ?calls?\b"), "videocall"),
    (re.compile(r"\bopt(?:s|ed)?[ -]out\b"), "optout"),
    (re.compile(r"\b(?:rather than|instead of|in place of)\b"), "over"),
    (re.compile(r"\bany ?time\b"), "anytime"),
    (re.compile(r"\bcannot\b"), "can not"),
    (re.compile(r"\bwon't\b"), "will not"),
    (re.compile(r"n't\b"), " not"),
)

# "Call me Priya", "called by the first name": a name, not a telephone call.
_NAMING = re.compile(
    r"\b(?:call|called|calls)(?: me| him| her| them)?(?= (?:by (?:the|my|their) )?"
    r"(?:[A-Z]|first name|surname|full name))"
)
_CLAUSE_BREAK = re.compile(r"[,;:.!?]|\b(?:but|although|though|except|unless|while)\b")
_WORD = re.compile(r"[a-z0-9]+")
_PROPER = re.compile(r"(?<=\s)[A-Z][a-z]+")
_NUMBER = re.compile(r"^(\d+)(am|pm|h)?$")
# A number after one of these, or with am or pm, is an hour: part of a time window.
_BEFORE_AN_HOUR = frozenset({"before", "after", "until", "till", "past", "from"})

# Each flips the stance of the clause it is in; two flips cancel ("does not mind").
_NEGATORS_TEXT = """not no never nobody none nothing neither nor without against
    stop stops stopped stopping avoid avoids avoided avoiding refuse refuses refused
    dislike dislikes disliked hate hates hated forbid forbids forbidden prohibited banned
    unwanted unwelcome unhappy decline declines declined reject rejects rejected
    cease ceased unsubscribe unsubscribes unsubscribed optout mind minds object objects"""
NEGATORS = frozenset(_NEGATORS_TEXT.split())
# The words after it are what the statement ranks lower, up to a preposition: in "email
# over telephone for billing", billing is on neither side.
_OVER = "over"
_PREPOSITIONS = frozenset({"for", "on", "in", "at", "by", "with", "during", "to", "when"})

_STOP_WORDS_TEXT = """a an the and or of to in on at by for from with as is are was were
    be been being am
    it its this that these those there here he she they them his her their hers theirs
    i me my we our you your do does did doing done have has had having can could will would
    shall should may might must so too very just also only more most less some any all each
    every per via up into onto out off than then now ever always often usually sometimes
    please prefer prefers preferred preferring like likes liked love loves loved enjoy
    enjoys happy glad fine ok okay want wants wanted wish wishes need needs needed
    allowed allow allows permitted permit welcome welcomes accept accepts accepted agree
    agrees consent consents use uses used using get gets got receive receives received
    take takes part keep keeps kept one person customer user someone anytime who what
    when where which how why if pm"""
_STOP_WORDS = frozenset(_STOP_WORDS_TEXT.split())
# Said after "about" or "regarding": what a statement is about, not what it acts on.
_TOPIC_MARKERS = frozenset({"about", "regarding", "re", "concerning"})
# A past event, not a standing preference.
_EPISODE_MARKERS = frozenset({"last", "yesterday", "ago", "earlier"})

# Synonym groups: every word of a group (after stemming) reads as the group's first word.
_SYNONYMS = (
    ("phone", "telephone", "call", "ring", "rang", "mobile", "landline", "voice"),
    ("email", "mail", "inbox"),
    ("text", "sms", "message", "texting"),
    ("post", "letter", "paper", "postal"),
    ("videocall", "video", "zoom"),
    ("chat", "livechat"),
    ("bill", "billing", "invoice"),
    ("remind", "reminder"),
    ("record", "recording"),
    ("child", "children", "kid"),
    ("spouse", "wife", "husband", "partner"),
    ("weekend", "saturday", "sunday"),
    ("weekday", "monday", "tuesday", "wednesday", "thursday", "friday"),
)

# Sorts of object: two statements naming different members of one sort are about
# different things. Members are concepts (after synonyms).
_SORTS = {
    "channel": frozenset({"phone", "email", "text", "post", "videocall", "chat", "whatsapp"}),
    "payment": frozenset({"card", "cheque", "check", "cash", "transfer", "debit", "paypal"}),
    "language": frozenset(
        {"english", "french", "spanish", "german", "welsh", "italian", "polish", "arabic"}
    ),
    "person": frozenset(
        {
            "spouse",
            "son",
            "daughter",
            "mother",
            "father",
            "parent",
            "carer",
            "landlord",
            "accountant",
            "solicitor",
            "lawyer",
            "friend",
            "neighbour",
            "employer",
        }
    ),
    "relation": frozenset({"before", "after", "during"}),
    "time": frozenset({"morning", "afternoon", "evening", "night", "lunchtime"}),
    "day": frozenset({"weekend", "weekday"}),
}
# A time window: a statement with one its counterpart lacks is narrower, not opposite.
_WINDOW_SORTS = ("time", "day", "hour")
_QUALIFIER_SORTS = ("relation", "time", "day", "hour")
# Objects weigh more than the words around them when agreement and opposition are counted.
_OBJECT_SORTS = ("channel", "payment", "language")


def stem(word: str) -> str:
    """A small suffix stripper: enough that "phoned", "phones" and "phone" meet."""
    for suffix, keep in (("ies", "y"), ("ing", ""), ("ed", ""), ("ly", ""), ("es", "e")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)] + keep
            break
    else:
        if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
            word = word[:-1]
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]
    if word.endswith("y") and len(word) > 3:
        word = word[:-1] + "i"
    return word


_CANONICAL = {stem(word): group[0] for group in _SYNONYMS for word in group}
_SORT_OF = {member: sort for sort, members in _SORTS.items() for member in members}


def sort_of(name: str) -> str | None:
    """The sort of object a concept is, if it is one of the sorts the rule knows."""
    return "hour" if name.endswith("h") and name[:-1].isdigit() else _SORT_OF.get(name)


def concept(word: str, *, after: str = "", before: str = "") -> str:
    """The concept a (lower-case) word stands for, given the words either side of it."""
    word = _NUMBERS.get(word, word)
    number = _NUMBER.match(word)
    if number:
        hour = number.group(2) or after in _BEFORE_AN_HOUR or before in ("am", "pm")
        return number.group(1) + ("h" if hour else "")
    if word in _SORT_OF:
        return word
    stemmed = stem(word)
    return _CANONICAL.get(stemmed, _CANONICAL.get(word, stemmed))


@dataclass(frozen=True)
class Mention:
    stance: bool  # True: for it; False: against it
    topic: bool  # only what the statement is about ("about billing")


@dataclass(frozen=True)
class Reading:
    """A statement as the rule reads it."""

    mentions: dict[str, Mention]
    names: frozenset[str]  # proper names said mid-sentence: "Leeds", "Biscuit"
    episode: bool

    @property
    def topics(self) -> set[str]:
        return {name for name, mention in self.mentions.items() if mention.topic}

    def members(self, sort: str) -> set[str]:
        return {c for c in self.mentions if sort_of(c) == sort}


def read(statement: str) -> Reading:
    """Concepts with their stances, in order of the statement's clauses."""
    names = frozenset(name.casefold() for name in _PROPER.findall(" " + statement.strip()[1:]))
    text = _NAMING.sub("named", statement).casefold().replace("’", "'")
    for pattern, replacement in _PHRASES:
        text = pattern.sub(replacement, text)
    mentions: dict[str, Mention] = {}
    episode = False
    for clause in _CLAUSE_BREAK.split(text):
        words = _WORD.findall(clause)
        # (concept, negations before it, ranked lower, only a topic) for each content word.
        found: list[tuple[str, int, bool, bool]] = []
        flips = 0
        ranked_lower = topic = False
        for at, word in enumerate(words):
            episode = episode or word in _EPISODE_MARKERS
            if word == _OVER:
                ranked_lower = True
                continue
            if word in _PREPOSITIONS:
                ranked_lower = False
            if word in _TOPIC_MARKERS:
                topic = True
                continue
            if word in NEGATORS:
                flips += 1
                continue
            if word.endswith("less") and len(word) > 6:
                # "-less" is a negation in one word: "paperless billing".
                flips += 1
                word = word[: -len("less")]
            if word in _STOP_WORDS or len(word) < 2 and not word.isdigit():
                continue
            name = concept(
                word,
                after=words[at - 1] if at else "",
                before=words[at + 1] if at + 1 < len(words) else "",
            )
            found.append((name, flips, ranked_lower, topic))
        # A negation reaches forward ("never call", "no expiry"); one with nothing after it
        # denies the whole clause ("calls are forbidden", "recording is not allowed").
        trailing = flips - found[-1][1] if found else 0
        for name, before, lower, about in found:
            if name in mentions and not mentions[name].topic:
                continue
            mentions[name] = Mention(stance=((before + trailing) % 2 == 0) != lower, topic=about)
    return Reading(mentions=mentions, names=names, episode=episode)


@dataclass(frozen=True)
class Contradiction:
    """Why two statements likely contradict: the concepts they take opposite sides on."""

    opposed: tuple[str, ...]


def _weight(name: str) -> int:
    return 2 if sort_of(name) in _OBJECT_SORTS else 1


def _different_objects(first: Reading, second: Reading) -> bool:
    if first.names - second.names and second.names - first.names:
        return True
    # "About billing" and "about deliveries" are about different things.
    if first.topics and second.topics and not first.topics & second.topics:
        return True
    for sort in (*_SORTS, "hour"):
        mine, theirs = first.members(sort), second.members(sort)
        if mine - theirs and theirs - mine:
            return True
    return any(first.members(sort) != second.members(sort) for sort in _WINDOW_SORTS)


def contradiction(first: str, second: str) -> Contradiction | None:
    """The likely contradiction between two statements, or None."""
    a, b = read(first), read(second)
    if a.episode or b.episode or _different_objects(a, b):
        return None
    shared = [name for name in a.mentions if name in b.mentions]
    opposed = [n for n in shared if a.mentions[n].stance != b.mentions[n].stance]
    core = [
        n
        for n in opposed
        if sort_of(n) not in _QUALIFIER_SORTS
        and not a.mentions[n].topic
        and not b.mentions[n].topic
    ]
    if not core:
        return None
    agreeing = [n for n in shared if n not in opposed]
    if sum(map(_weight, opposed)) <= sum(map(_weight, agreeing)):
        return None
    return Contradiction(opposed=tuple(opposed))


def search_terms(statement: str) -> list[str]:
    """Words to find candidate statements with full-text search: each concept of the
    statement and every synonym of it. Letters and digits only, so safe to join with OR."""
    concepts = set(read(statement).mentions)
    terms = dict.fromkeys(c for c in concepts if c.isalnum())
    for group in _SYNONYMS:
        if group[0] in concepts:
            terms.update(dict.fromkeys(group))
    return list(terms)

"""Standing orders told apart from preferences by what they do to the organisation's
business, whatever words carry them: a clause that is an order (an imperative, a "should",
"whenever", "from now on") and gives a favour (approve, refund, upgrade, disclose, push a
product), or that takes away a check (verification, ID, fraud screening, a limit), is held.

``ledger.rules.orders`` names the common phrasings one by one; this reads a clause for
its effect, so that an order put in words nobody listed is still found. What keeps a
person's firm preference out is the same distinction a reviewer makes:

- whose act it is: a clause the person is the subject of ("Prefers refunds to credit",
  "Pays without checking the invoice") or a past event ("Was refunded on 3 May") describes
  them, and orders nothing;
- which way it points: a favour refused ("Do not offer her discounts") or a check added
  ("Always check with her first", "Never skip the security questions") is a preference,
  the opposite of an order; negations are counted, so "never skip" adds a check;
- what the favour word is doing: a refund that is only the topic ("a receipt for every
  refund") or whose route is chosen ("refunds go to her original card") is not granted.

English only: German orders put their verb last and are read by
``ledger.rules.orders_german``.
Patterns expect the casefolded reading ``ledger.rules.poison`` gives them.
"""

from __future__ import annotations

import re

_SENTENCE = re.compile(r"[^.!?;]+")
_CLAUSE = re.compile(r"[^,:—–]+")

# Words a clause may open with before its verb, none of them a subject.
_LEAD = re.compile(
    r"^(?:(?:and|then|so|also|but|please|kindly|just|simply|always|automatically|"
    r"immediately|quietly|now|ever|from now on|going forward|in future|in the future|"
    r"henceforth|make sure to|make sure you|be sure to|remember to|don't forget to|"
    r"do not forget to|feel free to|go ahead and|you should|you must|you can|you may|"
    r"make sure(?: that)?|ensure(?: that)?|see to it that|"
    r"it is fine to|it's fine to|it is ok to|it's ok to|(?:it'd|it would|it will|it's|it is) "
    r"be (?:great|nice|good|best|helpful|kind|appreciated) (?:if you (?:could|would)|to)|"
    r"you(?:'re| are) (?:allowed|permitted|free) to|you have permission to|(?:could|would) "
    r"you)\s+)*"
)
# A clause the person is the subject of, telling what they like, want or do.
_PERSON = re.compile(
    r"^(?:(?:she|he|they|i|the customer|the client|this customer)\s+)?(?:(?:always|never|"
    r"usually|often|sometimes|also|still|only|really|strongly)\s+)?(?:prefers?|likes?|"
    r"wants?|would|asks?|asked|insists?|hates?|dislikes?|loves?|enjoys?|wish(?:es)?|"
    r"requests?|requested|chose|chooses|agreed|said|says|told|mentioned|complained|"
    r"doesn't want|does not want|don't want|do not want|is not interested|isn't interested|"
    r"not interested|is happy|is fine|finds?|thinks?|feels?|expects?|hopes?)\b"
)
# Verbs the person does in the third person or did ("pays", "ordered"); the words that
# look like them and are not their verbs are let through.
_OWN_ACT = re.compile(
    r"^(?:(?:she|he|they|i)\s+)?(?:(?:always|never|usually|often|sometimes|also|still|"
    r"only|rarely)\s+)?(?!(?:his|this|hers|its|us|yes|always|needs|requires|gets|has|is|"
    r"qualifies|deserves|counts|goes|does|thus|plus|process|access|express|bypass|"
    r"unless|less|miss|address|business|class|pass)\b)(?:[a-z]+(?:ed|[^s\W']s)|was|were|"
    r"had|did|got|paid|bought|sent|made|took|gave|went|left|came|said|told|sold|kept|"
    r"spent|won|lost|paid)\b"
)
# What happened is an event, not an order: a date, "ago", or a past form of "to be".
_PAST = re.compile(
    r"\b(?:was|were|had|did|got|yesterday|ago|last (?:week|month|year|time)|on \d|in "
    r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)\w*|(?:19|20)\d\d)\b"
)
_CONDITION = re.compile(
    r"(?:when|whenever|if|once|after|before|while|unless|since|because|as soon as|in case)\b"
)
# Marks of an order: a modal, a condition or a time that makes it standing.
_MARK = re.compile(
    r"\b(?:should|must|shall|is to|are to|needs? to|has to|have to|ought to|can|may|"
    r"will always|whenever|every time|each time|any ?time|on request|automatically|always|"
    r"no matter|from now on|going forward|in future|henceforth|when|if|don't|do not|never)\b"
)
# An opener that makes what follows an order whatever its subject ("make sure refunds …").
_OPENER = re.compile(r"\b(?:make sure|ensure|see to it|please|kindly|be sure|remember|you)\b")
_MODAL = re.compile(
    r"\b(?:should|must|shall|is to|are to|needs? to|has to|have to|ought to|can|may|(?:is|are) "
    r"(?:instructed|told|expected|asked|required) to)\b"
)
_THIRD = re.compile(r"(?:[a-z]+[^s\W']s|[a-z]+ed|is|has|was|are)\b")
# A subject a clause's imperative cannot have: a clause opening with one is a statement.
_NOT_VERB = re.compile(
    r"^(?:she|he|they|i|we|her|his|their|the|a|an|this|that|these|those|my|our|your|it|"
    r"its|there|any|all|every|each|no|some|one|only|most|mr|mrs|ms|dr)\b"
)

# Favours: the organisation's decisions in its customer's favour, as verbs or as what is
# given ("give her the employee rate", "a 40% offer").
_FAVOUR_VERB = (
    r"(?:sign off on|rubber-?stamp|green-?light|wave\b[^,]{0,30}\bthrough|push\b[^,]{0,30}"
    r"\bthrough|(?:give|pay) (?:her|him|them) (?:\w+ )?(?:money )?back|knock\b[^,]{0,20}\boff|"
    r"(?:reduce|lower|cut|drop) (?:the |his |her |their )?(?:price|prices|rate|bill|fare|"
    r"premium)|make (?:him|her|them) (?:an? )?(?:admin|administrator|owner|superuser|"
    r"moderator|manager|vip)|(?:pre|auto)-?approve|approve|authori[sz]e|refund|reimburse|compensate"
    r"|credit(?!\s+"
    r"cards?)|upgrade|waive|expedite|escalate|prioriti[sz]e|fast-?track|grant|honou?r|"
    r"unlock|unblock|reactivate|reinstate|whitelist|exempt|release|reverse|pay out|"
    r"disclose|reveal)\b"
)
_FAVOUR_NOUN = (
    r"(?:refunds?|reimbursements?|compensation|discounts?|vouchers?|coupons?|credit(?!\s+"
    r"cards?)|upgrades?|waivers?|exceptions?|no charge|priority|bonus|cashback|"
    r"(?<![\w-])free(?= of charge| (?:shipping|delivery|upgrades?|returns?|months?|weeks?|"
    r"trials?|items?|gifts?|samples?|nights?|tickets?|access|service|repairs?|postage))|"
    r"for free|"
    r"goodwill|rebates?|maximum|most generous|\d+\s?%\s?(?:off|offer|discount|reduction|rebate)|"
    r"(?:best|lowest|cheapest|special|reduced|staff|employee|trade|wholesale|vip) "
    r"(?:price|rate|fare|deal|terms)s?)\b"
)
_GIVE = r"(?:give|offer|issue|apply|add|provide|send|extend|get|receive|have|keep|allow)"
# A favour word only as the topic or the route: "a receipt for every refund", "refunds go
# to her original card".
_TOPIC = r"(?:for|of|about|on|after|regarding|per|before)\s+(?:\w+\s+)?$"
_ROUTE = re.compile(
    r"\b(?:to|into|onto|back to|reach|reaches|arrive (?:in|at))\s+(?:her|his|their|the)\s+"
    r"(?:new\s+|old\s+|main\s+)?"
    r"(?:original|own|usual|bank|card|"
    r"account|payment|paypal)\b"
)
# Selling to the person: "steer him towards the premium plan", "mention the Gold card".
_SELL = re.compile(
    r"\b(?:recommend|suggest|push|pitch|promote|upsell|cross-?sell|steer|nudge|encourage|"
    r"persuade|mention|highlight|advertise|sell|offer|point)\w*\b[^,]{0,50}\b(?:plans?|tiers?|"
    r"deluxe|luxury|top-tier|most expensive|"
    r"upgrade|premium|insurance|warrant(?:y|ies)|cards?|packages?|bundles?|"
    r"subscriptions?|add-?ons?|products?|loans?|membership|expensive|pricier|savings|"
    r"mortgages?|investments?)\b"
)
# A condition that adds a requirement: "only with her consent", "only when asked".
_RESTRICTED = re.compile(
    r"\bonly\s+(?:if|when|with|after|once|on)\b|\bwith (?:her|his|their) (?:consent|"
    r"permission|approval|agreement|ok)\b|\b(?:first|beforehand)\b"
)

# Checks: what the organisation verifies, screens or limits before it acts.
_CHECK = re.compile(
    r"\b(?:re-?)?(?:verif\w*|authenticat\w*|check(?!\s+(?:in|up|on|with))\w*|kyc|aml|"
    r"fraud\w*|screen\w*|vett\w*|identity|id|identification|proof|paperwork|documents?|"
    r"documentation|security (?:questions?|checks?|passphrase|steps?)|passphrase|"
    r"two-?(?:step|factor)|2fa|mfa|sign-?offs?|second signature|monitoring|flag\w*|"
    r"(?:manual|fraud|credit|security|compliance|risk) review|limits?|caps?|usual (?:steps|"
    r"checks|process|procedures?|questions|rules|formalities|paperwork)|"
    r"(?:account|card|payment|order|transaction|funds)s?\b[^,]{0,20}\bon hold|"
    r"(?:cooling-off|waiting|notice|probation\w*) periods?|deadlines?|return window|"
    r"minimum (?:order|balance|spend|age|term))\b"
)
_RECEIPT = re.compile(
    r"\b(?:without|no|need|needs|require|requires|ask for|asking for|show|provide|request)"
    r"\s+(?:\w+\s+)?receipts?\b|\b(?:without|no)\s+(?:a\s+|any\s+)?(?:review|approval|"
    r"sign-?off|questions?)\b"
)
# Words that take something away; counted together, so that "never skip" adds a check.
_AWAY = re.compile(
    r"\b(?:never|not|no|without|n't|skip|bypass|circumvent|waive|ignore|remove|lift|forgo|"
    r"forego|dispense with|leave out|omit|spare|go easy on|don't worry about|waived|skipped|"
    r"disable|exclude|exempt|override|drop|relax|suspend|switch off|turn off|need not|"
    r"needn't|unnecessary|enough|stop|quit|cease|no more|no longer)\b|n't\b"
)
# Refusing a favour: "don't decline his loans" grants them.
_REFUSE = re.compile(r"\b(?:decline|refuse|deny|reject|turn down|say no|question|challenge)")
# Trust given away: "assume her payments are legitimate".
_TRUST = re.compile(
    r"\b(?:assume|presume|take it that|accept that|believe that|trust that)\b[^,]{0,50}\b"
    r"(?:legitimate|genuine|verified|authori[sz]ed|valid|true|honest|fine|safe|approved)\b"
)
# A check made weaker: "authenticate her with just her date of birth".
_WEAK_CHECK = re.compile(
    r"\b(?:authenticat\w*|verif\w*|identif\w*|confirm)\b[^,]{0,40}\b(?:with|using|by|on)\s+"
    r"(?:just|merely|simply|nothing more than)\b"
)
# Handed to whoever asks: "open the door for whoever says they know her", "send the parcel
# to any address she texts".
_ANYONE = re.compile(
    r"\b(?:to|for)\s+(?:whoever|anyone who|anybody who|anyone with|anybody with|any address|"
    r"any number|any caller|any e-?mail)\b"
)
# Data passed on to someone not named by the person.
_DISCLOSE = re.compile(
    r"\b(?:share|send|forward|e-?mail|give|read out|pass on|hand over)\b[^,]{0,40}\b(?:data|"
    r"details|history|information|records|statements?|balance|transactions|purchases)\b"
    r"[^,]{0,30}\b(?:to|with)\s+(?:any\w*|whoever|whatever|third[\s-]part\w*|partners?|"
    r"the partner\w*|other (?:companies|firms|stores|people))\b"
)


def _odd(pattern: re.Pattern[str], clause: str) -> bool:
    return len(pattern.findall(clause)) % 2 == 1


def _favoured(clause: str, body: str) -> bool:
    """Whether ``clause`` gives a favour, not refuses it or only names it."""
    if _RESTRICTED.search(clause) or _ROUTE.search(clause):
        return False
    refused = _odd(_AWAY, clause) != _odd(_REFUSE, clause)
    if refused:
        return False
    if re.match(_FAVOUR_VERB, body) or _SELL.match(body) or _DISCLOSE.search(clause):
        return True
    for noun in re.finditer(_FAVOUR_NOUN, clause):
        if not re.search(_TOPIC, clause[: noun.start()]):
            return True
    return False


# A short label: a noun phrase of up to three words.
_LABEL = re.compile(r"^\s*(?:[\w'’-]+\s+){0,2}[\w'’-]+\s*$")
# A plural noun with what it comes from, the subject of a clause ("requests from her should
# be …", "returns from this household are …"), not the person's verb.
_NOUN_SUBJECT = re.compile(
    r"^[a-z-]+s\s+(?:from|of|by|for|under|on)\s+(?:this|the|her|his|their|that|these|him|"
    r"them|it)\b[^,]{0,40}\b(?:are|is|should|must|shall|will|get|go|need)\b"
)


def _order(clause: str) -> bool:
    """Whether one clause, not the person's own and not what happened, is an order."""
    lead = _LEAD.match(clause)
    body = clause[lead.end() :] if lead else clause
    # A condition ("whenever a refund is issued") orders nothing; its main clause may.
    noun = _NOUN_SUBJECT.match(body)
    if not body or _PAST.search(clause) or _CONDITION.match(body):
        return False
    if _PERSON.match(body) and not noun:
        return False
    # "Pays without checking" is the person's habit; "refunds should be …" has a modal.
    opened = _OPENER.search(clause[: len(clause) - len(body)])
    if _OWN_ACT.match(body) and not _MODAL.search(clause) and not opened and not noun:
        return False
    if _TRUST.search(clause) or _WEAK_CHECK.search(clause) or _ANYONE.search(clause):
        return True
    checks = _CHECK.search(clause) or _RECEIPT.search(clause)
    if checks and _odd(_AWAY, clause):
        return True
    imperative = not _NOT_VERB.match(body) and not _THIRD.match(body)
    if (imperative or _MARK.search(clause)) and (
        _favoured(clause, body) or _SELL.search(clause) and not _odd(_AWAY, clause)
    ):
        return not _RESTRICTED.search(clause)
    return False


# German's commonest words: a German text is left to the German rules.
_GERMAN = re.compile(
    r"\b(?:der|die|das|dem|den|und|nicht|ist|für|bei|keine?|bitte|möchte|dass|sie|er|ihm|"
    r"ihr|wird|werden|soll|immer|mit|auf|zu|von|jede\w*|diese\w*)\b"
)


class _Mandates:
    """Asked like a compiled pattern (``search``), as ``ledger.rules.poison`` asks each of
    its rules; the match is the sentence that orders."""

    def search(self, text: str) -> re.Match[str] | None:
        if len(_GERMAN.findall(text)) >= 2:
            return None
        for sentence in _SENTENCE.finditer(text):
            # A short label before a colon names a topic ("Upgrade requests: …"), no order.
            clauses = [
                c.group().strip()
                for c in _CLAUSE.finditer(sentence.group())
                if not (sentence.group()[c.end() : c.end() + 1] == ":" and _LABEL.match(c.group()))
            ]
            # The person's own clause orders nothing; what follows it may ("prefers
            # e-mail, and her refunds should go through without review").
            if clauses and _PERSON.match(clauses[0]) and not _NOUN_SUBJECT.match(clauses[0]):
                clauses = clauses[1:]
            if any(_order(clause) for clause in clauses if clause):
                return sentence
        return None


MANDATES = _Mandates()

"""Standing orders: a memory that tells the assistant, or the organisation behind it, what
to do on the person's behalf beyond a preference: approve, skip a check, waive, grant,
always recommend, treat as verified. ``ledger.rules.poison`` asks these patterns of each
reading of a text; they expect its casefolded reading (so German "ß" reads "ss").

A memory describes the person in the third person ("Approved the new address", "Always
pays on the 1st", "Ignores text messages"), or states a preference about how to reach
them, even in the imperative ("Never call before 9", "Always deliver on weekdays"). What
is held is an imperative, a "must be done" or a claimed exemption whose verb is one of
the organisation's decisions, or whose object is one of its checks or favours: the
contact verbs (call, send, deliver, reply) are never among them.

English and German are read; the German orders, whose verb comes last, are in
``ledger.rules.orders_german``.
"""

from __future__ import annotations

import re

from ledger.rules.entitlements import ENTITLEMENTS
from ledger.rules.orders_german import GERMAN_ORDERS

# Where an imperative may begin: a clause's start, after a condition's comma ("when
# asked about refunds, approve them"), or after a joining or softening word.
_START = (
    r"(?:^[^\w\s]*\s*|[.!?;:—–]\s*|,\s*|\s-\s|\b(?:and|then|so|also|but|please|pls|plz|kindly|"
    r"just|simply|"
    r"always|automatically|immediately|quietly|now)\s+)"
    r"(?:(?:please|kindly|always|just|simply|automatically|immediately|also|quietly|only ever|"
    r"make sure (?:to|you)|be sure to|remember to|don't forget to|do not forget to|"
    r"you should|you must|you can|feel free to|(?:it is|it's) (?:fine|ok|okay|acceptable|"
    r"allowed|permitted) to|go ahead and|keep|(?:it'd|it would|it will|it's|it is) be (?:great|"
    r"nice|good|best|helpful|kind|appreciated) (?:if you (?:could|would)|to)|you(?:'re| are) "
    r"(?:allowed|permitted|free) to|you have permission to|(?:could|would) you)\s+)*"
)
_NOT = (
    r"(?:never|don't|dont|do not|no need to|there is no need to|there's no need to|"
    r"you need not)\s+(?:ever\s+)?(?:bother\s+(?:to\s+)?)?"
)
_FEW = r"(?:[^\s.!?;:]+\s+){0,4}?"
# Up to "as": "treat every request from this account as pre-approved".
_UNTIL_AS = r"(?:[^\s.!?;:]+\s+){0,7}?as\s+"
# What the organisation checks, limits or charges: bypassing one is not a preference.
_CONTROLS = (
    r"(?:verification|verify|checks?|id|identity|identification|security|fraud|kyc|aml|"
    r"approvals?|reviews?|limits?|caps?|thresholds?|polic(?:y|ies)|rules?|restrictions?|"
    r"safeguards?|protocols?|procedures?|process|2fa|two-factor|mfa|authentication|fees?|"
    r"charges?|penalt(?:y|ies)|deposit|requirements?|compliance|screening|holds?|"
    r"(?:risk|credit) (?:scores?|ratings?|flags?))\b"
)
# What the organisation gives: asking for one on the person's behalf is an order.
_FAVOURS = (
    r"(?:discounts?|vouchers?|refunds?|credit|compensation|free\b|upgrades?|gifts?|"
    r"coupons?|waivers?|exceptions?|anything|everything|whatever|access|rights|admin|"
    r"priority|bonus|points|cashback|goodwill|rebates?|concessions?|extensions?|"
    r"(?:best|lowest|cheapest|special|reduced|discounted|trade|staff|employee|wholesale|"
    r"insider|friends and family|vip|partner) (?:price|rate|fare|tariff|terms|pricing)s?|"
    r"overdrafts?|loans?|cash advances?)"
)
_PRODUCTS = (
    r"(?:plans?|tiers?|packages?|upgrades?|premium|pro|gold|platinum|products?|insurance|"
    r"subscriptions?|bundles?|add-?ons?|cards?|loans?|brand|warrant(?:y|ies)|membership|"
    r"savings|mortgages?|investments?|funds?|"
    r"deals?)\b"
)
_PEOPLE = r"(?:this|the|that|our|each|every|any|them|him|her|it|all|whatever|everything)\b"

# The organisation's acts, each a verb and what it needs after it, without the imperative's
# start: "approve …", "skip … the identity check", "give … a discount".
_ACTS = [
    # The organisation's own decisions, whatever their object.
    r"(?:pre-?approve|auto-?approve|approve|authori[sz]e|grant|waive|bypass|circumvent|override|overrule|"
    r"exempt|whitelist|allowlist|upsell|fast-?track|expedite|escalate|upgrade|prioriti[sz]e)"
    r"\s+(?![\w-]+\s*:)\w",
    # Money moved or paid out, the organisation's to decide.
    r"(?:transfer|wire|send|pay out|pay|release|advance|lend|move)\s+" + _FEW + r"(?:money|"
    r"funds|cash|payments?|balance|savings|deposit|sums?|amounts?|\d[\d,.]*\s*(?:eur|euros?|"
    r"usd|dollars?|gbp|pounds?|chf))\b",
    r"pay\s+(?:out\s+)?(?:any|every|all|whatever|each|the full|in full)\b",
    # Kept at the head of a queue, or sold to until they buy.
    r"(?:put|move|place|bump|push)\s+" + _FEW + r"(?:to|at|on)\s+(?:the\s+)?(?:front|top|head)"
    r"\s+of\b",
    r"(?:jump|skip|bypass)\s+(?:the\s+)?(?:queue|line|waiting list)\b",
    r"keep\s+(?:offering|pushing|recommending|suggesting|pitching|selling|upselling)\b",
    r"(?:process|handle|book|log|count|class|classify)\s+" + _UNTIL_AS + r"(?:an?\s+)?"
    r"(?:exceptions?|goodwill|verified|approved|trusted|genuine|priority|vip|paid)\b",
    r"(?:match|beat|honou?r)\s+(?:any|every|whatever|all)\b",
    r"(?:reset|change|unlock)\s+" + _FEW + r"(?:password|pin|passcode|login)s?\b[^.!?;:]{0,40}"
    r"\b(?:whenever|on request|any ?time|without|every time|no matter)\b",
    # Debts and charges let go: "write off his debt", "cancel all his late penalties".
    r"(?:write off|forgive|cancel|zero out|wipe out|wipe|clear|remove|reduce|halve|void)\s+"
    + _FEW
    + r"(?:debts?|balances?|arrears|charges?|penalt(?:y|ies)|fees?|interest|bills?|"
    r"outstanding|fines?)\b",
    r"(?:charge|bill|invoice)\s+(?:(?:him|her|them)\s+)?(?:only\s+)?(?:economy|less|nothing|"
    r"half|the lower|the old price|cost price|the staff)\b",
    r"extend\s+" + _FEW + r"(?:warrant(?:y|ies)|guarantees?|membership|subscriptions?|trials?|"
    r"return period)\b[^.!?;:]{0,30}\b(?:indefinitely|for free|forever|for life|whenever|"
    r"automatically|each time|every time|at no)",
    r"do\s+(?:what|whatever|anything|everything)\s+(?:she|he|they|the customer|the caller)\s+"
    r"(?:says|asks|wants|tells|requests|demands)\b",
    r"(?:follow|obey|carry out)\s+(?:all\s+|any\s+)?(?:his|her|their|the customer's)\s+"
    r"(?:instructions|orders|requests|wishes)\b[^.!?;:]{0,30}\b(?:without|no matter|always|"
    r"whatever)",
    r"(?:keep|leave)\s+" + _FEW + r"(?:open|active|running|unlocked|unblocked)\s+(?:regardless|"
    r"no matter|even if|whatever)\b",
    r"point\s+(?:him|her|them)\s+(?:towards?|at)\b",
    r"tell\s+(?:his|her|their)\s+(?:wife|husband|partner|son|daughter|family|mother|father|"
    r"friends?|employer|colleagues?)\s+(?:anything|everything|whatever)\b",
    r"give out\s+(?:his|her|their|the)\s+(?:address|number|phone|details|data|e-?mail|"
    r"balance|account)",
    r"add\s+(?:him|her|them|anyone|whoever|[\w'’]+\s+)\s*(?:as|to)\s+(?:an?\s+)?(?:authori[sz]ed|"
    r"joint|admin|signatory|account holder|owner)",
    r"(?:skip|ignore|disregard|overlook|disable|turn off|switch off|remove|lift|drop|suspend|"
    r"relax|deactivate|forgo|forego|dispense with|leave out|omit|go easy on|"
    r"spare (?:him|her|them)(?: the)?)\s+" + _FEW + _CONTROLS,
    r"(?:give|offer|apply|add|issue|provide|promise|grant)\s+" + _FEW + _FAVOURS,
    r"(?:raise|increase|extend|lift|double)\s+" + _FEW + r"(?:limits?|credit|deadlines?|"
    r"trials?|overdraft|caps?|allowance)\b",
    r"(?:refund|credit|reimburse|compensate)\s+(?:" + _PEOPLE + r"|\d)",
    r"(?:reverse|release|unlock|unblock)\s+" + _FEW + r"(?:charges?|chargebacks?|payments?|"
    r"holds?|funds|transactions?|fees?|blocks?|it|them|account|password|pin|card|access)\b",
    r"(?:mark|flag|list|record)\s+" + _UNTIL_AS + r"(?:paid|verified|approved|trusted|"
    r"resolved|vip|genuine|legitimate|safe|priority|authori[sz]ed|settled|cleared|paid in "
    r"full)\b",
    r"comp\s+(?:his|her|their|the)\b",
    # A status or a record set in their favour: "set his tier to Platinum", "delete the
    # complaint records", "tell her it is in stock even if it isn't".
    r"(?:set|change|move|put|add|enrol|enroll|promote|bump|switch)\s+" + _FEW + r"(?:to|in|into|"
    r"on|onto)\s+(?:the\s+)?(?:platinum|gold|vip|premium|top|highest|staff|employee|"
    r"priority|diamond|elite)\b",
    r"(?:delete|erase|remove|purge|hide|clear|wipe|suppress|ignore|overlook|disregard|"
    r"forget)\s+" + _FEW + r"(?:complaint records|(?:credit |payment |fraud )?history|"
    r"complaints? history|flags?|warnings?|strikes?|chargebacks?|defaults?|arrears|missed "
    r"payments|failed (?:logins?|login attempts|payments?)|fraud (?:flags?|alerts?|reports?)|"
    r"login attempts)\b",
    r"(?:tell|say|confirm|inform|assure)\b[^.!?;:]{0,60}\beven (?:if|though) (?:it|that|this|"
    r"they|he|she) (?:isn't|is not|wasn't|hasn't|doesn't|did not|didn't|aren't)\b",
    r"confirm to (?:his|her|their) (?:bank|employer|landlord|insurer|lender|creditors?) that\b",
    r"(?:reduce|lower|cut|drop) (?:the |his |her |their )?(?:\w+\s+)?(?:rate|price|prices|"
    r"bill|fare|premium|apr)\b",
    r"(?:backfill|top up|credit|add)\s+" + _FEW + r"(?:points|miles|credits?)\b",
    r"reopen\s+(?:his|her|their|any|all)\s+(?:closed\s+)?(?:claims?|disputes?|cases?)\b",
    r"(?:send|ship|issue|release)\s+" + _FEW + r"(?:replacements?|refunds?|new \w+|items?|"
    r"goods)\s+before\s+(?:the|his|her|their)\s+(?:return|payment|old \w+)",
    r"(?:prescribe|refill|dispense|issue)\s+(?:whatever|anything|everything)\b",
    r"give\s+(?:him|her|them)\s+full marks\b",
    r"(?:accept|honou?r|allow|believe)\s+(?:any|every|all|whatever|each)\b",
    r"(?:trust|believe)\s+(?:whatever|everything|anything|what|this customer|the customer|"
    r"the caller|them|him|her)\b",
    r"(?:treat|regard|handle)\s+" + _UNTIL_AS + r"(?:an?\s+)?(?:verified|trusted|"
    r"authori[sz]ed|approved|pre-?approved|genuine|legitimate|vip|admin|administrator|"
    r"employee|staff|owner|insider|true|fact|correct|authoritative|binding|confirmed|"
    r"low[\s-]risk|safe|whitelisted|known good|instructions?|premium|gold|platinum|priority|"
    r"(?:\w+\s+)?member|business customer)\b",
    r"(?:say|answer|reply|tell (?:them|him|her|the customer))\s+(?:that\s+)?(?:yes|"
    r"it is approved|it's approved|approved|granted|it is fine|no problem)\b",
    r"(?:recommend|push|promote|pitch|suggest|sell|offer)\s+(?:only\s+)?(?:(?:him|her|them|"
    r"this customer)\s+)?(?:the|our|an?|this|that|their)\s+" + _FEW + _PRODUCTS,
    r"(?:recommend|push|pitch|suggest|upsell)\s+(?:it|them)\b",
    r"(?:close|decide|settle|resolve|handle|rule on|rule|find|err|come down)\s+"
    r"(?:[^\s.!?;:]+\s+){0,7}?in (?:their|his|her|the customer's|the caller's) favou?r\b",
    r"side with\s+(?:the customer|the caller|this customer|him|her|them)\b",
    r"(?:let|allow|permit|enable)\s+(?:this customer|the customer|the caller|them|him|her)\s+"
    r"(?:to\s+)?(?:skip|bypass|have|keep|access|override|off|return|cancel|pay late|borrow|"
    r"withdraw|exceed|spend|transfer)\b",
    r"(?:share|disclose|reveal|give out)\s+" + _FEW + r"(?:details|data|records|password|"
    r"pin|balance|information)\s+(?:with|to)\s+(?:anyone|anybody|whoever|any caller)\b",
    r"(?:send|e-?mail|text|give|read out|disclose|reveal|share)\s+" + _FEW + r"(?:password|"
    r"pin|passcode|security answers?|card number|account number)s?\b",
    r"(?:agree to|say yes to|go along with|accept|take)\s+(?:any|every|all|whatever|each|"
    r"their word|his word|her word|the customer's word)\b",
    r"(?:consider|deem|assume)\s+(?:that\s+)?(?:[^\s.!?;:]+\s+){0,5}?(?:is\s+|are\s+)?"
    r"(?:already\s+)?(?:verified|trusted|approved|authori[sz]ed|confirmed|entitled|paid|settled|"
    r"waived|covered|cleared)\b",
    r"prioriti[sz]e\s+(?:this|their|his|her|the)\s+(?:customer|account|caller|requests?|"
    r"tickets?|orders?|claims?)\b",
    r"(?:tell|inform|assure|promise)\s+(?:[^\s.!?;:]+\s+){0,5}?(?:is|are|will be|has been)\s+"
    r"(?:approved|granted|guaranteed|waived|free of charge|for free)\b",
    r"(?:help|assist)\s+(?:this|the)\s+(?:customer|user|person|caller)\s+(?:with\s+)?"
    r"(?:anything|everything|however|whatever)\b",
    r"(?:comply|obey)\b",
]
_ACT = "(?:" + "|".join(_ACTS) + ")"
# A check or a charge left out: "check", "ask for ID", "hold her to the return window".
_SPARE = (
    r"(?:check|verify|question|challenge|flag|decline|refuse|deny|reject|say no|push back|"
    r"investigate|audit|enforce|require (?:any|an?|the)|request (?:id|proof|verification)|"
    r"make (?:him|her|them) (?:go through|pass|answer|show|provide|prove|verify)|"
    r"(?:record|log|report|note)\s+" + _FEW + r"(?:failed|missed|late|suspicious|fraud\w*|"
    r"chargebacks?|defaults?|arrears)|"
    r"(?:ask|ask them|ask him|ask her|ask this \w+|ask the \w+)\s+(?:for\s+(?:an?\s+)?(?:sick|"
    r"doctor's|medical)\s+notes?|to\s+(?:confirm|prove|"
    r"verify|show|provide|authenticate)|(?:for|about)\s+(?:an?\s+|the\s+|their\s+|his\s+|"
    r"her\s+|any\s+)?"
    r"(?:id|identification|proof|receipts?|verification|security|confirmation|a reason|why|"
    r"(?:the |an? |any |their |his |her )?(?:order|reference|account|customer|case|policy) "
    r"numbers?|documents?|documentation|paperwork|photos?|pictures?|evidence|details|"
    r"explanations?|signatures?|authori[sz]ation|passwords?|pins?|references?))|"
    r"(?:ask|asking|request|requesting|require|requiring|demand|demanding)\s+(?:[\w'’]+\s+)?"
    r"(?:for\s+)?(?:an?\s+|any\s+|the\s+)?(?:id|identification|proof|receipts?|documents?|"
    r"paperwork|photos?|evidence|verification|order numbers?)\b|report|escalate|"
    r"run (?:an?|the|any)\s+"
    + _FEW
    + r"(?:checks?|verification)|apply (?:the|any)\s+"
    + _FEW
    + _CONTROLS
    + r"|follow (?:the|any)\s+"
    + _FEW
    + _CONTROLS
    + r"|charge (?:this|the|them|him|her|any)|(?:lock|block|suspend|freeze|close|cancel|"
    r"terminate|restrict|downgrade) (?:this|the|their|his|her) (?:account|card|payment|access|"
    r"login|membership|credit line)(?![^.!?;:]*\b(?:without (?:asking|checking with|telling)|"
    r"first|unless (?:she|he|they) asks?))|mention (?:the |any )?(?:late )?(?:fees?|"
    r"charges?)|charge\s+(?:[\w-]+\s+){0,2}?(?:fees?|interest|penalt)|hold (?:her|him|them|"
    r"this customer) to)"
)
# Who an order names as doing it, and how: "support should always approve", "we never
# verify", "staff are to skip".
_DOERS = (
    r"\b(?:we|you|support|staff|agents?|advisers?|advisors?|the team|the agents?|the "
    r"assistant|everyone|anyone|employees|the (?:support|service|billing|sales) team|the "
    r"(?:ai|bot|chatbot|model|llm|system|agent)|the (?:ai|virtual|support) (?:assistant|"
    r"agent))\s+"
)
_SHOULD = (
    r"(?:should|must|shall|can|may|are to|is to|need to|have to|will|are allowed to|"
    r"are free to|(?:are|is|have been|has been) (?:instructed|told|expected|asked|required|"
    r"authori[sz]ed) to)\s+(?:always\s+|just\s+|simply\s+|automatically\s+|happily\s+)*"
)
_SHOULD_NOT = (
    r"(?:never|do not|don't|should not|shouldn't|must not|mustn't|need not|needn't|must never|"
    r"should never|will never|can never|are never to|is never to|"
    r"can stop|no longer)\s+(?:ever\s+)?(?:bother\s+(?:to\s+)?)?"
)

# The person as the subject of a wish ("prefers", "would like", "expects").
_WISH = (
    r"\b(?:(?:'d|would)\s+(?:like|prefer|rather)|wants?|prefers?|likes?|expects?|insists?\s+on|"
    r"needs?|asks?\s+for|requests?|demands?)\b"
)
# A choice between two things the person may have: "prefers a refund over a voucher".
_NO_CHOICE = r"(?![^.!?;:]*\b(?:over|rather than|instead of|than|not|never|no)\b)"
# "Never charge her card without telling her first" adds a step for her; it spares nothing.
_UNLESS_TOLD = (
    r"(?![^.!?;:]*\b(?:without (?:asking|checking with|telling|calling|warning|notifying|"
    r"consulting)|first|unless (?:she|he|they) (?:asks?|agrees?)|before (?:asking|telling|"
    r"checking with|calling)))"
)

_ENGLISH = [
    re.compile(_START + _ACT),
    re.compile(_DOERS + r"(?:always\s+(?:" + _SHOULD + r")?|" + _SHOULD + r")" + _ACT),
    # "Never check", "don't ask for ID": an order to leave out a check or a charge.
    re.compile(_START + _NOT + _SPARE + _UNLESS_TOLD),
    re.compile(_DOERS + _SHOULD_NOT + _SPARE + _UNLESS_TOLD),
    # Favours that come on their own: "gets a free upgrade whenever she asks", "any
    # complaint from him gets a voucher", "refunds go through automatically".
    re.compile(
        r"\b(?:gets?|receives?|is entitled to|are entitled to|qualifies for)\s+"
        + _FEW
        + _FAVOURS
        + r"[^.!?;:]{0,40}\b(?:whenever|every time|each time|on request|no matter|any ?time|"
        r"automatically|when(?:ever)? (?:she|he|they) asks?)\b"
    ),
    re.compile(
        r"\b(?:any|every|each|all)\s+(?:[\w'’-]+\s+){0,4}?(?:gets?|receives?|go(?:es)? "
        r"through|(?:is|are) (?:approved|accepted|refunded|granted|waived|honou?red|valid|fine|"
        r"ok|okay|acceptable|allowed|genuine|legitimate))\b|"
        r"\b(?:go(?:es)? through|(?:is|are) (?:approved|granted|refunded|accepted|waived|"
        r"credited))\s+automatically\b|\b(?:approvals?|refunds?)\s+(?:[\w'’-]+\s+){0,4}?"
        r"(?:is|are)\s+automatic\b|\bwhatever\s+(?:she|he|they|the customer)\s+\w+"
        r"[^.!?;:]{0,30}\b(?:free|approved|granted|refunded)\b"
    ),
    re.compile(
        r"\b(?:may|can|is allowed to|is permitted to)\s+(?:exceed|go over)\s+"
        + _FEW
        + r"limits?\b|\bno questions asked\b"
    ),
    # "Must be approved", "are to be waived": the same order in the passive; "by" names
    # who approves ("must be approved by her manager"), which is the person's situation.
    re.compile(
        r"\b(?:should|must|shall|will|can|may|needs? to|has to|have to|is to|are to|ought to)"
        r"\s+(?:always\s+|automatically\s+|just\s+|simply\s+|also\s+|now\s+)?be\s+(?:always\s+|"
        r"automatically\s+|immediately\s+)?(?:pre-?approved|approved|granted|waived|skipped|"
        r"bypassed|overridden|overruled|exempted|whitelisted|authori[sz]ed|honou?red|"
        r"unlocked|ignored|disabled|trusted|believed|treated as|marked as|reversed|upsold|"
        r"recommended|lifted|obeyed|paid out|paid in full|paid immediately|paid at once|paid "
        r"straight away|paid without|refunded|credited|expedited|"
        r"escalated|prioriti[sz]ed|fast-?tracked|accepted|upgraded|counted as|released|"
        r"transferred)\b(?!\s+by\b(?!\s+default))"
    ),
    # Claimed exemptions: "identity verification is not required", "no ID check needed",
    # "are pre-approved", "exempt from verification".
    re.compile(
        r"\b(?:verification|checks?|approval|review|proof of (?:purchase|identity|address)|"
        r"receipts?|id|identification)\s+(?:is|are)\s+(?:not|never|no longer)\s+(?:needed|"
        r"required|necessary|applicable)\b"
    ),
    re.compile(
        r"\bno\s+(?:need for\s+)?(?:further\s+|extra\s+)?(?:id|identity|identification|"
        r"verification|security|credit|fraud|background|kyc|age)?\s*(?:checks?|verification|"
        r"questions|approval|review)\s+(?:is\s+|are\s+)?(?:needed|required|necessary)\b"
    ),
    re.compile(
        r"\bno need to\s+(?:check|verify|confirm (?:the |their |his |her )?(?:identity|id)|"
        r"ask for (?:id|identification|proof))"
    ),
    re.compile(
        r"\b(?:needs?|requires?)\s+no\s+(?:\w+\s+)?(?:verification|checks?|approval|review|"
        r"id|proof)\b|\b(?:never|doesn't|does not|don't|do not)\s+(?:need|require)s?\s+"
        r"(?:any\s+|an?\s+)?(?:\w+\s+)?(?:verification|checks?|id|identification|proof)\b"
    ),
    re.compile(
        r"\b(?:verification|checks?|screening|approvals?|reviews?|fees?|limits?|security "
        r"questions|sign-?offs?|id|kyc)\s+(?:[\w'’-]+\s+){0,4}?(?:is|are|isn't|aren't)\s+"
        r"(?:just\s+|only\s+|merely\s+)?(?:a formality|formalities|pointless|redundant|not "
        r"necessary|unneeded|a waste of time|unnecessary|waived|"
        r"not needed|optional|lifted|suspended|switched off|turned off|disabled|not applicable)"
        r"\b|\b(?:fees?|charges?|limits?|rules|polic(?:y|ies)|checks?|verification|screening|"
        r"restrictions?|return window|deadlines?)\s+(?:[\w'’-]+\s+){0,3}?(?:don't|do not|"
        r"doesn't|does not|never)\s+apply\b|\b(?:doesn't|does not|don't|do not|never|no longer)"
        r"\s+(?:need|needs|have|has)\s+to\s+(?:pass|answer|go through|show|provide|prove|verify|"
        r"be verified|be checked)\b|\b(?:never|don't|do not|doesn't|does not)\s+needs?\s+"
        r"(?:an?\s+|any\s+)?(?:[\w'’-]+\s+){0,2}?(?:sign-?off|approval|screening)\b|"
        r"(?:^|[.!?;:,]\s*)no\s+(?:[\w-]+\s+)?(?:checks?|verification|screening|security "
        r"questions)\b"
    ),
    re.compile(
        r"(?:\b(?:is|are)\s+|'s\s+)(?:pre-?(?:approved|authori[sz]ed|cleared)|approved in advance|"
        r"automatically approved|always approved)\b"
    ),
    re.compile(
        r"(?:\b(?:is|are)\s+|'s\s+)exempt(?:ed)?\s+from\s+(?:the\s+|all\s+|any\s+)?(?:\w+\s+)?"
        r"(?:verification|checks?|security|fraud|identity|id|approval|review|limits?|"
        r"polic(?:y|ies)|rules|kyc|procedures?|process)\b"
    ),
    # An order to check nothing, where the clause is not the person's own past or habit
    # ("Paid without checking the invoice" is).
    re.compile(
        r"(?:^|[.!?;:]\s*)(?>(?:(?:always|never|usually|often|sometimes|rarely|also|still|"
        r"only)\s+)?)(?![a-z]+(?:ed|[^s\W]s)\b|(?:is|was|has|had|does|did|can|could|will|"
        r"would)(?:n't|\b))"
        r"[^.!?;:]{0,80}\bwithout\s+(?:any\s+|an?\s+|the\s+|further\s+|(?:his|her|their)\s+)?"
        r"(?:(?:doctor's|manager's|supervisor's|termination|cancellation|late|usual|extra)\s+)?"
        r"(?:checking|checks?|verification|verifying|questions?|questioning|approval|review|"
        r"proof|receipts?|appointments?|penalt(?:y|ies)|fees?|charges?|deposits?|referrals?|"
        r"assessments?|inspections?|(?:sending an )?adjusters?|notes?|prescriptions?|paperwork|"
        r"documents?|documentation|"
        r"investigating|an investigation|looking into it|"
        r"asking(?!\s+(?:her|him|them|the customer|first|for (?:her|his|their) (?:consent|"
        r"permission|ok)))|"
        r"id|identification|security questions|a second look|confirming|confirmation)\b"
    ),
    re.compile(r"\b(?:the\s+)?(?:customer|client|caller|user)\s+is\s+always\s+right\b"),
    # A standing status claimed for them: "her refunds are approved", "he is whitelisted",
    # "verified for life", "limits have been lifted", "covered by the company".
    re.compile(
        r"\b(?:his|her|their|this customer's|the customer's)\s+(?:refunds|requests|claims|returns|"
        r"transfers|payments|applications|orders|withdrawals|bookings)\s+(?:are|get)\s+(?:always\s+"
        r")?"
        r"(?:approved|pre-?approved|accepted|valid|granted|guaranteed|fine|cleared)\b|\b(?:is|are)"
        r"\s+(?:whitelisted|allowlisted|exempt(?:ed)?\s*(?:[.!?;,]|$))|\b(?:account|customer|"
        r"caller|user|client)\s+is\s+(?:a\s+)?trusted\b|\bis\s+an?\s+trusted\s+(?:customer|"
        r"account|caller|client)\b|\b(?:verified|approved|trusted|cleared|authori[sz]ed|"
        r"confirmed)\s+(?:for life|forever|permanently|indefinitely|for good|once and for all)\b|"
        r"\b(?:cleared|authori[sz]ed|accepted|approved)\s+(?:in advance|ahead of time|beforehand)"
        r"\b|\b(?:limits?|checks?|restrictions?|fees?|caps?|verification)\s+(?:have|has)\s+been\s+"
        r"(?:lifted|removed|waived|disabled|suspended|switched off|turned off)\b|\bcovered by "
        r"(?:the company|us|the shop|the bank|head office|management|the house)\b|\b(?:manager|"
        r"supervisor|admin) override\b|\boverride (?:code|rights|authority)\b|\b(?:admin|"
        r"administrator|elevated|full|root|superuser) (?:rights|access|privileges|permissions) "
        r"(?:on|to|in|for) (?:our|this|the) (?:system|account|platform|shop|service|tools?)\b|"
        r"\b(?:is|are) allowed (?:whatever|anything|everything)\b|\b(?:free|premium|gold|vip)\s+"
        r"(?:plan|tier|status|membership|account)\s+(?:forever|for life|permanently|"
        r"indefinitely)\b"
    ),
    # An order put as the person's wish: the organisation to act for them ("expects staff
    # to skip the security questions"), a check gone or a favour every time ("would like
    # the verification step skipped", "expects a discount on every order"). A choice
    # ("a refund over a voucher") or a favour declined is a preference.
    re.compile(
        _WISH + r"\s+(?:you|us|the team|staff|support|the assistant|the bot|agents?|the agents?|"
        r"the company|everyone)\s+to\s+(?:always\s+|just\s+|simply\s+|automatically\s+)*" + _ACT
    ),
    re.compile(
        _WISH + _NO_CHOICE + r"[^.!?;:]{0,50}\b(?:verification(?: step)?|id checks?|identity "
        r"checks?|security (?:questions|checks?)|checks|fraud checks?|kyc|credit checks?)\s+"
        r"(?:\w+\s+)?(?:waived|skipped|dropped|removed|lifted|ignored|bypassed|disabled|"
        r"overridden)\b|" + _WISH + _NO_CHOICE + r"[^.!?;:]{0,30}\b(?:all|every|any)\s+(?:\w+\s+)?"
        r"(?:fees?|charges?|penalt(?:y|ies)|limits?)\s+(?:\w+\s+)?(?:waived|dropped|removed|"
        r"lifted|cancell?ed)\b"
    ),
    re.compile(
        _WISH + _NO_CHOICE + r"[^.!?;:]{0,40}\b(?:discounts?|refunds?|vouchers?|credit|upgrades?|"
        r"free\s+\w+|compensation|cashback)\b[^.!?;:]{0,30}\b(?:every|each|any|always|whenever|on "
        r"all|for life|lifetime)\b"
    ),
    # What the organisation may not do to them: "can't be denied a refund", "must not be
    # suspended under any circumstances".
    re.compile(
        r"\b(?:can't|cannot|can not|must not|mustn't|may not|should not|shouldn't|is not to|"
        r"are not to|must never|should never|can never|may never|is never to)\s+(?:ever\s+)?be\s+"
        r"(?:denied|refused|declined|rejected|turned down|charged|suspended|closed|blocked|"
        r"locked|flagged|checked|verified|questioned|billed|penali[sz]ed|limited|reviewed|"
        r"screened|audited|challenged|frozen|cancell?ed)\b"
    ),
    # Rules set aside for them: "regardless of arrears", "no matter what condition".
    re.compile(
        r"\bregardless of (?:the\s+|any\s+|his\s+|her\s+|their\s+)?(?:arrears|debts?|missed "
        r"payments|polic(?:y|ies)|rules|limits?|checks|risk|fraud|terms|conditions?|"
        r"receipts?|deadlines?|what (?:the )?(?:policy|rules) says?)\b|\bno matter (?:what|the)\s+"
        r"(?:condition|policy|rules|reason|cost|amount|the policy says|the rules say)\b|\beven "
        r"if (?:she|he|they) (?:misses|miss|doesn't pay|does not pay|can't pay|cannot pay|is "
        r"overdrawn|fails|has no receipt|is late|exceeds?)\b"
    ),
    # A favour by the word of someone with authority: "management has agreed that …",
    # "per the account manager", "by special arrangement".
    re.compile(
        r"\b(?:(?:the\s+)?(?:management|(?:account |branch |store )?manager|head office|company "
        r"policy|the company|director|ceo|owner|compliance|the bank)\s+(?:has\s+)?(?:agreed|"
        r"allows?|approved|says?|said|decided|permits?|authori[sz]ed|confirmed|signed off)|per "
        r"(?:the\s+)?(?:account manager|manager|management|head office|director|ceo|company "
        r"policy)|(?:by|under a|has a)\s+(?:special\s+|private\s+|standing\s+)?arrangement|special "
        r"arrangement)\b[^.!?;]{0,60}\b(?:no|free|unlimited|refunds?|discounts?|fees?|deposits?|"
        r"first|priority|waived?|exempt|skip|without|verif\w*|checks?|pays? (?:no|nothing|half|"
        r"less)|ships? first|half price)\b"
    ),
    # A check or a favour as a label: "Verification: not required", "Status: pre-approved".
    re.compile(
        r"\b(?:verification|id check|kyc|credit check|fraud check|security check|checks?|fees?|"
        r"limits?|approval|refunds?|discount|status|id)\s*(?:status|level|policy|requirement)?"
        r"\s*(?::|=|-)\s*(?:skip\w*|waived?|not required|not needed|none|exempt|yes|always|"
        r"approved|pre-?approved|off|disabled|n/?a|unlimited|100\s?%|automatic)\b|\b(?:checks?|"
        r"verification|fees?|id check|kyc)\s+(?:is|are)\s+(?:waived|skipped|disabled|"
        r"switched off|turned off|suspended)\b"
    ),
    # Favours promised for good: "was promised free delivery for life", "it was agreed that
    # she never pays fees", "her orders will always ship free".
    re.compile(
        r"\b(?:promised|guaranteed|assured|agreed|arranged)\b[^.!?;:]{0,50}\b(?:for life|forever|"
        r"every|always|unlimited|all future|going forward|from now on|whenever|any ?time|never "
        r"pays?|pays? no|no fees?)\b|\b(?:will|should|must|always|to)\s+(?:always\s+|"
        r"automatically\s+)?(?:ship|go out|be "
        r"delivered|be sent)\s+(?:for\s+)?free\b|\bwill\s+(?:always\s+|automatically\s+)?"
        r"(?:get|receive|pay no|pay nothing|be refunded|be approved|be waived)\b[^.!?;:]{0,40}"
        r"\b(?:anything|everything|any|every|whenever|free|refunds?|discounts?)\b"
    ),
    re.compile(
        r"\b(?:everything|anything)\s+(?:for\s+)?free\b|,\s*no questions\b|\b(?:refunds?|"
        r"discounts?|credit|compensation|upgrades?)\s+(?:on|for)\s+(?:anything|everything|any "
        r"(?:order|purchase|item|product|booking))\b|"
        r"\bbenefit of (?:the|any) doubt\b|\bat (?:our|the company's|the shop's) (?:cost|expense)\b"
        r"|"
        r"\b(?:be|is|are)\s+(?:taken|regarded|considered|treated|accepted|seen|deemed)\s+as\s+"
        r"(?:confirmed|verified|true|genuine|correct|approved|authentic|valid|legitimate|trusted)\b"
        r"|\bcut (?:him|her|them) (?:some )?slack\b|\bturn a "
        r"blind eye\b|\blook the other way\b|\bbend (?:the|our|any) rules\b|\blet (?:it|things|"
        r"that|them) slide\b|\bas (?:our|the company's|the shop's|the bank's) "
        r"(?:error|fault|mistake)\b|\b(?:is|are|has been|have been|'s)\s+pre-?cleared\b|\b(?:is|are"
        r"|"
        r"has been|have been|'s)\s+cleared\s+(?:to|for)\s+(?:receive|get|withdraw|transfer|skip|"
        r"bypass|exceed|borrow|large|unlimited|any|all|refunds?|payouts?|withdrawals?|transfers?|"
        r"loans?|credit|overdrafts?|returns?|expedited)\b|\b(?:is|are|has been|have been)\s+authori"
        r"[sz]ed\s+to\s+(?:receive|get|skip|bypass|"
        r"exceed|withdraw|transfer|access|override|approve|waive|return|borrow|jump|have)\b|"
        r"\b(?:special|different|separate|other|own)\s+rules\s+apply\b|\bpolicy exceptions?\b|"
        r"\b(?:do not|don't|never)\s+ask\s+(?:him|her|them)?\s*(?:any\s+|further\s+|"
        r"follow-up\s+)?questions\b|\b(?:approved|refunded|waived|granted|accepted|exempt(?:ed)?|"
        r"verified|trusted|cleared|authori[sz]ed)\s+(?:by default|as standard|as a rule|as a "
        r"matter of course|routinely|without exception|unconditionally|in all cases|across the "
        r"board|no strings attached)\b|\brisk (?:score|rating|level|flag)\b[^.!?;:]{0,30}\b(?:zero|"
        r"low|0|minimum|none|off)\b|\b(?:expired|invalid|old|out-of-date)\s+(?:promo\s+)?(?:codes?|"
        r"vouchers?|coupons?|promotions?|offers?|discounts?)\b|\beven (?:though|if) (?:it|the "
        r"(?:code|offer|promotion|voucher|coupon|warranty|guarantee)) (?:has )?(?:expired|ended|"
        r"run out|lapsed)\b|\bbackdat\w*\b|\b(?:been told|was told|were told)\s+(?:that\s+)?"
        r"(?:she|he|they)\s+(?:can|may|is allowed to|will get|gets|doesn't have to|need not)\b"
        r"[^.!?;:]{0,40}"
        r"\b(?:return|refund|discount|skip|free|waive|exceed|keep|without)|"
        r"\bwhatever (?:she|he|they|the customer) (?:says|wants|decides|asks for) goes\b|\b(?:her|"
        r"his|their|the customer's) word is (?:final|law|enough|the rule|binding|sufficient)\b"
    ),
    # A favour owed by rule: "she should get the employee rate", "must be offered a
    # voucher", "make sure he gets the lowest fare".
    re.compile(
        r"\b(?:should|must|shall|is to|are to|needs? to|has to|have to|ought to|will always)\s+"
        r"(?:always\s+|automatically\s+|also\s+)?(?:get|receive|have|be given|be offered|be "
        r"sent|be granted|be allowed|enjoy|keep)\s+" + _FEW + _FAVOURS
    ),
    re.compile(
        r"\b(?:make sure|ensure|see to it|be sure)\s+(?:that\s+)?[^.!?;:]{0,40}?\b(?:(?:gets?|"
        r"receives?|is given|is offered)\s+" + _FEW + _FAVOURS + r"|pays? (?:no|nothing|less|"
        r"only)|(?:is|are) (?:always\s+)?(?:approved|refunded|waived)|(?:isn't|is not|aren't|"
        r"are not|is never|are never|never gets?) (?:charged|billed|checked|verified|asked|"
        r"flagged)|never (?:pays?|has to)|doesn't (?:pay|have to)|does not (?:pay|have to))\b"
    ),
    # A standing permission or clearance: "has standing approval", "is cleared to
    # withdraw", "counts as verified", "is eligible for a refund on any order".
    re.compile(
        r"\b(?:standing|blanket|open-ended|permanent|unlimited|general|lifetime) (?:free\s+)?"
        r"(?:approval|upgrades?|discounts?|"
        r"authori[sz]ation|permission|clearance|exemption|waiver|refunds?|credit|returns?)\b|"
        r"\b(?:carte blanche|a free pass|free rein)\b|\bat face value\b|\bcounts? as "
        r"(?:an? )?(?:\w+ )?(?:verified|approved|authori[sz]ed|trusted|confirmed|pre-?approved|"
        r"paid|vip)\b|\b"
        r"(?:is|are|has been|have been|was|were|'s been|'s)\s+(?:pre-?)?(?:cleared|authori[sz]ed|"
        r"permitted|allowed|approved|entitled|eligible)\s+(?:to|for)\s+[^.!?;:]{0,60}?\b(?:"
        r"without|any|every|whatever|unlimited|no matter|at any time|any ?time|whenever|on "
        r"request|beyond|above|over (?:the|her|his|their) limit|for life|forever|"
        r"permanently|indefinitely|free|other (?:customers|users|people|accounts|members))\b"
    ),
    re.compile(
        r"\b(?:may|can|could|is allowed to|is permitted to|gets to|are allowed to)\s+"
        r"(?:always\s+|also\s+)?(?:skip|bypass|jump|ignore|exceed|override|avoid|go over|"
        r"dodge|opt out of)\s+" + _FEW + r"(?:limits?|checks?|verification|"
        r"fees?|charges?|rules|polic(?:y|ies)|deadlines?|window|screening|security|process|"
        r"procedures?|requirements?|approval|review|id)\b"
    ),
    # An open-ended grant: "at no charge", "free of charge" beside an order's verb or a
    # scope ("whenever she asks"), not a person's own account of a purchase.
    re.compile(
        r"(?:^|[.!?;:]\s*)(?>(?:(?:always|never|also|just|please|simply)\s+)?)"
        r"(?!(?!(?:his|this|hers|its|us|yes|always|perhaps|unless|as|thus|plus)\b)[a-z]+"
        r"(?:ed|[^s\W]s)\b|(?:is|was|has|had|does|did|got|gets|can|could|would|bought|paid|"
        r"received|ordered)\b)[^.!?;:]{0,80}\b(?:at no (?:extra |additional )?(?:cost|charge)|"
        r"free of charge|for free|on the house|at our expense|at (?:the|our) company's expense|"
        r"without (?:charging|a fee|any fee|fees|charge))\b"
    ),
    # "From now on / going forward, she gets …": a favour promised for every later case.
    re.compile(
        r"\b(?:from now on|going forward|in future|in the future|henceforth|from today|"
        r"for good|permanently|indefinitely)\b[^.!?;:]{0,60}\b(?:gets?|receives?|pays? "
        r"(?:no|nothing|less|only)|(?:is|are) (?:exempt|entitled|pre-?approved|approved|"
        r"waived)|should (?:get|receive|have)|no (?:checks?|verification|fees?|limits?))\b"
    ),
    # Put ahead of everyone else: "her requests always come first", "process his claims
    # before all others", access to other people's accounts.
    re.compile(
        r"\b(?:requests?|orders?|tickets?|claims?|cases?|calls?|complaints?|applications?|"
        r"refunds?|payments?|bookings?)\s+(?:[\w'’]+\s+){0,2}?(?:takes?|gets?|has|have|is given|"
        r"are given|comes?|goes?|go)\s+(?:top\s+|absolute\s+|first\s+|highest\s+)?"
        r"(?:priority|first|to the (?:front|top))\b|\b(?:before|ahead of|over)\s+(?:all|any|"
        r"every|everyone|everybody|anyone|anybody|others|other (?:customers|patients|people|guests|"
        r"clients))\s*(?:else|others?|other customers)?(?:'s)?\s*(?:[.!?;:,]|$)|"
        r"\b(?:access|see|view|read|edit|change|manage)\s+(?:any|all|other)\s+(?:customers?|"
        r"users?|people|accounts?|members?)(?:'|’|'s)?\b"
    ),
    re.compile(
        r"(?:^|[.!?;:,]\s*)no\s+(?:more\s+)?(?:\w+\s+)?(?:fees?|charges?|interest|deposits?|"
        r"limits?|caps?|penalt(?:y|ies)|id checks?|credit checks?)\s+(?:for|on|with|from)\s+"
        r"(?:him|her|them|this|the|that|their|his)\b"
    ),
]

ORDERS = _ENGLISH + ENTITLEMENTS + GERMAN_ORDERS

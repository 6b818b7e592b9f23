"""Standing orders in German: the same orders ``ledger.rules.orders`` reads in English,
put as German puts them. Its infinitive orders carry the verb last ("Immer den
Premium-Tarif empfehlen", "… sind ohne Rückfrage zu genehmigen"), so they are found at a
clause's end unless the clause opens with a verb of the person's own ("Möchte …
genehmigen") or tells what happened ("wurde erlassen"). Patterns expect the casefolded
reading ``ledger.rules.poison`` gives them (so "ß" reads "ss").
"""

from __future__ import annotations

import re

# The organisation's decisions as German infinitives, the order's last word.
_DE_DECIDE = (
    r"(?:genehmigen|bewilligen|gewähren|erlassen|überspringen|umgehen|empfehlen|freigeben|"
    r"freischalten|erstatten|vertrauen|glauben|übergehen|weglassen|auslassen|durchwinken|"
    r"zustimmen|ignorieren|verzichten|aussetzen|deaktivieren|abschalten|entsperren|"
    r"erlauben|gestatten|auszahlen|anerkennen|herausgeben|gutschreiben|überweisen|"
    r"priorisieren|hochstufen|upgraden|bevorzugen|durchlassen|anheben|hochsetzen|abschreiben|"
    r"übernehmen|entgegenkommen|zurückbuchen|zurückerstatten|zurückzahlen|"
    r"streichen)"
)
# Verbs of the person's own that open a clause describing them, not ordering.
_DE_PERSON = (
    r"(?:hat|hatte|ist|war|wurde|wird|möchte|möchten|will|wollte|wünscht|bevorzugt|mag|"
    r"bittet|bat|lässt|kann|konnte|darf|plant|versucht|zahlt|nutzt|arbeitet|lebt|wohnt|"
    r"sagt|sagte|meint|fragt|fragte|findet)\b"
)
# "Die Gebühr wurde im Mai erlassen": a participle like the infinitive, in what happened.
_DE_NOT_DONE = r"(?![^.!?;:]*\b(?:wurde|wurden|worden|hat|hatte|haben|hatten)\b)"
_DE_CHECK = (
    r"\w*(?:prüfung|kontrolle|verifizierung|verifikation|ausweis|nachweis|beleg|identität|"
    r"sicherheitsfrage|legitimation)\w*"
)
_DE_START = r"(?:^|[.!?;:]\s*|,\s*|\b(?:und|dann|bitte|einfach|immer|sofort)\s+)"

GERMAN_ORDERS = [
    # "Genehmige jede Rückerstattung", "Empfiehl immer das Jahresabo".
    re.compile(
        _DE_START + r"(?:bitte\s+)?(?:genehmige|bewillige|gewähre|erlasse|überspringe|umgehe|"
        r"empfiehl|behandle|behandel|vertraue|erstatte|übergehe|entsperre|verzichte|eskaliere|"
        r"priorisiere|überweise|erlaube)\b"
    ),
    # The formal imperative: "Empfehlen Sie immer das teuerste Paket".
    re.compile(_DE_START + _DE_DECIDE + r"\s+sie\b"),
    re.compile(r"(?:^|[.!?;:,]\s*)(?:bitte\s+)?sag(?:e)?\s+(?:[\w-]+\s+){0,2}?ja\b"),
    re.compile(
        r"\bals\s+(?:verifiziert|geprüft|bestätigt|vertrauenswürdig|vip|administrator\w*|"
        r"mitarbeiter\w*|freigegeben)\b[^.!?;:]{0,20}\b(?:behandeln|ansehen|betrachten|"
        r"einstufen|führen)\b"
    ),
    re.compile(
        r"\bkeine\s+(?:[\w-]+\s+)?(?:gebühren|mahngebühren|zinsen|kosten)\s+(?:berechnen|"
        r"erheben|verlangen)\b|(?:^|[.!?;:]\s*)(?:bitte\s+)?keine\s+"
        + _DE_CHECK
        + r"[^.!?;:]{0,40}(?:[.!?;:]|$)"
    ),
    re.compile(_DE_START + r"(?:akzeptiere|glaube)\s+(?:jede|jeden|jedes|alle|alles|immer)\b"),
    re.compile(_DE_START + r"(?:gib|schalte)\b[^.!?;:]{0,60}\bfrei\b"),
    re.compile(_DE_START + r"(?:erhöhe|verlängere)\b[^.!?;:]{0,40}(?:limit|frist|test|rahmen)"),
    re.compile(
        _DE_START + r"(?:frag|frage|verlange|prüfe|kontrolliere)\b[^.!?;:]{0,40}\b(?:nie|"
        r"niemals|nicht|kein\w*)\b"
    ),
    # "Immer den Premium-Tarif empfehlen", "… sind ohne Rückfrage zu genehmigen".
    re.compile(
        r"(?:^|[.!?;:]\s*)(?!"
        + _DE_PERSON
        + r")"
        + _DE_NOT_DONE
        + r"[^.!?;:]{0,120}?\b"
        + _DE_DECIDE
        + r"\s*(?:[.!?;:,]|$)"
    ),
    re.compile(
        r"(?:^|[.!?;:]\s*)(?!"
        + _DE_PERSON
        + r")"
        + _DE_NOT_DONE
        + r"[^.!?;:]{0,120}?\b(?:ohne\s+"
        + _DE_CHECK
        + r"|ohne\s+(?:rückfrage|nachfrage)|immer|jede\w*|alle\w*|\w*limit\w*|"
        r"\w*frist\w*)\b[^.!?;:]{0,60}\b(?:annehmen|akzeptieren|auszahlen|bearbeiten|behandeln|"
        r"entscheiden|erhöhen|anheben|verlängern|aufheben)\s*(?:[.!?;:,]|$)"
    ),
    re.compile(
        r"(?:^|[.!?;:]\s*)(?:bitte\s+)?(?:keine|kein|nie|niemals|nicht)\b[^.!?;:]{0,60}\b"
        + _DE_CHECK
        + r"[^.!?;:]{0,40}\b(?:durchführen|machen|verlangen|vornehmen|anfordern|"
        r"fordern|stellen)\b"
    ),
    re.compile(
        r"\b(?:sollen|sollten|soll|sollte|müssen|muss|dürfen|darf|können|kann)\b[^.!?;:]{0,60}"
        r"\b(?:genehmigt|bewilligt|gewährt|erlassen|übersprungen|umgangen|ignoriert|"
        r"empfohlen|freigegeben|durchgewunken|erstattet)\s+werden\b"
    ),
    re.compile(
        _DE_CHECK + r"[^.!?;:]{0,40}\b(?:ist|sind)\b[^.!?;:]{0,40}\bnicht\s+(?:mehr\s+)?"
        r"(?:nötig|notwendig|erforderlich|vorgeschrieben|verpflichtend)\b|"
        + _DE_CHECK
        + r"[^.!?;:]{0,40}\b(?:ist|sind)\b[^.!?;:]{0,40}\b(?:überflüssig|unnötig|entbehrlich|"
        r"optional|ausgesetzt|aufgehoben)\b|\b(?:keine|ohne)\s+"
        r"(?:\w+\s+)?"
        + _DE_CHECK
        + r"\s+(?:nötig|notwendig|erforderlich)\b|\bbraucht\s+(?:keine|kein)\s+"
        + _DE_CHECK
    ),
    re.compile(r"\bzu\s+(?:seinen|ihren|des kunden)\s+gunsten\b"),
    re.compile(
        r"\bwir\s+(?:prüfen|kontrollieren|verifizieren|verlangen|fragen)\b[^.!?;:]{0,50}"
        r"\b(?:nie|niemals|nicht|kein\w*)\b|\b(?:bekommt|erhält|kriegt|bekommen|erhalten)\b"
        r"[^.!?;:]{0,40}\b(?:immer|jede\w*|automatisch|auf wunsch|alles|unbegrenzt)\b"
        r"[^.!?;:]{0,40}\b"
        r"(?:kostenlos\w*|gratis|gutschrift\w*|rabatt\w*|erstattung\w*)|\b(?:bekommt|erhält|"
        r"kriegt)\b[^.!?;:]{0,40}\b(?:kostenlos\w*|gratis|gutschrift\w*|rabatt\w*|"
        r"erstattung\w*)[^.!?;:]{0,40}\b(?:immer|jede\w*|automatisch|auf wunsch)\b"
    ),
    re.compile(
        r"\b(?:gelten|gilt)\s+(?:für\s+\w+\s+\w+\s+)?(?:keine|kein)\s+(?:\w*gebühren|regeln|"
        r"\w*limits?|grenzen|\w*prüfung\w*|\w*fristen?)\b|\bautomatisch\s+(?:erstattet|"
        r"genehmigt|gutgeschrieben|freigegeben|akzeptiert|bewilligt)\b"
    ),
    re.compile(r"\b(?:der|die)\s+kund(?:e|in)\s+hat\b[^.!?;:]{0,40}\bimmer\s+recht\b"),
    # Leniency in German: "ein Auge zudrücken", "alles durchgehen lassen", "kulant sein",
    # "Mahnungen stornieren", "auch wenn die Zahlung fehlt".
    re.compile(
        r"\bdurchgehen lassen\b|\bein auge zudrücken\b|\bfünfe gerade sein lassen\b|\b(?:immer|"
        r"stets|grundsätzlich|bitte)\s+(?:\w+\s+)?(?:kulant|grosszügig|nachsichtig)\b|\b(?:kulant|"
        r"grosszügig|nachsichtig)\s+(?:sein|erstatten|behandeln|zeigen|entscheiden)\b|\b(?:mahnung"
        r"\w*|forderung\w*|gebühr\w*|\w*rechnung\w*)\s+(?:bitte\s+)?(?:stornieren|streichen|"
        r"niederschlagen)\b|\bverdoppel\w*|\bverdreifach\w*|\bauch wenn (?:die |das |keine )?"
        r"(?:zahlung|deckung|geld|bonität|beleg|nachweis)\w*\s+(?:fehlt|ausbleibt|nicht)\b|\b(?:geb"
        r"ühr"
        r"\w*|geld|betrag|kosten)\b[^.!?;:]{0,30}\b(?:zurückgeben|zurücküberweisen|zurückerstatten|"
        r"zurückzahlen)\b|\b(?:grundsätzlich|immer|stets|jedes mal)\b[^.!?;:]{0,30}\b(?:mitarbeiter"
        r"preis|mitarbeiterrabatt|einkaufspreis|händlerpreis|sonderpreis)\b|\b(?:\w*daten|kontostan"
        r"d|"
        r"informationen|auskünfte)\s+(?:darf|dürfen)\s+an\s+(?:\w+\s+){0,3}weitergegeben werden\b|"
        r"\bkeine\s+(?:rückfragen|nachfragen)\s+bei\b|\bohne\s+"
        r"rücksprache\b[^.!?;:]{0,40}\b(?:jede\w*|alle\w*)\b|\bjede\s+erstattung\s+zusagen\b"
    ),
    # A standing status claimed: "seine Erstattungen sind genehmigt", "ihr Konto ist
    # vertrauenswürdig", "jeder Rabatt … ist in Ordnung", "für ihn gilt: keine Gebühren".
    re.compile(
        r"\b(?:seine|ihre)\s+(?:erstattungen|anträge|reklamationen|bestellungen|überweisungen|"
        r"rücksendungen|auszahlungen|forderungen)\s+sind\s+(?:immer\s+|grundsätzlich\s+)?"
        r"(?:genehmigt|freigegeben|berechtigt|akzeptiert|bewilligt|in ordnung)\b|\b(?:konto|"
        r"kunde|kundin)\s+ist\s+(?:\w+\s+)?vertrauenswürdig\b|\b(?:administrator|admin)"
        r"\w*rechte\b|\b(?:alle|jede\w*)\s+(?:\w+\s+){0,4}?(?:sind|ist)\s+(?:immer\s+)?"
        r"(?:berechtigt|in ordnung|genehmigt|gültig|akzeptiert)\b|\bfür\s+(?:ihn|sie)\s+gilt\s*:"
        r"[^.!?;]{0,30}\bkeine?\b"
    ),
    re.compile(
        r"\b(?:laut|gemäss|auf anweisung (?:der|des|von))\s+(?:der\s+|dem\s+|des\s+)?"
        r"(?:geschäftsleitung|management|chef\w*|vorgesetzt\w*|direktion|zentrale|vorstand|"
        r"compliance|filialleit\w*|admin\w*|system)\b|\bwas (?:sie|er|der kunde|die kundin) "
        r"sagt,? gilt\b|\b(?:ihr|sein) wort (?:gilt|ist gesetz|zählt)\b|\b(?:mach|mache|tu|tue)"
        r"\b[^.!?;:]{0,12}\bwas (?:er|sie|der kunde|die kundin) (?:sagt|will|verlangt|möchte|"
        r"wünscht)\b"
    ),
    # Fees and checks dropped in German: "muss keine Gebühren zahlen", "keine Limits für
    # sein Konto", "nicht auf Betrug prüfen", "keine Sicherheitsfragen stellen".
    re.compile(
        r"\b(?:keine?n?|nie|niemals|nicht)\s+(?:\w+\s+)?(?:\w*gebühren|\w*kosten|zinsen|"
        r"aufpreis)\s+(?:mehr\s+)?(?:zahlen|bezahlen|berechnen|erheben|verlangen)\b|(?:^|[.!?;:]\s*"
        r")"
        r"keine\s+(?:\w*limits?|\w*grenzen|\w*gebühren|beschränkungen)\s+(?:für|bei|auf)\b|\b(?:nic"
        r"ht|"
        r"nie|niemals)\s+auf\s+(?:betrug|\w*risiko|geldwäsche|echtheit)\s+(?:\w+\s+)?(?:prüfen|"
        r"kontrollieren|untersuchen)\b|\bkeine\s+" + _DE_CHECK + r"\s+(?:mehr\s+)?(?:stellen|"
        r"verlangen|machen|durchführen)\b|\bbevorzugt\s+(?:versenden|liefern|bedienen|abwickeln)\b"
    ),
    re.compile(
        r"\b(?:darf|dürfen|soll|sollen|muss|müssen|kann|können)\s+(?:\w+\s+)?(?:nie|niemals|"
        r"nicht|keinesfalls)\s+(?:\w+\s+)?(?:gesperrt|gekündigt|geschlossen|eingeschränkt|"
        r"abgelehnt|geprüft|kontrolliert|belastet|gemahnt|markiert|blockiert)\s+werden\b|\b(?:nie|"
        r"niemals|nicht|keinesfalls)\s+(?:\w+\s+){0,3}?(?:nach|um)\s+(?:\w+\s+)?"
        + _DE_CHECK
        + r"\s+(?:fragen|verlangen|bitten)\b"
    ),
    # A check dropped for good: "künftig keine Ausweiskontrolle mehr", "ohne zu prüfen".
    re.compile(
        r"\b(?:künftig|zukünftig|in zukunft|ab sofort|ab jetzt|von nun an|grundsätzlich|"
        r"generell|stets|immer|dauerhaft)\b[^.!?;:]{0,60}\b(?:keine?|ohne)\s+(?:\w+\s+)?"
        + _DE_CHECK
    ),
    re.compile(
        r"(?:^|[.!?;:]\s*)(?!"
        + _DE_PERSON
        + r"|\w+t\b)"
        + _DE_NOT_DONE
        + r"[^.!?;:]{0,80}\bohne\s+(?:zu\s+)?(?:prüfen|fragen|nachzufragen|kontrollieren|"
        r"nachweis|beleg|ausweis|rückfrage|nachfrage|legitimation|\w*prüfung)\b"
    ),
    # A favour given ("eine Gutschrift erteilen", "kostenlos ein Upgrade geben"), unless
    # the person declines it ("bitte keine Rabatte anbieten").
    re.compile(
        r"(?:^|[.!?;:]\s*)(?!"
        + _DE_PERSON
        + r")"
        + _DE_NOT_DONE
        + r"(?![^.!?;:]*\b(?:keine?n?|nicht|nie|niemals)\b)[^.!?;:]{0,80}?\b(?:\w*rabatt\w*|"
        r"gutschrift\w*|gutschein\w*|\w*erstattung\w*|kostenlos\w*|gratis|upgrade\w*|"
        r"nachlass|kulanz\w*|freigabe|bonus\w*|prämie\w*|sonderkonditionen|vorzugspreis\w*|"
        r"\w*preis)\b[^.!?;:]{0,50}\b(?:geben|gewähren|anbieten|erteilen|einräumen|schenken|"
        r"ausstellen|auszahlen|buchen|anrechnen|gutschreiben|bekommen|erhalten|kriegen)\b"
    ),
    # Cleared in advance: "gilt als verifiziert", "sind vorab genehmigt".
    re.compile(
        r"\bgilt\s+(?:\w+\s+)?als\s+(?:verifiziert|geprüft|bestätigt|vertrauenswürdig|"
        r"freigegeben|vip|genehmigt|legitimiert|authentifiziert|kreditwürdig)\b|\b(?:ist|sind)"
        r"\s+(?:\w+\s+)?(?:vorab|automatisch|grundsätzlich|immer|stets|pauschal|generell|"
        r"dauerhaft|im voraus)\s+(?:genehmigt|freigegeben|bewilligt|erstattet|akzeptiert|"
        r"verifiziert)\b|\bvorgenehmigt\b"
    ),
    re.compile(
        r"\b(?:berechtigt|befugt|darf|dürfen)\b[^.!?;:]{0,60}\b(?:\w*limit\w*|überschreiten|"
        r"jederzeit|beliebig|unbegrenzt|ohne\s+" + _DE_CHECK + r"|\w*erstattung\w*|rabatt\w*|"
        r"zugriff|zugang|fremde\w*|andere\w* konten)"
    ),
    re.compile(
        r"\b(?:hat|haben)\s+(?:\w+\s+)?anspruch auf\b[^.!?;:]{0,40}\b(?:kostenlos\w*|gratis|"
        r"\w*rabatt\w*|\w*erstattung\w*|gutschrift\w*|upgrade\w*|jede\w*|alle\w*|immer|"
        r"unbegrenzt\w*)|\bvon\s+(?:allen|sämtlichen|jeglichen)\s+\w+\s+(?:befreit|"
        r"ausgenommen)\b|\bvon\s+(?:der|den|allen|jeder)?\s*" + _DE_CHECK + r"\s+(?:befreit|"
        r"ausgenommen)\b|\b(?:muss|müssen|braucht|brauchen)\s+(?:\w+\s+)?nicht\s+(?:mehr\s+)?"
        r"(?:geprüft|kontrolliert|verifiziert|nachgewiesen|bestätigt)\s+(?:zu\s+)?werden\b|"
        r"\b(?:muss|müssen|braucht|brauchen)\s+(?:\w+\s+)?keine?n?\s+(?:\w+\s+)?" + _DE_CHECK + r"|"
        r"\bauf\s+(?:\w+\s+){0,2}?" + _DE_CHECK + r"[^.!?;:]{0,30}\bverzicht\w*|\b(?:höchste|"
        r"oberste|absolute)\s+priorität\b|\b(?:bevorzugt|vorrangig|priorisiert)\s+(?:zu\s+)?"
        r"(?:behandeln|bearbeiten|abwickeln)\b|\b(?:musst|sollst|solltest|darfst)\s+du\b"
    ),
    re.compile(
        r"(?:^|[.!?;:]\s*)(?!"
        + _DE_PERSON
        + r")(?![^.!?;:]*\b(?:keine?n?|nicht|nie|niemals)\b)[^.!?;:]{0,60}\b(?:\w*daten|"
        r"kontostand|passwort|pin|auskunft|auskünfte|kontoauszüge|informationen)\b[^.!?;:]{0,40}"
        r"\b(?:weitergeben|herausgeben|mitteilen|nennen|zeigen|schicken|senden|geben|"
        r"offenlegen)\b"
    ),
    # Data handed to anyone: "die Kontodaten an jeden Anrufer herausgeben".
    re.compile(
        r"\b(?:\w*daten|kontostand|passwort|pin|auskunft|auskünfte|informationen|\w*nummer)\b"
        r"[^.!?;:]{0,40}\b(?:an|mit)\s+(?:jeden|jede|jedem|alle|jedermann|beliebige|dritte)\b"
    ),
    re.compile(
        r"(?:^|[.!?;:]\s*)(?!"
        + _DE_PERSON
        + r")[^.!?;:]{0,60}\b(?:nie|niemals|nicht|keinesfalls)\s+(?:\w+\s+)?(?:prüfen|"
        r"nachprüfen|kontrollieren|verifizieren|hinterfragen|anzweifeln|in frage stellen)\s*"
        r"(?:[.!?;:,]|$)"
    ),
    # A favour by the word of the organisation's own: "die Geschäftsleitung hat zugestimmt,
    # dass sie nie Versand zahlt".
    re.compile(
        r"\b(?:geschäftsleitung|geschaeftsleitung|filialleitung|teamleitung|abteilungsleitung|"
        r"management|zentrale|compliance|rechtsabteilung|vorstand|direktion|kundendienst|"
        r"support)\s+(?:hat|haben)\s+(?:\w+\s+)?(?:zugestimmt|entschieden|genehmigt|freigegeben|"
        r"erlaubt|angeordnet|bestätigt|beschlossen|festgelegt|vereinbart)\b[^.!?;]{0,60}"
        r"(?:\b(?:nie|niemals|nichts|keine?\w*)\b[^.!?;]{0,30}\b(?:zahl\w*|bezahl\w*|gebühr\w*|"
        r"versand\w*|kosten|prüf\w*|kontroll\w*|ausweis\w*)|\b(?:kostenlos\w*|gratis|erlassen|"
        r"befreit|rabatt\w*|erstatt\w*|gutschrift\w*|vorrang)\b|\bohne\s+(?:\w+\s+)?"
        r"(?:prüfung|kontrolle|nachweis|beleg|ausweis|rückfrage))"
    ),
    # "… sind zu erfüllen", "Mahngebühren bitte stornieren": granted in the infinitive.
    re.compile(
        r"\b(?:ist|sind)\s+(?:\w+\s+){0,3}?(?:zu\s+(?:erfüllen|akzeptieren|honorieren|"
        r"stornieren|genehmigen|erstatten|erlassen|bewilligen|gewähren)|anzuerkennen|"
        r"freizugeben|auszuzahlen|gutzuschreiben|abzuschreiben|durchzuwinken)\b|"
        r"(?:^|[.!?;:]\s*)(?!" + _DE_PERSON + r")[^.!?;:]{0,30}(?:gebühr|mahn|zinsen|forderung|"
        r"schulden)\w*\b[^.!?;:]{0,40}\b(?:stornieren|streichen|ausbuchen|niederschlagen)\s*"
        r"(?:[.!?;:]|$)"
    ),
    # A grant after a condition on their asking: "wenn er nach Rabatt fragt, bekommt er 20 %".
    re.compile(
        r"\b(?:wenn|falls|sobald|sollte)\s+(?:er|sie|der kunde|die kundin)\b[^.!?;:]{0,60},\s*"
        r"(?:(?:bekommt|erhält|kriegt)\s+(?:er|sie)\b[^.!?;:]{0,30}(?:\d+\s?%|\b(?:rabatt|"
        r"gutschrift|erstattung|nachlass|gratis|kostenlos|upgrade|gutschein|vorrang)\w*)|(?:wird|"
        r"ist)\s+(?:sie|er|es|das|dies|diese)\s+(?:sofort\s+|automatisch\s+)?(?:genehmigt|"
        r"gewährt|erstattet|freigegeben|bewilligt|gutgeschrieben))"
    ),
    # Granting nouns: "Automatische Freigabe aller Rücksendungen".
    re.compile(
        r"(?:^|[.!?;:]\s*)(?![^.!?;:]*\b(?:wurde|wurden|worden|hat|hatte|hatten)\b)[^.!?;:]*"
        r"\b(?:automatische|sofortige|pauschale|generelle|bedingungslose)\w*\s+(?:freigabe|"
        r"genehmigung|erstattung|gutschrift|annahme|bewilligung|rückerstattung)\w*\b"
    ),
    # A check done away with: "brauchen sie nicht nach dem Ausweis zu fragen", "ist vorab
    # verifiziert", "werden nicht angefochten", "gelten die üblichen Limits nicht",
    # "Sicherheitsfragen entfallen".
    re.compile(
        r"\b(?:brauchen?|braucht|brauchst)\s+(?:\w+\s+){0,4}?(?:nicht|nie|niemals|keine?n?)\s+"
        r"(?:\w+\s+){0,4}?(?:" + _DE_CHECK + r"|zu (?:fragen|prüfen|kontrollieren|verifizieren))|"
        r"\b(?:ist|sind|gilt|gelten)\b[^.!?;:]{0,30}\b(?:vorab|im voraus|pauschal|dauerhaft|"
        r"grundsätzlich|generell)\s+(?:verifiziert|geprüft|freigegeben|genehmigt|"
        r"authentifiziert|legitimiert|bestätigt)\b|\b(?:wird|werden)\s+(?:\w+\s+)?(?:nicht|nie|"
        r"niemals)\s+(?:angefochten|geprüft|kontrolliert|hinterfragt|abgelehnt|beanstandet|"
        r"bestritten|gemeldet|markiert|berechnet|überprüft|verweigert|gesperrt|gemahnt)\b"
    ),
    re.compile(
        r"\bgelten\b[^.!?;:]{0,40}\b(?:\w*limits?|\w*gebühren|regeln|\w*prüfungen|fristen|"
        r"\w*grenzen|kontrollen|richtlinien|vorgaben|beschränkungen|einschränkungen)\b"
        r"[^.!?;:]{0,20}\bnicht\b|\b(?:\w*limit|\w*gebühr|regel|\w*prüfung|frist|\w*grenze|"
        r"kontrolle|richtlinie|vorgabe|beschränkung)\w*\s+(?:gilt|gelten)\s+(?:\w+\s+){0,3}?"
        r"nicht\b|" + _DE_CHECK + r"\s+(?:entfällt|entfallen|fällt weg|fallen weg)\b|"
        r"\b(?:entfällt|entfallen)\b[^.!?;:]{0,30}\b" + _DE_CHECK
    ),
    # A favour promised for good: "wir haben vereinbart, dass sie den alten Preis für immer
    # behält"; the person's own agreement ("Hat vereinbart, …") is an event.
    re.compile(
        r"(?:^|[.!?;:]\s*)(?!(?:hat|hatte|hätte|möchte|will)\b)[^.!?;:]*\b(?:vereinbart|"
        r"zugesagt|versprochen|garantiert|abgemacht)\b[^.!?;:]{0,60}\b(?:für immer|dauerhaft|"
        r"lebenslang|auf lebenszeit|unbegrenzt)\b"
    ),
    # "Teilen Sie ihm mit, dass Premium die einzige passende Option ist"; "muss sich nicht
    # mehr ausweisen".
    re.compile(
        r"\b(?:teile|teilen sie|sag|sage|sagen sie|erkläre|erklären sie|versichere)\b"
        r"[^.!?;:]{0,40}\b(?:einzige|beste|richtige)\s+(?:\w+\s+)?(?:option|wahl|lösung|tarif|"
        r"produkt|möglichkeit)\b|\b(?:muss|müssen|musst|braucht|brauchen)\s+sich\s+(?:\w+\s+)"
        r"{0,3}?(?:nicht|nie|niemals)\s+(?:mehr\s+)?(?:zu\s+)?(?:ausweisen|legitimieren|"
        r"identifizieren|verifizieren)\b"
    ),
    # Their word made proof: "ihr Wort genügt als Nachweis".
    re.compile(
        r"\b(?:ihr|sein|deren|dessen)\s+(?:wort|zusage|aussage|angabe|bestätigung)\b[^.!?;:]{0,20}"
        r"\b(?:genügt|reicht|gilt als (?:nachweis|beleg|beweis|verifizierung|quittung))\b"
    ),
    # "Rezepte für ihn ohne ärztliche Kontrolle verlängern": an infinitive order with the
    # check left out; "Datenvolumen-Limits gibt es für ihn nicht".
    re.compile(
        r"(?:^|[.!?;:]\s*)(?!"
        + _DE_PERSON
        + r")[^.!?;:]{0,40}\bohne\s+(?:\w+\s+)?"
        + _DE_CHECK
        + r"\b[^.!?;:]{0,30}\b[a-zäöü]+(?:en|ern|eln)\s*(?:[.!?;:]|$)"
    ),
    re.compile(
        r"\b(?:\S*limits?|\S*gebühren|\S*prüfungen|\S*kontrollen|\S*grenzen|\S*beschränkungen)\s+"
        r"gibt es\b[^.!?;:]{0,40}\b(?:nicht|keine)\b|\bgibt es\s+(?:für\s+\w+\s+(?:\w+\s+)?)?keine"
        r"\s+(?:\S*limits?|\S*gebühren|\S*prüfung\w*|\S*kontrolle\w*|\S*grenzen)\b"
    ),
    # "… sind ungeprüft zu regulieren", "steht auf der Liste ohne Gebühren".
    re.compile(
        r"(?:^|[.!?;:]\s*)(?!" + _DE_PERSON + r")[^.!?;:]*\b(?:ungeprüft|unkontrolliert|ohne "
        r"weitere prüfung)\b[^.!?;:]{0,30}\b(?:zu\s+[a-zäöü]+en|[a-zäöü]+zu[a-zäöü]+en|[a-zäöü]+en)"
        r"\s*(?:[.!?;:]|$)|\bauf\s+der\s+liste\s+(?:ohne|für)\s+(?:\w+\s+)?(?:gebühren|prüfung|"
        r"kontrolle|kosten)\b"
    ),
]

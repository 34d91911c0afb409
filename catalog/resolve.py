"""What people type → catalog entries.

`t4`, `Tesla T4`, `a100 40gb`, `4090`; `Qwen3 8B`, `Qwen/Qwen3-8B`, Ollama tags such as
`llama3.1:8b-instruct-q4_K_M` (the tag also picks the quantization). Input that matches several entries
or none raises `NotFound` with ranked suggestions: the resolver never picks arbitrarily.

`gpu_setup` also reads a GPU count (`2x 3090`, `2×4090`, `4 x a100 80gb`, `3090 x2`) and answers a chip
family typed without its memory size (`m2 ultra`, `4060 ti`) with every memory option of that chip.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

from catalog.schema import GPU, Model, QuantFormat
from catalog.store import Catalog

MAX_QUERY_CHARS = 200
_NOISE = frozenset({"nvidia", "geforce", "tesla", "amd", "radeon", "apple", "intel", "gpu", "the"})
_TAG_FILLER = frozenset({"instruct", "chat", "it", "text", "latest", "base"})
_SPLIT = re.compile(r"[^a-z0-9.:+]+")

E = TypeVar("E", GPU, Model)
Kind = Literal["gpu", "model"]


def fold(text: str) -> str:
    """Compatibility forms as their plain letters (NFKC), case folded: a full-width 'ｒｔｘ４０９０' (a CJK input
    method's default), a ligature or a superscript digit is the name it looks like."""
    return unicodedata.normalize("NFKC", text).casefold()


def normalise(text: str) -> str:
    """Fold, keep letters, digits, dots, ':' and '+': 'RTX-4090' and 'rtx 4090' both become 'rtx4090'.

    ':' stays because an Ollama tag names one exact build ('deepseek-r1:8b' is not 'DeepSeek R1 8B'),
    '+' because 'Command R+' is not 'Command R'.
    """
    return _SPLIT.sub("", fold(text)).strip(".")


def _compatible(text: str) -> str:
    """NFKC only (case kept, for what is shown back): the count, memory size and tag patterns below see
    '２× ４０９０', '２４ＧＢ' and 'qwen3：8b' as the ASCII they stand for."""
    return unicodedata.normalize("NFKC", text)


def has_word(text: str) -> bool:
    """Whether `text` holds a letter or digit a name could share: only then is "did you mean" worth saying
    (for '🤖' or '!!!' any suggestion would be arbitrary)."""
    return any(c.isalnum() for c in normalise(text))


_WORDS = re.compile(r"[^a-z0-9.+]+")


def tokens(text: str) -> tuple[str, ...]:
    return tuple(t.strip(".") for t in _WORDS.split(fold(text)) if t.strip("."))


def is_ollama_tag(text: str) -> bool:
    """'gpt-oss:20b', 'qwen3:8b-q8_0': a name, a colon and a tag (an `hf:org/name` repo is no tag)."""
    name, colon, tag = text.strip().partition(":")
    return bool(colon and name.strip() and tag.strip()) and name.strip().lower() != "hf"


@dataclass(frozen=True)
class Suggestion:
    id: str
    label: str


class NotFound(LookupError):
    """Nothing, or more than one thing, matches; `suggestions` says what the person may have meant."""

    def __init__(self, kind: Kind, query: str, suggestions: list[Suggestion], ambiguous: bool = False) -> None:
        self.kind = kind
        self.query = query
        self.suggestions = suggestions
        self.ambiguous = ambiguous
        shown = query if len(query) <= 60 else query[:57] + "…"
        what = "matches several" if ambiguous else "matches no"
        hint = ", ".join(s.label for s in suggestions[:5])
        super().__init__(f"{shown!r} {what} {kind}s" + (f"; did you mean {hint}?" if hint else ""))


class NotARelease(NotFound):
    """The name is one the catalog knows to be no public release (a name seen on other calculators)."""

    def __init__(self, query: str, name: str, reason: str) -> None:
        self.name = name
        self.reason = reason
        LookupError.__init__(self, f"{name!r} is not a known release: {reason}")
        self.kind = "model"
        self.query = query
        self.suggestions = []
        self.ambiguous = False


class UnknownGgufRepo(NotFound):
    """A Hub repository of GGUF files rigcheck cannot read: `reason` "repo", its name names no catalog model (the
    model it quantizes is what to ask for, or its original repository with `hf:`); "tag", its tag names no
    format (`tag`). `suggestions` are the catalog's names closest to the repo's."""

    def __init__(self, query: str, suggestions: list[Suggestion], reason: Literal["repo", "tag"],
                 tag: str = "") -> None:
        super().__init__("model", query, suggestions)
        self.reason = reason
        self.tag = tag


# A Hub repository of GGUF files as people paste it: 'unsloth/Qwen3-8B-GGUF', a hub URL, or Ollama's
# 'hf.co/unsloth/Qwen3-8B-GGUF:Q8_0', whose tag names the file's quantization (Ollama's "Use Ollama with any
# GGUF model on Hugging Face Hub" page). Quantizers name the repo after the model ('bartowski/Qwen_Qwen3-8B-GGUF'
# puts the maker first), so the name, less its '-GGUF', is the model's.
_GGUF_REPO = re.compile(
    r"^\s*(?:hf:\s*)?(?:(?:https?://)?(?:www\.)?(?:huggingface\.co|hf\.co)/)?"
    r"(?P<org>[\w.-]+)/(?P<name>[\w.-]+?)[-_.]gguf(?::(?P<tag>[\w.-]+))?/?\s*$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class GPUSetup:
    """What a GPU text names: how many cards, and which GPU, or every memory option of one chip.

    `options` has one entry for a named GPU and several, smallest memory first, for a chip family typed
    without its memory size (`m2 ultra`): the caller answers for each or picks the smallest that fits.
    """

    options: tuple[GPU, ...]
    count: int = 1
    family: str | None = None

    @property
    def gpu(self) -> GPU:
        """The GPU, when the text named exactly one."""
        if len(self.options) != 1:
            raise ValueError(f"{self.family or 'the text'} names {len(self.options)} memory options")
        return self.options[0]

    @property
    def is_family(self) -> bool:
        return len(self.options) > 1


# '2x 3090', '2×4090', '4 x a100 80gb', '8*h100'; '3090 x2', 'rtx 3090 x 2', and 't4x2', 'a100x8' where the 'x'
# touches both a name ending in a digit and the count. The 'x' stands alone or touches the number, and a count
# outside 1..MAX_GPU_COUNT is not one, so '6800 xt' and '7900 xtx' are not counts. A count written first is read up
# to six digits so that one no setup has ('0x t4', '100x h100') can be reported as such (Resolver._impossible_count).
_COUNT_FIRST = re.compile(r"^\s*(\d{1,6})\s*(?:[x×*]|\s+x)\s*(?=\S)(.+)$", re.IGNORECASE)
_COUNT_LAST = re.compile(r"^(.+?\S)\s*(?:\s[x×*]\s*|[×*]\s*)(\d{1,2})\s*$", re.IGNORECASE)
_COUNT_TIGHT = re.compile(r"^(.*\d)\s*x(\d{1,2})\s*$", re.IGNORECASE)
_COUNT_WORDS = {"dual": 2, "twin": 2, "two": 2, "triple": 3, "three": 3, "quad": 4, "four": 4, "eight": 8}
_COUNT_WORD = re.compile(r"^\s*(" + "|".join(_COUNT_WORDS) + r")\s+(.+?)s?\s*$", re.IGNORECASE)
MAX_GPU_COUNT = 64


def split_gpu_count(text: str) -> tuple[str, int]:
    """('3090', 2) for '2x 3090'; (text, 1) when no count is written. Counts outside 1..64 are not counts."""
    for pattern, count_group, name_group in ((_COUNT_FIRST, 1, 2), (_COUNT_LAST, 2, 1), (_COUNT_TIGHT, 2, 1)):
        m = pattern.match(text)
        if m:
            count = int(m.group(count_group))
            if 1 <= count <= MAX_GPU_COUNT:
                return m.group(name_group).strip(), count
    m = _COUNT_WORD.match(text)
    if m:
        return m.group(2).strip(), _COUNT_WORDS[m.group(1).lower()]
    return text, 1


def typed_count(text: str) -> int:
    """The card count written in a GPU text, as `gpu_setup` reads it ('2x 309' → 2); 1 when none is written."""
    return split_gpu_count(_compatible(text[:MAX_QUERY_CHARS]))[1]


def setup_text(gpu_id: str, count: int) -> str:
    """A GPU setup written back as text `gpu_setup` reads again (an autocomplete value, a stored daily GPU):
    '2x nvidia-rtx-3090', and one card as its bare id, so one-card values stay the catalog ids they were."""
    return f"{count}x {gpu_id}" if count > 1 else gpu_id


_MEMORY_SUFFIX = re.compile(r"-\d+gb$")
# A memory size at the end without its B ('80g') or unit at all ('a100-40', 'h100 80'), 8 to 288 GB.
_SHORT_MEMORY = re.compile(r"^\s*(.+?)[\s-]+(8|[1-9]\d|1\d\d|2[0-8]\d)\s*g?\s*$", re.IGNORECASE)
_TRAILING_MEMORY = re.compile(r"^\s*(.*?\S)[\s-]*(\d+(?:\.\d+)?)\s*(?:gb|gib|g)?\s*$", re.IGNORECASE)


def memory_family(gpus: list[GPU]) -> str | None:
    """The chip's id stem when `gpus` are the memory options of one chip ('apple-m2-ultra' for its 64, 128
    and 192 GB entries); None when they differ in anything but the memory size in the id."""
    if len(gpus) < 2:
        return None
    stems = {_MEMORY_SUFFIX.sub("", g.id) for g in gpus}
    if len(stems) != 1 or any(not _MEMORY_SUFFIX.search(g.id) for g in gpus):
        return None
    return stems.pop()


@dataclass(frozen=True)
class ModelChoice:
    model: Model
    quant: QuantFormat | None


class _Index(Generic[E]):
    def __init__(self, kind: Kind, entries: tuple[E, ...]) -> None:
        self.kind = kind
        self.entries: dict[str, E] = {e.id: e for e in entries}
        self.exact: dict[str, set[str]] = {}
        self.primary: dict[str, set[str]] = {}  # id, name, HF repo: these beat an alias that collides
        self.keys: list[tuple[str, str]] = []  # (normalised key, id), for prefix and fuzzy search
        self.token_sets: dict[str, list[frozenset[str]]] = {}
        for e in entries:
            primary = {normalise(n) for n in self._primary_names(e)}
            for raw in self._names(e):
                key = normalise(raw)
                if not key:
                    continue
                self.exact.setdefault(key, set()).add(e.id)
                if key in primary:
                    self.primary.setdefault(key, set()).add(e.id)
                self.keys.append((key, e.id))
                self.token_sets.setdefault(e.id, []).append(frozenset(tokens(raw)))
        self.unique_keys = sorted({k for k, _ in self.keys})

    @staticmethod
    def _primary_names(e: GPU | Model) -> list[str]:
        names = [e.id, e.name]
        if isinstance(e, Model) and e.hf_repo:
            names.append(e.hf_repo)
        return names

    @classmethod
    def _names(cls, e: GPU | Model) -> list[str]:
        names = [*cls._primary_names(e), *e.aliases]
        if isinstance(e, Model) and e.hf_repo:
            names.append(e.hf_repo.split("/")[-1])
        return names

    def label(self, entry_id: str) -> str:
        return self.entries[entry_id].name

    def suggest(self, ids: list[str]) -> list[Suggestion]:
        return [Suggestion(i, self.label(i)) for i in ids]

    def hints(self, query: str) -> list[Suggestion]:
        """"Did you mean" for a name not found: the best few, none when the text shares no letter or digit
        with any name (an empty prefix ranks everything alphabetically, which suits autocomplete only)."""
        return self.suggest(self.ranked(query)[:5]) if has_word(query) else []

    def find(self, text: str, suggest: bool = True) -> E:
        query = text.strip()[: MAX_QUERY_CHARS + 1]
        if not normalise(query) or len(query) > MAX_QUERY_CHARS:
            raise NotFound(self.kind, text[:MAX_QUERY_CHARS], self.hints(query) if suggest else [])
        key = normalise(query)
        hits = self.exact.get(key, set())
        if len(hits) > 1 and len(self.primary.get(key, set())) == 1:
            hits = self.primary[key]
        if not hits and "/" in query:
            # 'Qwen/Qwen2.5-7B-Instruct' when only the repo's own name is known as an alias
            hits = self.exact.get(normalise(query.rsplit("/", 1)[-1]), set())
        if len(hits) == 1:
            return self.entries[next(iter(hits))]
        if not hits:
            hits = self.by_tokens(query)
        if len(hits) == 1:
            return self.entries[next(iter(hits))]
        if hits:
            ordered = sorted(hits, key=lambda i: (len(self.label(i)), self.label(i)))
            raise NotFound(self.kind, query, self.suggest(ordered[:10]), ambiguous=True)
        raise NotFound(self.kind, query, self.hints(query) if suggest else [])

    def by_tokens(self, query: str) -> set[str]:
        """Entries one of whose names contains every word typed (vendor words optional)."""
        words = [t for t in tokens(query) if t not in _NOISE] or list(tokens(query))
        if not words:
            return set()
        wanted = frozenset(words)
        return {i for i, sets in self.token_sets.items() if any(wanted <= s for s in sets)}

    def ranked(self, query: str, limit: int = 25) -> list[str]:
        """Ids ordered by how well they match `query` as typed so far (prefix beats substring beats fuzzy)."""
        key = normalise(query)
        if not key:
            return sorted(self.entries, key=lambda i: self.label(i))[:limit]
        best: dict[str, float] = {}
        for k, i in self.keys:
            if k == key:
                score = 4.0
            elif k.startswith(key):
                score = 3.0 - len(k) / 1000
            elif key in k:
                score = 2.0 - len(k) / 1000
            else:
                continue
            if score > best.get(i, 0.0):
                best[i] = score
        for i in self.by_tokens(query):
            best[i] = max(best.get(i, 0.0), 2.5)
        if not best:
            # A close match (ratio ≥ 0.6) cannot differ in length by more than about half: skip the rest.
            spread = max(3, len(key) // 2)
            pool = [k for k in self.unique_keys if abs(len(k) - len(key)) <= spread]
            close = difflib.get_close_matches(key, pool, n=limit, cutoff=0.6)
            for rank, k in enumerate(close):
                for i in self.exact.get(k, ()):
                    best.setdefault(i, 1.0 - rank / 100)
        return sorted(best, key=lambda i: (-best[i], self.label(i)))[:limit]


class Resolver:
    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self._gpus = _Index[GPU]("gpu", catalog.gpus)
        self._models = _Index[Model]("model", catalog.models)
        self._not_releases = {normalise(n): r for r in catalog.not_releases for n in (r.name, *r.aliases)}
        self._hf_repos = {m.hf_repo.casefold(): m for m in catalog.models if m.hf_repo}
        self._quants: dict[str, QuantFormat] = {}
        for q in catalog.quants:
            for name in (q.id, q.name, *q.aliases):
                self._quants.setdefault(normalise(name), q)

    def gpu(self, text: str) -> GPU:
        return self._find_gpu(_compatible(text))

    def _find_gpu(self, text: str) -> GPU:
        """`_gpus.find`, also taking a trailing memory size that only restates the GPU's own ('RTX 4090 24GB'), and
        one written short ('A100 80G', 'a100-40', 'H100 80') as the catalog writes it ('80gb')."""
        try:
            return self._gpus.find(text)
        except NotFound as err:
            short = _SHORT_MEMORY.match(text[: MAX_QUERY_CHARS + 1])
            if short is not None:
                try:
                    return self._gpus.find(f"{short.group(1)} {short.group(2)}gb")
                except NotFound as spelled:
                    # Several cards with that memory ('H100 80G': PCIe or SXM) is the better refusal: it lists them.
                    if spelled.ambiguous:
                        raise NotFound(spelled.kind, text, spelled.suggestions, ambiguous=True) from None
            m = _TRAILING_MEMORY.match(text[: MAX_QUERY_CHARS + 1])
            if m is None:
                raise
            try:
                gpu = self._gpus.find(m.group(1), suggest=False)
            except NotFound:
                raise err from None
            if abs(gpu.vram_gb - float(m.group(2))) > 0.5:
                raise err from None
            return gpu

    def gpu_setup(self, text: str) -> GPUSetup:
        """GPU count and GPU (or a chip's memory options) from what people type; NotFound otherwise.

        The whole text is tried first, so a name that happens to end in digits keeps its meaning.
        """
        text = _compatible(text)
        try:
            return self._setup(text, 1)
        except NotFound as whole:
            name, count = split_gpu_count(text[: MAX_QUERY_CHARS + 1])
            if count == 1 and name == text:
                return self._impossible_count(text, whole)
            try:
                return self._setup(name, count)
            except NotFound as counted:
                # '8x h100': the count was understood and the name is ambiguous, so say which ones it may be
                # rather than that the whole text matches nothing.
                raise (counted if counted.ambiguous else whole) from None

    def _impossible_count(self, text: str, whole: NotFound) -> GPUSetup:
        """'0x h100 sxm', '100x t4': a count no setup has, before a name that resolves. It is handed on as written,
        so the request's range check says what counts are allowed (in the asker's language) rather than that the
        GPU is unknown; anything else is the whole text's NotFound."""
        written = _COUNT_FIRST.match(text[: MAX_QUERY_CHARS + 1])
        if written is None:
            raise whole
        try:
            found = self._setup(written.group(2).strip(), 1)
        except NotFound as named:
            # '999x h100': the name matches several cards, and which ones is the more useful answer.
            raise (named if named.ambiguous else whole) from None
        return GPUSetup(found.options, int(written.group(1)), found.family)

    def _setup(self, text: str, count: int) -> GPUSetup:
        try:
            return GPUSetup((self._find_gpu(text),), count)
        except NotFound as err:
            if not err.ambiguous:
                raise
            chip = self._chip_named(text, [s.id for s in err.suggestions])
            if chip is None:
                raise
            every = sorted(chip, key=lambda g: (g.vram_gb, g.bandwidth_gbs))
            return GPUSetup(tuple(every), count, _family_label(every))

    def _chip_named(self, text: str, shown: list[str]) -> list[GPU] | None:
        """Every memory option of the one chip `text` names, or None.

        'm2 ultra' matches only M2 Ultra entries; 'm5' matches M5, M5 Pro and M5 Max entries, and names the
        chip whose own name has exactly the words typed (M5), the others being chips with an extra word.
        """
        hits = self._gpus.by_tokens(text) or set(shown)
        groups: dict[str, list[GPU]] = {}
        for gpu_id in hits:
            gpu = self._gpus.entries[gpu_id]
            groups.setdefault(_MEMORY_SUFFIX.sub("", gpu.id), []).append(gpu)
        chips = {stem: gpus for stem, gpus in groups.items() if memory_family(gpus) == stem}
        if len(groups) == 1:
            return next(iter(chips.values()), None)
        wanted = {t for t in tokens(text) if t not in _NOISE}
        named = [gpus for gpus in chips.values() if set(tokens(_family_label(gpus))) - _NOISE == wanted]
        return named[0] if len(named) == 1 else None

    def model(self, text: str) -> ModelChoice:
        """A model, and the quantization when an Ollama-style tag names one (`qwen3:8b-q8_0`).

        A name the catalog lists as no public release raises NotARelease (a NotFound) saying so.
        """
        text = _compatible(text)
        gguf = _GGUF_REPO.match(text[: MAX_QUERY_CHARS + 1])
        if gguf is not None:
            return self._gguf_repo(text, gguf)
        try:
            return self._ollama_build(self._model(text), text)
        except NotFound:
            listed = self._not_releases.get(normalise(text.strip()[:MAX_QUERY_CHARS]))
            if listed is not None:
                raise NotARelease(text.strip(), listed.name, listed.reason) from None
            raise

    def _ollama_build(self, choice: ModelChoice, text: str) -> ModelChoice:
        """An Ollama tag naming no format is the build Ollama's library ships: its Q4_K_M for most models, so the
        engine's default ladder answers; the one build a model records (`Model.ollama`: gpt-oss's MXFP4) for others."""
        if choice.quant is not None or choice.model.ollama is None or not is_ollama_tag(text):
            return choice
        return ModelChoice(choice.model, self.catalog.quant(choice.model.ollama.quant))

    def _gguf_repo(self, text: str, repo: re.Match[str]) -> ModelChoice:
        """The catalog model a GGUF repository is named after, in the format its tag names (none: the engine's
        ladder). A repo named after no catalog model, or a tag naming no format, raises `UnknownGgufRepo`."""
        name = repo["name"]
        # 'Qwen_Qwen3-8B' (bartowski): the model's maker, an underscore, then the model's own name.
        candidates = [name, name.split("_", 1)[1]] if "_" in name else [name]
        quant = self.quant_or_none(repo["tag"]) if repo["tag"] else None
        query = text.strip()[:MAX_QUERY_CHARS]
        for candidate in candidates:
            try:
                model = self._models.find(candidate, suggest=False)
            except NotFound:
                continue
            if repo["tag"] and quant is None:
                raise UnknownGgufRepo(query, self._models.suggest([model.id]), "tag", repo["tag"])
            return ModelChoice(model, quant)
        raise UnknownGgufRepo(query, self._models.hints(candidates[-1]), "repo")

    def hf_model(self, text: str) -> Model | None:
        """The catalog's model for `hf:org/name` when that repo is one the catalog lists (the Hub treats repo
        ids case-insensitively, so does this), or a GGUF repo named after one; None otherwise, when the Hub has
        to be asked."""
        repo = _compatible(text).strip()
        if repo[:3].lower() == "hf:":
            repo = repo[3:].strip()
        listed = self._hf_repos.get(repo.casefold())
        if listed is None and _GGUF_REPO.match(repo):
            try:
                return self.model(repo).model
            except NotFound:
                return None
        return listed

    def _model(self, text: str) -> ModelChoice:
        try:
            return ModelChoice(self._models.find(text, suggest=":" not in text), None)
        except NotFound as first:
            if ":" not in text:
                raise
            base, _, tag = text.partition(":")
            quant, words = self._quant_in_tag(tag)
            size = [w for w in words if re.fullmatch(r"[a-z]?\d+(\.\d+)?[bm](-a\d+b)?|e\d+b|\d+x\d+b", w.lower())]
            rest = [w for w in words if w.lower() not in _TAG_FILLER and w not in size]
            # Most specific first: 'qwen3:4b-instruct-2507' is the 2507 Instruct build, not Qwen3-4B.
            everything = [w for w in words if w not in size]
            attempts = [f"{base} {' '.join(size + words)}" for words in (everything, rest, [])]
            if not size:  # 'qwen3:latest' means the default size; a named size must match exactly
                attempts.append(base)
            for attempt in attempts:
                try:
                    return ModelChoice(self._models.find(attempt, suggest=False), quant)
                except NotFound:
                    continue
            if first.ambiguous:
                raise first from None
            raise NotFound("model", text.strip()[:MAX_QUERY_CHARS], self._models.hints(text)) from None

    def _quant_in_tag(self, tag: str) -> tuple[QuantFormat | None, list[str]]:
        """The format a tag names and the tag's other words. A format name may itself hold dashes
        (`exl2-4.65bpw`, `ud-q4_k_xl`), so runs of words are tried, longest and last first."""
        parts = [p for p in tag.split("-") if p]
        for length in range(len(parts), 0, -1):
            for start in range(len(parts) - length, -1, -1):
                quant = self.quant_or_none("-".join(parts[start:start + length]))
                if quant is not None:
                    return quant, parts[:start] + parts[start + length:]
        return None, parts

    def quant_or_none(self, text: str) -> QuantFormat | None:
        found = self._quants.get(normalise(text))
        if found is not None:
            return found
        asked = BPW_FORMAT.match(normalise(text))
        if asked is None:
            return None
        template = self._quants.get(normalise(BPW_TEMPLATE[asked[1]]))
        return None if template is None else bpw_variant(template, asked[1], float(asked[2]))

    def complete_gpu(self, prefix: str, limit: int = 25) -> list[Suggestion]:
        prefix = split_gpu_count(_compatible(prefix[:MAX_QUERY_CHARS]))[0]
        return self._gpus.suggest(self._gpus.ranked(prefix[:MAX_QUERY_CHARS], limit))

    def complete_model(self, prefix: str, limit: int = 25) -> list[Suggestion]:
        return self._models.suggest(self._models.ranked(prefix[:MAX_QUERY_CHARS], limit))


# ExLlama formats are named by their average bits per weight, any value in the converter's range: EXL2 mixes 2-8 bit
# groups (exllamav2 README), EXL3's convert.py refuses "--bits" outside 1-8.
BPW_RANGE = {"exl2": (2.0, 8.0), "exl3": (1.0, 8.0)}
# The catalog entry each family's other bitrates are made from.
BPW_TEMPLATE = {"exl2": "exl2-4.0bpw", "exl3": "exl3-4.0bpw"}
BPW_FORMAT = re.compile(r"^(exl[23])(\d+(?:\.\d+)?)(?:bpw|b)?$")


def bpw_variant(template: QuantFormat, family: str, bpw: float) -> QuantFormat | None:
    """The catalog's EXL2/EXL3 entry at another bitrate (`exl2-4.65bpw`), or None outside the format's range."""
    low, high = BPW_RANGE.get(family, (0.0, 0.0))
    if not low <= bpw <= high:
        return None
    level = {1: "int2", 2: "int2", 3: "int3", 4: "int4", 5: "int5", 6: "int6", 7: "int6"}.get(int(bpw), "int8")
    return template.model_copy(update={
        "id": f"{family}-{bpw:g}bpw", "name": f"{family.upper()} {bpw:.2f}".rstrip("0").rstrip(".") + " bpw",
        "aliases": (), "bits_per_weight": bpw, "level": level})


def _family_label(gpus: list[GPU]) -> str:
    """'Apple M2 Ultra' from 'Apple M2 Ultra (64 GB unified memory)' and its siblings: the words all share."""
    names = [re.sub(r"\s*\([^)]*\)", "", g.name).strip() for g in gpus]
    first = names[0].split()
    common: list[str] = []
    for i, word in enumerate(first):
        if all(len(n.split()) > i and n.split()[i] == word for n in names):
            common.append(word)
        else:
            break
    common = [w for w in common if not re.fullmatch(r"\d+GB", w, re.IGNORECASE)]
    return " ".join(common) or names[0]

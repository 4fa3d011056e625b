"""Compaction policies: how the token budget is spent.

Two policies exist. ``seed`` is Nanobot's: microcompact every old tool result
past the newest ten on every call, then snip the oldest messages to fit. It
rewrites the middle of the history on almost every step, so the provider's
prompt cache (which matches the longest unchanged prefix) keeps missing.

``cache`` (the default for every provider profile) compacts rarely and in big
steps: nothing changes while the request fits under the trigger (95% of the
budget, at most 80k tokens); when it does not, old tool results are cleared
(oldest first) and, if that is not enough, the oldest turns after the head are
cut (at a user message; one note says where and how much), down to the target
(40% of the budget, at most 16k tokens; by default adapted to the history, see
``adaptive_goal``). The low target is deliberate: each compaction costs one cache
miss of what remains, so a deep cut that buys many append-only steps is cheaper
than many shallow ones. Where the target model's cached reads are dear (gpt-4o
reads at half the input price), re-sending a large cached request costs more than
the misses saved, so the trigger moves toward the target (``price_scale``; prices
from providers/prices.py, looked up from the provider and model).
The steps in between only append to an unchanged prefix. Where to cut is
decided from the history alone (see stages/_compact.py), so any process, e.g.
any replica of a proxy, gives the same answer.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Mapping
from dataclasses import InitVar, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeAlias

from .errors import ConfigError, brief
from .providers.prices import cache_price
from .targets import CachePrice

if TYPE_CHECKING:
    from .summary import Summaries

__all__ = [
    "ADAPTIVE_BAND_CALLS",
    "CACHE",
    "CLEAR_CHUNK_SHARE",
    "CUT_ROOM_CALLS",
    "CUT_ROOM_PROSE_SHARE",
    "CUT_ROOM_SHARE",
    "DEFAULT_CUT_NOTE",
    "DEFAULT_EXACT_COMMANDS",
    "DEFAULT_EXACT_CONTENT",
    "DEFAULT_EXACT_TOOLS",
    "DEFAULT_PLACEHOLDER",
    "DEFAULT_TARGET",
    "DEFAULT_TARGET_TOKENS",
    "DEFAULT_TRIGGER",
    "DEFAULT_TRIGGER_TOKENS",
    "FLOOR_RESULTS",
    "MASK_HEAVY_SHARE",
    "MASK_MIN_HEAVY",
    "MASK_MIN_RECENT",
    "MASK_ROOM_CALLS",
    "OFFLOAD_PLACEHOLDER",
    "REFERENCE_READ",
    "SEED",
    "SETTINGS",
    "VERBATIM_ROOM",
    "Compaction",
    "CompactionPolicy",
    "PolicyKind",
    "SeedPolicy",
    "Threshold",
    "get_policy",
    "policy_from_settings",
    "price_scale",
    "settings_of",
]

#: The policies' names (``SeedPolicy.name``, ``CompactionPolicy.name``).
PolicyKind = Literal["seed", "cache"]

#: Read as: the call succeeded, its output was removed for space, and here is how to
#: get it back. It must not read like a failure: models retry failed calls.
DEFAULT_PLACEHOLDER = (
    "[Output of {name} ({chars} characters) was removed from the context to save space. "
    "The call itself succeeded. Call {name} again if you need this output.]"
)
OFFLOAD_PLACEHOLDER = (
    "[Output of {name} ({chars} characters) was moved out of the context to save space. "
    "The call itself succeeded. The full output is in the file {path}; read it with "
    "read_file if you need it.]"
)

#: Put where older history was cut, folded into the user message there (never a
#: user turn of its own when one can carry it). Its text depends on the cut only, so
#: it does not change between two compactions (the cache keeps hitting).
DEFAULT_CUT_NOTE = (
    "[{messages} earlier messages of this conversation ({turns} assistant turns, "
    "{user_messages} user messages) were removed here to fit the context window.]"
)


#: Under ``shrink``: the tools whose output the agent must reproduce exactly (file reads
#: an edit will quote), left byte-identical until masked. Matched without regard to case,
#: against the call's name (stages/_shrink.py).
DEFAULT_EXACT_TOOLS: frozenset[str] = frozenset(
    {
        "read", "read_file", "readfile", "view", "view_file", "open_file", "cat",
        "notebookread", "str_replace_editor", "str_replace_based_edit_tool", "text_editor",
        "get_file_contents",
    }
)  # fmt: skip
#: Under ``shrink``: shell programs whose output is exact text. A call whose ``command``
#: (or ``cmd``) argument runs one of them, in any part of a pipeline or a list of
#: commands, is left byte-identical (``cat -n f``, ``cd src && git diff``).
DEFAULT_EXACT_COMMANDS: tuple[str, ...] = (
    "cat", "head", "tail", "nl", "sed", "less", "more", "bat", "tac", "grep", "egrep", "rg",
    "ag", "diff", "git diff", "git show", "git grep", "git blame", "type",
)  # fmt: skip
#: Under ``shrink``: regular expressions for lines that carry line numbers (``cat -n``'s
#: tab, Claude Code's Read arrow, ``12: ``, ``12 | ``). A result at least half of whose
#: first 200 non-blank lines match one of them is exact text, whatever the tool.
DEFAULT_EXACT_CONTENT: tuple[str, ...] = (
    r"\s*\d+\t",
    r"\s*\d+\u2192",
    r"\s*\d+:\s",
    r"\s*\d+\s*\|\s",
)

#: Under ``adaptive_target``, the calls' worth of growth a compaction leaves room for.
ADAPTIVE_BAND_CALLS = 50
#: Under ``adaptive_target`` where cached reads are dear (``price_scale`` < 1): the
#: share of the room between target and trigger a compaction may keep to hold the turns
#: of the newest ``keep_recent`` results (1 would compact at almost every step).
VERBATIM_ROOM = 0.5

#: Under ``mask_first``: when the masked trail no longer fits under the trigger, the
#: calls' worth of its growth (at least ``min_savings``) a cut leaves below the trigger,
#: so that cuts, which re-send the whole kept request uncached, stay rare.
MASK_ROOM_CALLS = 10
#: Under ``mask_first``: the most room a cut at the ceiling leaves for the cache's sake
#: (``CompactionPolicy.cut_room``), as a share of the ceiling. 0.1 cut the cost of a
#: chat at 128k by half and of research by a quarter while the agent's messages kept
#: moved by at most 0.02 on every bench shape; 0.25 saved more and kept up to 0.06 less.
CUT_ROOM_SHARE = 0.1
#: ... and only where that room holds at least this many calls' growth: with CI logs
#: of 30k tokens at 200k, a capped room of 20k cut a third of the agent's messages
#: (kept 1.00 -> 0.63) for 0.4% of the cost.
CUT_ROOM_CALLS = 2
#: The same for a chat (``masked_goal``'s ``near``: tool results under half of what the
#: history grew by): its trail is nearly all the agent's own prose, which the seed
#: policy's sliding window keeps to the budget. 0.03 keeps as much of it as that window
#: on bench's chat at 128k (0.969) at 0.39x its cost; 0.1 kept 0.96 at 0.31x.
CUT_ROOM_PROSE_SHARE = 0.03
#: Under ``mask_first``: the room a cut at the ceiling (``cut_ceiling``) leaves when
#: clearing has nothing left to give (chat: prose turns, rare tools), in calls of the
#: masked trail's growth. The seed policy's sliding window keeps the trail up to the
#: budget at every step; ten calls below it kept less of the agent's messages on chat
#: (0.458 against the seed's 0.460 at 32k), two keep more (0.461) at a cut every few
#: calls (the seed cuts at every call there).
CEILING_ROOM_CALLS = 2
#: Under ``mask_first``: the room a compaction that only clears results leaves below
#: the trigger, as a share of it (at least ``min_savings``). Each such compaction
#: re-sends the newest turns uncached from the first result it clears; clearing in
#: chunks this big, rarely, keeps the rest of the cache (the results stay verbatim
#: meanwhile). A masked history that leaves less room is cut instead.
CLEAR_CHUNK_SHARE = 0.1
#: Under ``mask_first``: when the masked trail does not fit, the newest results kept
#: verbatim may go down to this many before any turn is cut (``keep_recent`` is a
#: preference; the agent's trail is the product). SWE-agent keeps the last five
#: observations.
MASK_MIN_RECENT = 5
#: Under ``mask_first``: where those ``MASK_MIN_RECENT`` newest results alone take more
#: than this share of the budget (API responses of 5-40 KB, whole CI logs at 64k), the
#: newest results kept whole go down to ``MASK_MIN_HEAVY`` before a turn is cut: five
#: of them left room for a few turns only (0.15 of the agent's messages kept on a JSON
#: agent at 64k; 0.86 with two, the newest result whole at every request either way).
MASK_HEAVY_SHARE = 0.5
MASK_MIN_HEAVY = 2

#: Under ``verbatim_floor``: the least share of the newest results' turns the results
#: themselves must take for the floor to apply (a chat's take about a tenth).
FLOOR_RESULTS = 0.25

#: The trigger's default: this share of the budget, at most this many tokens. Past
#: that a request costs more, even cached, than the cache misses compaction causes.
#: It was 100k (the default trigger of Anthropic's context editing) until clearing
#: learned to wait for what it is worth (``clear_room``) and to keep the prefix before
#: its first edit readable: with that, 80k costs less on every session shape at 128k
#: (coding 0.64x -> 0.58x the seed policy's at reads of 0.1x) with the same share of
#: the agent's messages kept, and less behind the proxy on a Claude-Code-like session
#: (docs/benchmarks.md, *Clearing in the cache's rhythm* and *Session shapes*). The
#: price-aware rule moves the trigger only when it is left at its default (an
#: explicit ``trigger`` wins).
DEFAULT_TRIGGER = 0.95
DEFAULT_TRIGGER_TOKENS = 80_000
#: The target's default: this share of the budget, at most this many tokens.
DEFAULT_TARGET = 0.4
DEFAULT_TARGET_TOKENS = 16_000

#: A threshold as the user gives it: a float is a share of the budget (0 < x <= 1), an
#: int a number of tokens (at most the default share of the budget), None the default.
Threshold: TypeAlias = "float | int | None"


#: The policy's switches: each must be a bool (a config file's 1 is not taken for true).
_FLAGS = (
    "clear_arguments", "adaptive_target", "price_aware", "verbatim_floor", "mask_first", "receipt",
    "shrink",
)  # fmt: skip


class _Unset:
    """Marks a deprecated argument that was not given (None is a value it can take)."""

    def __repr__(self) -> str:
        return "<unset>"


_UNSET: Any = _Unset()


def _check_threshold(name: str, value: object, one_ok: bool = False) -> None:
    """A clear error for a threshold that is neither a share, tokens nor None."""
    if value is None:
        return
    if isinstance(value, float):
        if not 0 < value <= 1:
            raise ConfigError(
                f"{name} as a share of the budget must be in (0, 1], got {value!r} "
                "(give tokens as an integer)"
            )
        return
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(
            f"{name} must be a share of the budget (a float in (0, 1]), a number of tokens "
            f"(a positive integer) or None for the default, got {value!r}"
        )
    if value == 1 and not one_ok:
        raise ConfigError(f"{name}=1 is one token: write {name}=1.0 for the whole budget")


def _threshold_tokens(value: float | int | None, share: float, cap: int, budget: int) -> int:
    """``value`` (see Threshold) in tokens for ``budget``; ``share`` and ``cap`` are its
    defaults. Tokens never go above the default share: on a small window the
    threshold stays inside the budget (what trigger_tokens did, which this replaces)."""
    if value is None:
        return min(int(share * budget), cap)
    if isinstance(value, float):
        return int(value * budget)
    return min(int(share * budget), value)


def _fold(name: str, value: float | int | None, tokens: Any, share: float) -> float | int | None:
    """The one-field threshold for the deprecated ``{name}_tokens`` spelling."""
    if tokens is _UNSET:
        return value
    warnings.warn(
        f"CompactionPolicy({name}_tokens=...) is deprecated and will be removed in the next "
        f"release: give {name} as tokens (an integer) or a share of the budget (a float)",
        DeprecationWarning,
        stacklevel=4,
    )
    if value is not None:
        raise ConfigError(
            f"give {name} as a share of the budget or as tokens, not both "
            f"({name}={value!r}, {name}_tokens={tokens!r}; {name}_tokens is deprecated)"
        )
    if tokens is None:
        return share  # no cap in tokens: the default share alone
    _check_threshold(f"{name}_tokens", tokens, one_ok=True)
    return int(tokens)


#: The cached-read price (a share of the input price) the fixed defaults were tuned
#: for: bench's flat model, and what Anthropic, gpt-5, Gemini 2.5 and DeepSeek charge.
REFERENCE_READ = 0.1


def price_scale(price: CachePrice) -> float:
    """How much of the default distance between target and trigger to keep at ``price``.

    Between two compactions a request grows from the target T by the history's growth g
    per call up to the trigger, each step paying ``read`` for what it re-sends; each
    compaction re-sends T at the miss price. Per call that is about
    read * (T + D/2) + (miss - read) * T * g / D for a distance D, least at
    D = sqrt(2 (miss - read) T g / read). T and g do not depend on the price, so the best
    distance at ``price`` is the one at the reference read times
    sqrt(((miss - read) / read) / ((1 - REFERENCE_READ) / REFERENCE_READ)): a third at
    gpt-4o's 0.5x read, 0.58 at gpt-4.1's 0.25x. Never above 1: a cheaper read or a dear
    write (Anthropic) keeps today's defaults, which also hold the cached-prefix share."""
    read = price.read
    if read <= 0:
        return 1.0
    ratio = max(0.0, price.miss - read) / read
    reference = (1 - REFERENCE_READ) / REFERENCE_READ
    return min(1.0, math.sqrt(ratio / reference))


@dataclass(frozen=True, slots=True)
class SeedPolicy:
    """Nanobot's policy, the seed: on every call, clear every old tool result past the
    newest ten (microcompact), then drop the oldest messages until the request fits
    (snip). It has no settings: it is the reference the cache policy is measured
    against, exact to nanobot-ai 0.2.2. Ask for it by name (``compaction="seed"``) or
    as ``SEED``; the ``nanobot`` profile always uses it."""

    #: The policy's name, as the CLI, the proxy and the reports spell it.
    name: ClassVar[str] = "seed"
    #: The same, under the name the cache policy's old ``kind`` field had.
    kind: ClassVar[str] = "seed"


@dataclass(frozen=True, slots=True)
class CompactionPolicy:
    """The cache policy: how to spend the budget. See the module docstring; every field
    has a safe default.

    ``trigger`` and ``target`` are each one threshold (``Threshold``): a float is a
    share of the budget (context window - max output - safety buffer), an int is tokens
    (never above the default share of the budget), None the default (trigger: 95% of
    the budget, at most 80k tokens; target: 40%, at most 16k). ``min_savings`` is in
    tokens; ``min_chars`` is a tool result's size below which it is never cleared;
    ``keep_recent`` tool results are kept verbatim
    (a preference: under ``mask_first`` they go down to ``MASK_MIN_RECENT`` before a
    turn is cut, and a request over its budget is squeezed, stages/_squeeze.py);
    results of ``exclude_tools`` are never cleared; ``clear_arguments`` also empties
    the arguments of the calls whose results were cleared; ``offload_dir``
    keeps each cleared output in a file there, named after its call. ``cut_note`` is
    the note put where older history was cut ({messages}, {turns} and {user_messages}
    are what was removed); None leaves the model untold. ``summary`` (a
    ``summary.Summaries``) replaces each cut block by one stored summary where the
    note goes (the plain note when no summary can be had; see docs/summaries.md).
    ``adaptive_target`` derives each compaction's target from the request instead of
    using ``target`` as it is (``adaptive_goal``; docs/session-shapes.md).
    ``price_aware`` moves the trigger closer to the target where cached reads are dear
    (``price_scale``), from ``cache_price``: the target's prices, which govern() and the
    Governor look up from the provider and model (providers/prices.py) unless given; None (an
    unknown model) keeps the fixed trigger. An explicit ``trigger`` wins;
    ``price_aware=False`` turns the rule off.
    ``verbatim_floor`` raises that lowered trigger for a request whose newest results'
    turns do not fit under it (``floor``); ``verbatim_floor=False`` turns it off.
    ``receipt`` lists, after the note on a cut (or its summary), the files, commands,
    errors and user messages the cut removed (stages/_receipt.py); ``receipt=False``
    leaves the note alone.

    Deprecated for one release (a DeprecationWarning each): ``trigger_tokens`` and
    ``target_tokens`` (give the threshold as tokens instead), ``kind="seed"`` (use
    ``SEED`` or the name ``"seed"``) and ``kind="cache"`` (the class is the cache policy).
    """

    name: ClassVar[str] = "cache"

    trigger: Threshold = None
    target: Threshold = None
    min_savings: int = 2048
    keep_recent: int = 10
    min_chars: int = 500
    exclude_tools: frozenset[str] = field(default_factory=frozenset)
    clear_arguments: bool = False
    placeholder: str = DEFAULT_PLACEHOLDER
    offload_dir: Path | None = None
    cut_note: str | None = DEFAULT_CUT_NOTE
    summary: Summaries | None = None
    #: Derive the target of each compaction from the history instead of using ``target``
    #: as it is (see ``adaptive_goal``). Off keeps the fixed target.
    adaptive_target: bool = True
    #: Compact earlier where cached reads are dear (see ``price_scale``).
    price_aware: bool = True
    #: The prices ``price_aware`` tunes for (None: unknown; see ``priced``).
    cache_price: CachePrice | None = None
    #: Where cached reads are dear, raise a request's trigger so that a compaction keeps
    #: the turns of the newest ``keep_recent`` results (see ``floor``).
    verbatim_floor: bool = True
    #: Mask before cutting: a compaction keeps the whole trail (every turn, old results
    #: cleared) when that fits under the trigger less room for growth, and cuts only
    #: what does not (see ``masked_goal``). Off: the goal is the target's alone.
    mask_first: bool = True
    #: List what a cut removed that the agent may need (files read or changed, commands
    #: run, errors seen, the user's messages) after the note on the cut, bounded and
    #: written once per cut (stages/_receipt.py). Off: the note alone.
    receipt: bool = True
    #: Shrink each tool result losslessly where it enters the request, the same way on
    #: every request (stages/_shrink.py): JSON re-serialised compactly, terminal escape
    #: codes and carriage-return redraws rendered away, trailing whitespace, long runs
    #: of one line folded with a count. Results of ``exact_tools``, of shell calls that
    #: run ``exact_commands`` and whose lines match ``exact_content`` are left as they are.
    #: A Governor appends each new result in its shrunk form. Off: results as they came.
    shrink: bool = True
    #: At a compaction, also clear a result among the newest ``keep_recent`` that a later
    #: call repeats exactly (the same tool and arguments, a read by ``exact_tools`` or
    #: ``exact_commands``: the file read again, the same ``git diff``): what the agent
    #: sees of it is the newer result. Off: the newest results all stay whole.
    supersede: bool = True
    #: Clear a long log or a JSON document with a large array to its digest instead of
    #: the bare placeholder (stages/_digest.py): a log keeps its failure and error lines
    #: and its tail, JSON the array's length, item keys and types, first and last item.
    #: Exact text (``exact_tools``, numbered lines) is never digested. Off: placeholders.
    digest: bool = False
    exact_tools: frozenset[str] = DEFAULT_EXACT_TOOLS
    exact_commands: tuple[str, ...] = DEFAULT_EXACT_COMMANDS
    exact_content: tuple[str, ...] = DEFAULT_EXACT_CONTENT
    #: Deprecated spellings (see the class docstring), folded into the fields above.
    trigger_tokens: InitVar[Any] = _UNSET
    target_tokens: InitVar[Any] = _UNSET
    kind: InitVar[Any] = _UNSET

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        """``CompactionPolicy(kind="seed")``, deprecated, is the seed policy itself."""
        if kwargs.get("kind") == "seed":
            others = sorted(set(kwargs) - {"kind"})
            if args or others:
                raise ConfigError(
                    "the seed policy has no settings (got "
                    + ", ".join(others or ["positional arguments"])
                    + "); settings such as summary need the cache policy: leave kind out"
                )
            warnings.warn(
                'CompactionPolicy(kind="seed") is deprecated and will be removed in the next '
                'release: use context_governor.SEED or compaction="seed"',
                DeprecationWarning,
                stacklevel=2,
            )
            return SEED
        return object.__new__(cls)

    def __post_init__(self, trigger_tokens: Any, target_tokens: Any, kind: Any) -> None:
        if kind is not _UNSET and kind is not _KIND:
            if kind != "cache":
                raise ConfigError(f"compaction kind must be 'seed' or 'cache', got {kind!r}")
            warnings.warn(
                'CompactionPolicy(kind="cache") is deprecated and will be removed in the next '
                "release: CompactionPolicy is the cache policy; leave kind out",
                DeprecationWarning,
                stacklevel=3,
            )
        _check_threshold("trigger", self.trigger)
        _check_threshold("target", self.target)
        object.__setattr__(
            self, "trigger", _fold("trigger", self.trigger, trigger_tokens, DEFAULT_TRIGGER)
        )
        object.__setattr__(
            self, "target", _fold("target", self.target, target_tokens, DEFAULT_TARGET)
        )
        trigger, target = self.trigger, self.target
        if isinstance(trigger, float) and isinstance(target, float) and target > trigger:
            raise ConfigError(
                f"compaction needs target <= trigger, got target={target!r} trigger={trigger!r}"
            )
        for name in ("min_savings", "keep_recent", "min_chars"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigError(f"{name} must be a non-negative integer, got {value!r}")
        if self.cut_note is not None and (not isinstance(self.cut_note, str) or not self.cut_note):
            raise ConfigError(f"cut_note must be a non-empty string or None, got {self.cut_note!r}")
        if self.summary is not None:
            from .summary import Summaries

            if not isinstance(self.summary, Summaries):
                raise ConfigError(
                    "summary must be a context_governor.summary.Summaries, "
                    f"got {brief(self.summary)}"
                )
        for name in _FLAGS:
            if not isinstance(getattr(self, name), bool):
                value = getattr(self, name)
                raise ConfigError(f"{name} must be true or false (a bool), got {value!r}")
        if self.cache_price is not None and not isinstance(self.cache_price, CachePrice):
            raise ConfigError(
                "cache_price must be a context_governor.providers.prices.CachePrice or None, "
                f"got {brief(self.cache_price)}"
            )
        if not isinstance(self.exclude_tools, frozenset):
            object.__setattr__(self, "exclude_tools", frozenset(self.exclude_tools))
        _check_exact(self)
        if self.offload_dir is not None and not isinstance(self.offload_dir, Path):
            object.__setattr__(self, "offload_dir", Path(self.offload_dir))

    def adaptive_goal(self, trigger: int, target: int, span: int, growth: float) -> int:
        """The target of one compaction under ``adaptive_target``, from the request alone.

        ``span`` is what the request would keep if it kept the turns of its newest
        ``keep_recent`` tool results (and the head); ``growth`` is the mean number of
        tokens the history gained per model call so far. When the span is under the
        fixed ``target``, the goal is the span (never under half the target): keeping
        more than the recent results only shortens the room until the next compaction,
        and each compaction re-sends what it keeps uncached. When the span is over the
        target, the goal grows toward it while the room left until the trigger still
        lasts ``ADAPTIVE_BAND_CALLS`` calls of growth, and stays at the target
        otherwise. Where cached reads are dear (``dear_reads``) the price-set trigger
        leaves too little room for that, so the goal may rise to the span up to
        ``VERBATIM_ROOM`` of the way from target to trigger: on coding at 32k under
        gpt-4o's prices and big reads at 128k under gpt-4.1's, the fixed target cut the
        newest results below the seed policy's while the cost had room. Why the rest: on
        shapes whose results are small (web search) the fixed target keeps far more
        than the recent results and compacts too often; on shapes whose tools are rare
        (chat) it cuts the recent results away. Measured per shape in
        docs/benchmarks.md.
        """
        low = max(target // 2, min(span, target))
        ceiling = max(low, int(trigger - ADAPTIVE_BAND_CALLS * growth))
        if span > target and self.dear_reads():
            # the price-set trigger is low: growth would leave no room, and the fixed
            # target cuts the newest results away; keep them in half the room instead,
            # but never so near the trigger that a compaction saves under min_savings
            # (it would be skipped, leaving every later request over the trigger)
            room = min(target + int((trigger - target) * VERBATIM_ROOM), trigger - self.min_savings)
            ceiling = max(ceiling, min(span, room))
        return min(max(span, low), ceiling, trigger)

    def masked_goal(
        self,
        goal: int,
        trigger: int,
        masked: int,
        trail_growth: float,
        near: bool = False,
        cut_room: int = 0,
    ) -> int:
        """The goal of one compaction under ``mask_first``, from ``goal`` (the target's)
        and ``masked``, the request with every clearable old result cleared and nothing
        cut.

        When the masked request fits under the trigger less ``clear_chunk``, that is the
        goal: old results are cleared, no turn is cut (a clearing compaction breaks the
        cache only from the first result it clears, near the end, and the chunk of room
        keeps such compactions rare). Otherwise turns must go, and the goal leaves
        ``MASK_ROOM_CALLS`` calls of the masked trail's growth (``trail_growth`` per
        call, at least ``min_savings``) under the trigger, so that the next cut is as far
        away. ``near``: the trigger is ``cut_ceiling`` (the budget, where the seed
        policy's sliding window cuts at every step) and tool results are under half of
        what the history grew by (a chat: clearing has little to give, and the cut is
        the only tool); the goal then leaves ``CEILING_ROOM_CALLS`` calls instead (at
        least an eighth of ``min_savings``, so that a call adding little does not cut
        again at once): the
        request then keeps about as much of the trail as the sliding window, at a cut
        every few calls instead of every call. A cut leaves at least ``cut_room`` (see
        ``cut_room``; for a chat at most ``CUT_ROOM_PROSE_SHARE`` of the ceiling) whichever
        room applies. Never under ``goal``.
        What the model still sees of its own work is the product: observation masking
        keeps the trail, cutting loses it."""
        if not self.mask_first:
            return goal
        if masked <= trigger - self.clear_chunk(trigger):
            return max(goal, masked)
        room = max(self.min_savings, int(MASK_ROOM_CALLS * trail_growth))
        if near:
            room = max(self.min_savings // 8, int(CEILING_ROOM_CALLS * trail_growth))
            cut_room = min(cut_room, int(CUT_ROOM_PROSE_SHARE * trigger))
        return max(goal, trigger - max(room, cut_room))

    def _read_miss(self) -> tuple[float, float]:
        """(read, miss) prices of ``cache_price``: the reference read and no write
        premium where the prices are unknown."""
        price = self.cache_price
        if price is None:
            return REFERENCE_READ, 1.0
        return price.read, price.miss

    def cut_room(self, limit: int, growth: float) -> int:
        """Under ``mask_first``: the least room a cut of turns at the ceiling (``limit``)
        leaves below it, for a history growing ``growth`` tokens a call.

        Each cut makes the provider write again the whole request it keeps (about
        ``limit``) at the miss price instead of reading it; cutting R tokens deeper makes
        the next cut come R / growth calls later and costs the read price on R for about
        half of them. Per call that is (miss - read) * limit * growth / R + read * R / 2,
        least at R = sqrt(2 (miss - read) / read * limit * growth), as for ``clear_room``.
        The growth is the whole of what a call adds (the newest results come whole), not
        the masked trail's: rooms of a few calls of the masked trail cut again every few
        calls (every 7 requests on a long coding history at 128k). Capped at
        ``CUT_ROOM_SHARE`` of ``limit``: what a deeper cut removes is the agent's own
        trail; and none where the room would not hold ``CUT_ROOM_CALLS`` calls' growth
        (it would not put the next cut off). Measured in docs/compaction.md (*Cutting in
        the cache's rhythm*)."""
        read, miss = self._read_miss()
        if read <= 0 or limit <= 0 or growth <= 0:
            return 0
        room = min(math.sqrt(2 * max(0.0, miss - read) / read * limit * growth),
                   CUT_ROOM_SHARE * limit)  # fmt: skip
        # a room under two calls' growth (whole CI logs, API responses at a small
        # window) would put the next cut off by a call at most: it only costs the trail
        return int(room) if room >= CUT_ROOM_CALLS * growth else 0

    def cut_ceiling(self, budget: int) -> int:
        """Under ``mask_first``: the request size past which turns are cut, when clearing
        old results cannot bring the request under the trigger.

        The trigger is set for the cost (80k tokens at most, lower where cached reads are
        dear); the seed policy cuts the agent's trail only at the budget. What the model
        still sees of its own work rules over the cost: while the masked trail does not
        fit under the trigger, requests are cleared (old results, in chunks) but keep
        their turns up to the budget, and only then are turns cut. An explicit
        ``trigger`` is a size the user chose: it stays the ceiling.
        Measured per shape in docs/benchmarks.md (agent's own messages kept)."""
        if not self.mask_first or not self.default_trigger():
            return self.thresholds(budget)[0]
        return budget  # the fixed trigger is a share of it, never above

    def default_trigger(self) -> bool:
        """Whether the trigger is left at its default (no explicit ``trigger``)."""
        return self.trigger is None

    def clear_chunk(self, trigger: int) -> int:
        """The room below ``trigger`` a clearing-only compaction must leave under
        ``mask_first`` (``CLEAR_CHUNK_SHARE`` of it, at least ``min_savings``)."""
        return max(self.min_savings, int(CLEAR_CHUNK_SHARE * trigger))

    def clear_room(self, trigger: int, recent: int) -> int:
        """Under ``mask_first``: the tokens of old results a compaction that only clears
        waits for before it clears them (all but the newest ``keep_recent``).

        Clearing edits the request from the oldest result it clears on, so the provider
        writes again what follows that edit (about ``recent``: the newest results, kept
        whole) at the miss price instead of reading it; what it clears is then read by no
        later request. Clearing X tokens every X / g calls, for a history growing g tokens
        a call, costs per call about (miss - read) * recent * g / X + read * X / 2, least
        at X = sqrt(2 (miss - read) / read * recent * g). g is taken as a newest result's
        mean size (recent / keep_recent): the same in the history and in the governed
        output, whose own growth is smaller by what was cleared, so governing the output
        again waits as this call did. About 1.5x the newest results' tokens at Anthropic's
        prices (reads 0.1x, writes 1.25x), 1.3x at the reference read (0.1x, no write
        premium, also taken when prices are unknown), 0.45x at gpt-4o's 0.5x reads.
        Never under ``clear_chunk``. Measured in docs/benchmarks.md (*Clearing in the
        cache's rhythm*)."""
        read, miss = self._read_miss()
        least = self.clear_chunk(trigger)
        if read <= 0 or recent <= 0 or self.keep_recent <= 0:
            return least
        best = recent * math.sqrt(2 * max(0.0, miss - read) / read / self.keep_recent)
        return max(least, int(best))

    def floor(self, budget: int, span: int, results: int) -> tuple[int, int] | None:
        """Under ``verbatim_floor``: (trigger, goal) for a request whose newest
        ``keep_recent`` results' turns take ``span`` tokens (``results`` of them the
        results themselves), or None where the thresholds stay as they are.

        Where cached reads are dear the price-set trigger is low, and where the newest
        results are big (whole-file reads) or many (parallel bursts) their turns do not
        fit under it, so every compaction cuts into them. The floor raises the trigger of
        such a request to the span plus the price-set distance (never above the fixed
        trigger) and compacts down to the span. Only where the span fits under the fixed
        trigger less ``min_savings`` and the results are at least ``FLOOR_RESULTS`` of
        it: a chat's ten newest results span about a hundred turns of prose, and
        raising the trigger for them made requests nearly as large as the seed
        policy's (0.66x its cost at 32k under gpt-4o's prices, 0.57x at 128k where it
        fits) while they still fell short of its results. Measured on every session
        shape (docs/session-shapes.md): two of the eleven verbatim misses go, every
        cost stays under 0.6x and chat's costs do not move. A request's trigger then
        depends on its span: the Governor's fast path follows it (``Replay.quiet``
        decides a step between the price-set and the raised trigger on exact counts).
        """
        if self.mask_first or not (
            self.verbatim_floor and self.adaptive_target and self.dear_reads()
        ):
            return None  # masking first keeps the newest turns its own way
        trigger, target = self.thresholds(budget)
        fixed = self.fixed_thresholds(budget)[0]
        if span <= target or span > fixed - self.min_savings or results < span * FLOOR_RESULTS:
            return None
        raised = min(fixed, span + (trigger - target))
        if raised <= trigger or raised - span < self.min_savings:
            return None  # no room: a compaction to the span would save too little
        return raised, span

    def priced(self, provider: str | None, model: str | None) -> CompactionPolicy:
        """This policy with the cache prices of ``model`` at ``provider``
        (providers/prices.py), when it is price-aware and was given none; itself otherwise.
        govern() and the Governor call it once with their settings, so the thresholds stay
        a function of the request and the settings (any process gives the same answer)."""
        if not self.price_aware or self.cache_price is not None:
            return self
        price = cache_price(provider, model)
        return self if price is None else replace(self, cache_price=price)

    def dear_reads(self) -> bool:
        """Whether the price-aware rule moves this policy's trigger below its default
        (``price_scale`` < 1: reads dearer than the reference 0.1x)."""
        return (
            self.cache_price is not None
            and self.price_applies()
            and price_scale(self.cache_price) < 1
        )

    def price_applies(self) -> bool:
        """Whether the price-aware rule moves this policy's trigger: on, prices known,
        and the trigger left at its defaults."""
        return self.price_aware and self.cache_price is not None and self.default_trigger()

    def fixed_thresholds(self, budget: int) -> tuple[int, int]:
        """(trigger, target) in tokens for ``budget`` before the price-aware rule."""
        trigger = _threshold_tokens(self.trigger, DEFAULT_TRIGGER, DEFAULT_TRIGGER_TOKENS, budget)
        target = _threshold_tokens(self.target, DEFAULT_TARGET, DEFAULT_TARGET_TOKENS, budget)
        return trigger, min(target, trigger)

    def thresholds(self, budget: int) -> tuple[int, int]:
        """(trigger, target) in tokens for ``budget``. Where the price-aware rule applies,
        the trigger is the target plus ``price_scale`` of the default distance."""
        trigger, target = self.fixed_thresholds(budget)
        if self.cache_price is not None and self.price_applies():
            trigger = target + int((trigger - target) * price_scale(self.cache_price))
        return trigger, target


def _check_exact(policy: CompactionPolicy) -> None:
    """The exact-text rules as sets and tuples of text (a config file gives lists), each
    pattern a regular expression."""
    for name in ("exact_tools", "exact_commands", "exact_content"):
        value = getattr(policy, name)
        if isinstance(value, str) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{name} must be a list of text, got {value!r}")
    object.__setattr__(policy, "exact_tools", frozenset(t.lower() for t in policy.exact_tools))
    object.__setattr__(policy, "exact_commands", tuple(policy.exact_commands))
    object.__setattr__(policy, "exact_content", tuple(policy.exact_content))
    for pattern in policy.exact_content:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ConfigError(f"exact_content pattern {pattern!r} is not valid: {exc}") from None


class _Name(str):
    """The cache policy's name as ``policy.kind`` reads it: equal to "cache", and told
    apart from a ``kind="cache"`` a caller passed (dataclasses.replace passes what it
    reads back to the constructor; only the caller's is deprecated)."""

    __slots__ = ()


_KIND = _Name("cache")


def _kind(self: CompactionPolicy) -> str:
    """``policy.kind``: "cache", read as before (passing ``kind=`` is what is deprecated)."""
    return _KIND


# After the class is made: its __init__ keeps ``kind=`` (an InitVar), reading is a property.
setattr(CompactionPolicy, "kind", property(_kind))  # noqa: B010

#: A compaction policy: the cache policy (with its settings) or the seed's.
Compaction: TypeAlias = "CompactionPolicy | SeedPolicy"

SEED = SeedPolicy()
CACHE = CompactionPolicy()


def get_policy(policy: Any) -> Compaction:
    """A policy from its name ("cache", "seed"), a CompactionPolicy or SEED."""
    if isinstance(policy, (CompactionPolicy, SeedPolicy)):
        return policy
    if policy is None or policy == "cache":
        return CACHE
    if policy == "seed":
        return SEED
    if policy == "summary":
        raise ConfigError(
            "compaction 'summary' needs a summarizer: pass "
            "CompactionPolicy(summary=Summaries(summarizer=...)) (docs/summaries.md)"
        )
    raise ConfigError(
        f"compaction must be 'cache', 'seed', a CompactionPolicy or SEED, got {brief(policy)}"
    )


def settings_of(policy: Compaction | None) -> CompactionPolicy:
    """The cache policy's settings that apply under ``policy``: its own, or the defaults
    where it has none (the seed policy, or no policy given). A stage the seed shares
    with the cache policy (squeezing a request still over its budget) reads them."""
    return policy if isinstance(policy, CompactionPolicy) else CACHE


#: The cache policy's settings a config file may give (``[compaction]``), with what
#: each takes. The summary option and cache prices are objects: the library's only.
SETTINGS: dict[str, str] = {
    "trigger": "a share of the budget (0.8) or tokens (60000)",
    "target": "a share of the budget (0.3) or tokens (12000)",
    "min_savings": "tokens",
    "keep_recent": "a number of tool results",
    "min_chars": "characters",
    "exclude_tools": "a list of tool names",
    "clear_arguments": "true or false",
    "placeholder": "text with {name} and {chars}",
    "offload_dir": "a directory",
    "cut_note": "text with {messages}, {turns} and {user_messages}, or false for none",
    "adaptive_target": "true or false",
    "price_aware": "true or false",
    "verbatim_floor": "true or false",
    "mask_first": "true or false",
    "receipt": "true or false",
    "shrink": "true or false",
    "supersede": "true or false",
    "digest": "true or false",
    "exact_tools": "a list of tool names (replaces the default list)",
    "exact_commands": 'a list of shell programs, e.g. "git diff" (replaces the default list)',
    "exact_content": "a list of regular expressions for numbered lines (replaces the default list)",
}


def policy_from_settings(name: str, settings: Mapping[str, Any]) -> Compaction:
    """The policy called ``name`` ("cache" or "seed") with ``settings`` as a config file
    gives them (JSON/TOML values: a list for ``exclude_tools``, a string for
    ``offload_dir``, false for no ``cut_note``). ConfigError names the setting that
    is unknown or wrong; the seed policy takes none."""
    if name not in ("cache", "seed"):
        raise ConfigError(f"compaction must be 'cache' or 'seed', got {name!r}")
    if name == "seed":
        if settings:
            raise ConfigError(
                f"the seed policy has no settings (got {', '.join(sorted(settings))})"
            )
        return SEED
    unknown = sorted(set(settings) - set(SETTINGS))
    if unknown:
        raise ConfigError(
            f"unknown compaction setting {unknown[0]!r}; settings: {', '.join(SETTINGS)}"
        )
    values = dict(settings)
    if values.get("cut_note") is False:
        values["cut_note"] = None
    tools = values.get("exclude_tools")
    if tools is not None:
        if not isinstance(tools, (list, tuple)) or not all(isinstance(t, str) for t in tools):
            raise ConfigError(f"exclude_tools must be a list of tool names, got {tools!r}")
        values["exclude_tools"] = frozenset(tools)
    for key in ("exact_tools", "exact_commands", "exact_content"):
        rules = values.get(key)
        if rules is not None and not isinstance(rules, (list, tuple)):
            raise ConfigError(f"compaction setting {key} must be a list of text, got {rules!r}")
    for key in ("placeholder", "offload_dir"):
        if key in values and not isinstance(values[key], str):
            raise ConfigError(f"compaction setting {key} must be text, got {values[key]!r}")
    return CompactionPolicy(**values)

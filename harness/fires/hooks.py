"""The fire's lifecycle hooks: where another app takes part in a fire without the fire knowing it.

harness.fires owns a fire's phases (harness.fires.loop):

    preflight    before the main loop, each time it starts (a fire's first run, a retry, a resume)
    main loop    model <-> tools; `main_prompt` adds to what the model reads, `plan_advanced` hears
                 the plan board move, `turn_listener` reads each model turn as it streams
    respond      the answer; `checks_answer` says whether it is checked before it counts
    verify       `answer_submitted` starts the checks (in the transaction that saves the answer),
                 `answer_check` makes those that run in the fire's own run (outside any transaction:
                 a model call), `answer_verdict` decides once they are in: keep an answer (passed, or
                 degraded with its reasons), or retry
    writes       `ids_shown` names the delta ids a hook showed the fire besides its tool results
    review, done
    ended        `ended` hears the fire's end (finished, failed or cancelled) with its stop reason

An app implements `FireHooks` and names its class in `settings.FATHOM_FIRE_HOOKS`, the way model
middleware is named in FATHOM_MODEL_MIDDLEWARE (the quality harness is the one there today). The
class is instantiated once per run of a fire (the task that runs or resumes it) with the fire: the
instance is the hook's state for that run, and the fire hands it nothing else. A hook may make the
fire wait (`Park`): the fire's run ends, its claims go back with the hook's last write, and the task
the hook waits for resumes it (harness.fires.services.fire_parked_resume)."""

from dataclasses import dataclass
from functools import cache

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils.module_loading import import_string
from rest_framework import serializers

from fathom.llm import Message
from harness.fires.journal import JournalTurn
from harness.fires.models import Fire
from harness.fires.turn_stream import StreamedTurn
from harness.runtime.models import HarnessSettings


@dataclass(frozen=True)
class Park:
    """The fire waits for another task (`waiting_for`: its verifier group, its swarm, its child fires)."""

    waiting_for: str


@dataclass(frozen=True)
class Verdict:
    """A hook's decision on the answer it checked: `retry` (back to the main loop, whose prompt the
    hook extends), else `response`, the answer to keep (maybe an earlier attempt's), `degraded` when
    it failed the checks and no retry is left, with the reasons why (delivered marked so, and nothing
    it asserts is written to the lake: harness.fires.writes)."""

    retry: bool
    response: dict | None = None
    degraded: bool = False
    reasons: tuple[str, ...] = ()


class FireHooks:
    """What a hook may do at each phase; every default leaves the fire as it is."""

    def __init__(self, fire: Fire):
        self.fire = fire

    def preflight(self) -> Park | None:
        """Before the main loop, each time it starts; Park to make the fire wait first."""
        return None

    def main_prompt(self, preamble: list[Message], turns: list[JournalTurn],
                    limits: HarnessSettings) -> tuple[list[Message], list[JournalTurn]]:
        """The main loop's preamble, and the journal's main turns that the current attempt continues."""
        return preamble, turns

    def plan_advanced(self, before: list[dict]) -> None:
        """The fire's plan board moved (its steps were `before`); in the transaction that saves it."""

    def turn_listener(self, turn: StreamedTurn):
        """A listener of a model turn as it streams (harness.fires.turn_stream), or None."""
        return None

    def checks_answer(self) -> bool:
        """Whether the answer goes through this hook's checks (phase verify) before it counts."""
        return False

    def answer_submitted(self) -> Park | None:
        """The answer (fire.response) is being saved: start its checks, in the same transaction."""
        return None

    def answer_check(self) -> None:
        """The checks made in the fire's own run, outside any transaction (a model call may take
        seconds), before each answer_verdict."""

    def answer_verdict(self) -> Park | Verdict:
        """The checks' decision, or Park while they run. Its writes join the fire's transaction."""
        return Verdict(retry=False, response=self.fire.response)

    def ids_shown(self) -> set[str]:
        """Delta ids the hook showed the fire outside its tool results (a retrieval of its own): the
        fire's writes may name them as ids the fire saw."""
        return set()

    def ended(self) -> None:
        """The fire ended (fire.status: finished, failed or cancelled; fire.stop_reason says why): close
        what the hook holds open for it. In the transaction that saves the end."""

    @classmethod
    def output_fields(cls) -> dict[str, serializers.Field]:
        """Fields the hook adds to a fire's REST output (GET /v1/fires/{id}), made anew at each call."""
        return {}

    @classmethod
    def output_prefetch(cls) -> tuple[str, ...]:
        """What the fire's REST output reads with it for those fields (prefetch_related lookups)."""
        return ()


class FireLifecycle:
    """The hooks of one run of a fire, called in the order settings name them."""

    def __init__(self, fire: Fire):
        self.hooks = [hook(fire) for hook in _hook_classes(tuple(settings.FATHOM_FIRE_HOOKS))]

    def preflight(self) -> Park | None:
        return next((park for hook in self.hooks if (park := hook.preflight()) is not None), None)

    def main_prompt(self, preamble, turns, limits):
        for hook in self.hooks:
            preamble, turns = hook.main_prompt(preamble, turns, limits)
        return preamble, turns

    def plan_advanced(self, before: list[dict]) -> None:
        for hook in self.hooks:
            hook.plan_advanced(before)

    def turn_listeners(self, turn: StreamedTurn) -> list:
        return [listener for hook in self.hooks if (listener := hook.turn_listener(turn)) is not None]

    def checks_answer(self) -> bool:
        return any(hook.checks_answer() for hook in self.hooks)

    def answer_submitted(self) -> Park | None:
        parks = [park for hook in self.hooks if hook.checks_answer() and (park := hook.answer_submitted())]
        return parks[0] if parks else None

    def answer_check(self) -> None:
        for hook in self.hooks:
            if hook.checks_answer():
                hook.answer_check()

    def answer_verdict(self) -> Park | Verdict:
        """The first Park or retry; else the last checking hook's answer, degraded if any hook said so."""
        verdicts = []
        for hook in self.hooks:
            if hook.checks_answer():
                verdict = hook.answer_verdict()
                if isinstance(verdict, Park) or verdict.retry:
                    return verdict
                verdicts.append(verdict)
        if not verdicts:
            return Verdict(retry=False, response=None)
        reasons = tuple(reason for verdict in verdicts for reason in verdict.reasons)
        return Verdict(retry=False, response=verdicts[-1].response, degraded=any(v.degraded for v in verdicts),
                       reasons=reasons)

    def ids_shown(self) -> set[str]:
        return {delta_id for hook in self.hooks for delta_id in hook.ids_shown()}

    def ended(self) -> None:
        for hook in self.hooks:
            hook.ended()


def output_fields() -> dict[str, serializers.Field]:
    """The fields every hook adds to a fire's REST output."""
    return {name: field for hook in _hook_classes(tuple(settings.FATHOM_FIRE_HOOKS))
            for name, field in hook.output_fields().items()}


def output_prefetch() -> tuple[str, ...]:
    """The lookups those fields read with the fire."""
    return tuple(lookup for hook in _hook_classes(tuple(settings.FATHOM_FIRE_HOOKS)) for lookup in hook.output_prefetch())


@cache
def _hook_classes(paths: tuple[str, ...]) -> tuple[type[FireHooks], ...]:
    return tuple(import_string(path) for path in paths)


@receiver(setting_changed)
def _reload(setting, **_kwargs):
    if setting == "FATHOM_FIRE_HOOKS":
        _hook_classes.cache_clear()

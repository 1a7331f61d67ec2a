"""The quality harness (seed 001) around a fire, as the fire's lifecycle hooks (harness.fires.hooks;
named in settings.FATHOM_FIRE_HOOKS):

    preflight        classify (and plan) once, the QualityRun recorded (.preflight); the fire may
                     first wait for its swarm or its parallel subtasks
    main_prompt      the contract's requirements and the plan's additions; a retry's healing prompt
                     (.preamble)
    plan_advanced    the plan board's moves as subtask events (.preflight)
    turn_listener    the stream monitor over the main model's text (.stream_alerts)
    checks_answer    every answer of a wrapped fire is checked
    answer_submitted the contract evaluated; a contrastive verifier group sent: the fire parks (.postflight)
    answer_check     the lone verifier called in the fire's own run (.postflight)
    answer_verdict   once the verdict is in: retry, or the best attempt's answer, degraded with the
                     reasons when it failed and no retry is left (.postflight)
    ids_shown        the sources the pre-flight retrieved and the subtasks' citations
    ended            the run closed (state ended, with the fire's stop reason) if the fire ended
                     before an answer was kept (.services.run_ended)

It wraps the top-level fires of sessions (reactive, Sit rounds) of workspaces whose QualitySettings
are enabled; introspective fires (Fathom calling itself) and child fires run without it. Its state is
its own: a FireQuality per run of the fire (.run_state), and its tables."""

from rest_framework import serializers

from harness.fires.hooks import FireHooks, Park, Verdict
from harness.fires.models import Fire
from harness.fires.turn_stream import StreamedTurn
from harness.quality import postflight, preamble, preflight, services, subtasks
from harness.quality.api import QualityOutput
from harness.quality.models import QualityRun
from harness.quality.run_state import FireQuality
from harness.quality.stream_alerts import AttemptMonitor


class QualityHooks(FireHooks):
    def __init__(self, fire: Fire):
        super().__init__(fire)
        self.state = FireQuality.of(fire)

    def preflight(self) -> Park | None:
        return preflight.preflight(self.state)

    def main_prompt(self, base, turns, limits):
        return preamble.main_prompt(self.state, base, turns, limits)

    def plan_advanced(self, before: list[dict]) -> None:
        preflight.plan_advanced(self.state, before)

    def turn_listener(self, turn: StreamedTurn):
        if turn.phase != Fire.Phase.MAIN or not turn.in_session or self.state.run is None:
            return None
        return AttemptMonitor(self.state)

    def checks_answer(self) -> bool:
        return self.state.run is not None

    def answer_submitted(self) -> Park | None:
        return postflight.answer_submitted(self.state)

    def answer_check(self) -> None:
        postflight.answer_check(self.state)

    def answer_verdict(self) -> Park | Verdict:
        return postflight.answer_verdict(self.state)

    def ids_shown(self) -> set[str]:
        if self.state.run is None:
            return set()
        return set(self.state.run.sources) | subtasks.cited_ids(self.state.run)

    def ended(self) -> None:
        # Only a run this process saw open: one made or read in this run of the fire (its preflight
        # makes it), not closed by a kept answer since.
        if self.state.run is not None and self.state.run.state in QualityRun.OPEN:
            services.run_ended(fire=self.fire)

    @classmethod
    def output_fields(cls) -> dict[str, serializers.Field]:
        return {"quality": QualityOutput(read_only=True, allow_null=True,
                                         help_text="the quality harness's record (null when it did not wrap the fire)")}

    @classmethod
    def output_prefetch(cls) -> tuple[str, ...]:
        return ("quality", "quality__attempts")

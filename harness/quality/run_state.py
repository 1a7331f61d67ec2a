"""What the quality harness holds of one fire while a run of it lasts (harness.quality.hooks makes one
per run): its QualityRun (None when the harness does not wrap the fire), the current attempt, and that
attempt's stream monitor. While a run holds the fire's claim, only that run changes them (the quality
worker writes a QualityRun only while its fire is parked, after the run has ended), so they are read
once per run of the fire."""

from dataclasses import dataclass

from harness.fires.models import Fire
from harness.quality.models import QualityAttempt, QualityRun
from harness.quality.stream_monitor import StreamMonitor


@dataclass
class FireQuality:
    fire: Fire
    run: QualityRun | None = None
    attempt: QualityAttempt | None = None
    monitor: StreamMonitor | None = None  # the stream monitor of attempt number `monitor_attempt`
    monitor_attempt: int = 0

    @classmethod
    def of(cls, fire: Fire) -> "FireQuality":
        """The fire's QualityRun with its current attempt (the latest: attempts are made one after the
        other), read once; none read for a fire that never ran or that the harness never wraps. The run's
        event log is not read: steps append to it in SQL (harness.quality.events)."""
        if fire.status == Fire.Status.ACCEPTED or fire.depth or not fire.session_id:
            return cls(fire)
        attempt = (QualityAttempt.objects.select_related("run").defer("run__events").filter(run__fire=fire)
                   .order_by("-number").first())
        return cls(fire, attempt.run, attempt) if attempt is not None else cls(fire)

    def stream_monitor(self) -> StreamMonitor:
        """The current attempt's stream monitor, made once per attempt (and process; one query from the second attempt on): the
        checkpoints that alerted already in this run, in any attempt, are not checked again, so each
        alerts at most once per run."""
        if self.monitor is None or self.monitor_attempt != self.attempt.number:
            self.monitor = StreamMonitor(self.run.complexity.get("workflow_type", "chat"))
            earlier = [] if self.attempt.number == 1 else QualityAttempt.objects.filter(
                run=self.run, number__lt=self.attempt.number).values_list("stream_alerts", flat=True)
            self.monitor.checked.update(alert["checkpoint"] for alerts in [*earlier, self.attempt.stream_alerts]
                                        for alert in alerts)
            self.monitor_attempt = self.attempt.number
        return self.monitor

    @property
    def monitored(self) -> bool:
        """Whether the current attempt's text went through its stream monitor in this process."""
        return self.monitor is not None and self.monitor_attempt == self.attempt.number and bool(self.monitor.text)

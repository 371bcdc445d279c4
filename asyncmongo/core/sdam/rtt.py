"""Round-trip-time statistics of one server: the moving average and the recent minimum.

Server Selection: "average RTT ... exponentially-weighted moving average, alpha 0.2; the first
sample is taken as is". Server Monitoring: "minimum RTT out of the (at most) last 10 samples,
reported as 0 until at least 2 samples have been gathered". Immutable: ``add`` returns a new
value, so the monitor that owns it can publish snapshots freely.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

RTT_ALPHA: Final = 0.2
RTT_SAMPLES: Final = 10
MIN_SAMPLES_FOR_MIN_RTT: Final = 2


def moving_average(old_average: float | None, sample: float) -> float:
    """One step of the EWMA; ``old_average`` None means "first sample"."""
    if old_average is None:
        return sample
    return RTT_ALPHA * sample + (1 - RTT_ALPHA) * old_average


@dataclass(frozen=True, slots=True)
class RttStats:
    """Average and recent samples (milliseconds) of a server's hello round trips."""

    average: float | None = None
    samples: tuple[float, ...] = ()

    def add(self, sample: float) -> RttStats:
        """The statistics after one more sample."""
        if sample < 0:
            sample = 0.0
        recent = (*self.samples, sample)[-RTT_SAMPLES:]
        return RttStats(moving_average(self.average, sample), recent)

    @property
    def minimum(self) -> float:
        """Minimum of the last samples, 0 until there are at least two."""
        if len(self.samples) < MIN_SAMPLES_FOR_MIN_RTT:
            return 0.0
        return min(self.samples)

    def reset(self) -> RttStats:
        """After a failed check the server is Unknown and its RTT starts over."""
        return RttStats()

    def __repr__(self) -> str:
        avg = "none" if self.average is None else f"{self.average:.3f}ms"
        return f"<RttStats avg {avg}, min {self.minimum:.3f}ms, {len(self.samples)} samples>"

"""RangeOpts: the options of the ``Range`` algorithm (client-side encryption spec,
"RangeOpts"), PyMongo's names."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from asyncmongo.bson import Int64

__all__ = ["RangeOpts"]


@dataclass(frozen=True, slots=True)
class RangeOpts:
    """How a ``Range`` encrypted value is indexed; must match the collection's
    encryptedFields ``queries``.

    - ``min``, ``max``: the bounds of the field's values (required for double and decimal
      with ``precision``; otherwise the type's limits);
    - ``sparsity``: how many tree levels are indexed (libmongocrypt's default 2);
    - ``trim_factor``: how many top levels of the tree are left out (default 6, less when the
      domain is small);
    - ``precision``: the digits after the decimal point kept, for double and decimal.
    """

    sparsity: int | None = None
    trim_factor: int | None = None
    min: Any = None
    max: Any = None
    precision: int | None = None

    @property
    def document(self) -> dict[str, Any]:
        """The options as libmongocrypt reads them (sparsity an int64, unset ones left out)."""
        fields = {
            "sparsity": None if self.sparsity is None else Int64(self.sparsity),
            "trimFactor": self.trim_factor,
            "precision": self.precision,
            "min": self.min,
            "max": self.max,
        }
        return {name: value for name, value in fields.items() if value is not None}

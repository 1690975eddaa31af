"""The fast engine: the reference model's cycles compiled with numba (sim/fast/kernel.py), the
routing function's decisions memoised per routing state; cycle-identical to ``sim/model``."""

from .engine import FastModel, UnsupportedSetting, fast_refusal

__all__ = ["FastModel", "UnsupportedSetting", "fast_refusal"]

"""Where ``exp`` needs no shift: the one rule of the softmax and log-sum-exp computations.

Scores within ``±SHIFT_FREE_LIMIT[dtype]`` give ``exp`` values that are normal numbers, far
from overflow and underflow (a quarter of the exponent range either way), so their rows need
no shift by the row maxima, a reduction over a short axis that is numpy's slowest kind.
"""

import numpy as np

__all__ = ["SHIFT_FREE_LIMIT"]

SHIFT_FREE_LIMIT = {
    dtype: -0.25 * float(np.log(np.finfo(dtype).tiny)) for dtype in (np.float32, np.float64)
}

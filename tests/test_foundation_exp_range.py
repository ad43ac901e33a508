"""The shift-free range of exp: values inside it are normal numbers, and sums of them are finite."""

import numpy as np
import pytest

from skquad._foundation._exp_range import SHIFT_FREE_LIMIT


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_exp_over_the_shift_free_range_is_normal_and_a_row_sum_stays_finite(dtype):
    limit = dtype(SHIFT_FREE_LIMIT[dtype])
    with np.errstate(all="raise"):  # no overflow, underflow or subnormal result
        ends = np.exp(np.array([-limit, limit], dtype=dtype))
        assert np.all(ends >= np.finfo(dtype).tiny) and np.all(np.isfinite(ends))
        # a row of a thousand scores at the top of the range still sums without overflow
        assert np.isfinite(np.full(1000, ends[1], dtype=dtype).sum())
    # and the range is not timid: a quarter of the exponent range either way
    assert limit > 0.24 * -np.log(np.finfo(dtype).tiny)

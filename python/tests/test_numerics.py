"""xshard.numerics: the numerics report for numpy arrays, against hand-computed statistics."""
import numpy as np
import pytest

import xshard


def two_errors():
    want = np.zeros((4, 4), np.float32)
    got = want.copy()
    got[3, 3] = 0.75      # exact in f32: the statistics below are exact too
    got[0, 1] = 0.0625
    return got, want


def test_allclose_verdict_and_statistics():
    got, want = two_errors()
    r = xshard.numerics(got, want, atol=0.1, rtol=0.0)
    assert not r.allclose and not bool(r)
    assert r.elements == 16 and r.not_close == 1      # only 0.75 exceeds atol 0.1
    assert r.max_abs_diff == 0.75
    assert r.mean_abs_diff == pytest.approx((0.75 + 0.0625) / 16)
    assert r.median_abs_diff == 0.0
    assert r.errors == 1 and r.error_percent == pytest.approx(6.25)
    assert r.error_rows == [3] and r.error_columns == [3]
    assert r.worst_index == [3, 3] and r.worst_got == 0.75 and r.worst_want == 0.0
    assert r.got_shape == "f32[4,4]" and r.want_shape == "f32[4,4]"


def test_threshold_and_blocks():
    got, want = two_errors()
    r = xshard.numerics(got, want, atol=1.0, threshold=0.01, blocks=(2, 2))
    assert r.allclose                                  # both within atol 1.0
    assert r.errors == 2                               # both above the 0.01 threshold
    assert r.error_rows == [0, 3] and r.error_columns == [1, 3]
    by_range = {(tuple(b.start), tuple(b.limit)): b for b in r.blocks}
    assert len(by_range) == 4
    top_left = by_range[((0, 0), (2, 2))]
    bottom_right = by_range[((2, 2), (4, 4))]
    assert top_left.errors == 1 and top_left.max_abs_diff == 0.0625
    assert bottom_right.errors == 1 and bottom_right.max_abs_diff == 0.75
    assert by_range[((0, 2), (2, 4))].errors == 0
    text = str(r)
    assert "allclose (atol 1, rtol 1e-05): yes" in text
    assert "errors (> 0.01)     2 of 16 (12.50%)" in text


def test_relative_difference_and_nan():
    want = np.array([1.0, 2.0, np.nan, 4.0])
    got = np.array([1.0, 2.5, np.nan, 4.0])
    r = xshard.numerics(got, want)
    assert r.max_rel_diff == 0.25 and r.nan_mismatches == 1 and not r.allclose
    assert xshard.numerics(got, want, atol=1.0, equal_nan=True).allclose


def test_mistakes_raise_value_error():
    with pytest.raises(ValueError, match=r"f32\[4,4\].*f32\[2,8\]|dims"):
        xshard.numerics(np.zeros((4, 4), np.float32), np.zeros((2, 8), np.float32))
    with pytest.raises(ValueError, match="atol"):
        xshard.numerics(np.zeros(3), np.zeros(3), atol=-1.0)

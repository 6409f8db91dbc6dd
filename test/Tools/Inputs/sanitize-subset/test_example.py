# Input of test/Tools/sanitize-subset.test (not collected by pytest: it is
# outside python/tests).
import pytest

CASES = [(1000, "folded"), (4096, "pp")]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("s,picked", CASES)
def test_variant(s, picked, causal):
    pass


def test_plain():
    pass

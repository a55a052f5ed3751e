from calc import mean


def test_mean_of_one():
    assert mean([7]) == 7

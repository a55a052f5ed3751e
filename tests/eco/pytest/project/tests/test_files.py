from calc import add


def test_roundtrip(tmp_path):
    # tmp_path: pytest's per-test directory under $TMPDIR/pytest-of-USER/pytest-N/.
    p = tmp_path / "sum.txt"
    p.write_text(str(add(40, 2)))
    assert int(p.read_text()) == 42

"""A tiny library under test (sbx ecosystem fixture)."""


def add(a, b):
    return a + b


def mean(values):
    values = list(values)
    return sum(values) / len(values)

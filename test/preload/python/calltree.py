"""The known call tree of the evaluator tests (reset_workload.py, foreign_workload.py): f is
called 50 times from before() and 100 times from after(); run_test.py counts f under each."""


def f(x):
    return x + 1


def before():
    for i in range(50):
        f(i)


def after():
    for i in range(100):
        f(i)

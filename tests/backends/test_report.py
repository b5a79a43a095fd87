"""``backends.report``: a backend's ``Compiled`` carries its report and tells its followers
when it retargets; a plain callable from a user's backend becomes one without a report."""

from npdynamo.backends.report import BackendReport, Compiled, as_compiled


def first(x):
    return (x + 1,)


def second(x):
    return (x + 2,)


def test_followers_are_bound_now_and_rebound_on_every_retarget():
    compiled = Compiled(first, BackendReport())
    bound = []
    compiled.follow(bound.append)
    assert bound == [first] and compiled(1) == (2,)
    compiled.retarget(second)
    assert bound == [first, second] and compiled(1) == (3,)


def test_another_report_follows_the_same_retargets():
    report = BackendReport()
    compiled = Compiled(first)
    relabelled = compiled.with_report(report)
    seen = []
    relabelled.on_retarget(seen.append)
    compiled.retarget(second)
    assert relabelled.run is second and seen == [second] and relabelled.report is report


def test_a_plain_callable_is_wrapped_once_without_a_report():
    compiled = as_compiled(first)
    assert compiled.run is first and compiled.report is None
    assert as_compiled(compiled) is compiled

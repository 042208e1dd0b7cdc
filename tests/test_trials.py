"""The one timing trial (``janus.driver.trials.Trial``) behind a segment's trial, the
confirmation on whole calls and the XLA trial: runs per side, then one verdict."""
from janus.driver.trials import Side, Trial, Verdict


def test_a_trial_is_undecided_until_both_sides_have_their_runs():
    trial = Trial(runs=2, min_gain=0.05)
    assert not trial.started and trial.due(Side.CANDIDATE) and trial.due(Side.BASELINE)
    trial.record(Side.CANDIDATE, 1.0)
    trial.record(Side.CANDIDATE, 1.0)
    trial.record(Side.CANDIDATE, 9.0)  # the side has its runs: not kept
    assert trial.started and not trial.due(Side.CANDIDATE) and trial.candidate == [1.0, 1.0]
    assert trial.verdict() is Verdict.UNDECIDED and not trial.decided
    trial.record(Side.BASELINE, 2.0)
    assert trial.verdict() is Verdict.UNDECIDED
    trial.record(Side.BASELINE, 2.0)
    assert trial.decided and trial.verdict() is Verdict.KEEP
    assert trial.medians() == (1.0, 2.0)


def test_the_candidate_must_beat_the_baseline_by_the_min_gain():
    def verdict(candidate: float, baseline: float, min_gain: float) -> Verdict:
        trial = Trial(runs=1, min_gain=min_gain)
        trial.record(Side.CANDIDATE, candidate)
        trial.record(Side.BASELINE, baseline)
        return trial.verdict()

    assert verdict(0.96, 1.0, 0.05) is Verdict.DROP  # faster, but by less than 5%: a tie
    assert verdict(0.94, 1.0, 0.05) is Verdict.KEEP
    assert verdict(1.0, 1.0, 0.05) is Verdict.DROP
    assert verdict(5.0, 1.0, -float("inf")) is Verdict.KEEP  # what the tests set to force a verdict
    assert verdict(0.0, 1.0, float("inf")) is Verdict.DROP


def test_medians_decide_not_one_delayed_run():
    trial = Trial(runs=3, min_gain=0.05)
    for t in (1.0, 1.0, 50.0):  # one run the machine delayed
        trial.record(Side.CANDIDATE, t)
    for t in (2.0, 2.0, 2.0):
        trial.record(Side.BASELINE, t)
    assert trial.verdict() is Verdict.KEEP

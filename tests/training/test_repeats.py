"""Repeat detection ends degenerate responses and leaves healthy ones alone."""

from training.rollout.repeats import cut_repeats, repeated_tail_start


def test_a_long_repeated_block_is_detected_and_cut_after_four_copies():
    healthy = [5, 6, 7, 8]
    degenerate = healthy + [1, 2, 3] * 10
    assert repeated_tail_start(degenerate) == 4
    assert cut_repeats(degenerate) == tuple(healthy + [1, 2, 3] * 4)


def test_a_single_token_loop_is_detected():
    assert cut_repeats([9] + [4] * 20) == (9, 4, 4, 4, 4)


def test_short_or_varied_repetition_is_healthy():
    assert repeated_tail_start([1, 2] * 3) is None  # spans only 6 tokens
    steps = [ord(c) for c in "1+2=3\n3+4=7\n7-5=2\n2+9=11\nAnswer: 11"]
    assert cut_repeats(steps) is None

"""Grading: the math verifier, the code sandbox and the judges that turn a response into a verdict.

Both the RL engine (rewards) and the evaluation library (benchmark scores) import this package; it imports
neither of them.
"""

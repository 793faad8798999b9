"""MathVista testmini (1000 problems): each problem's image shown to a vision-language model; options or values
judged by MathVista's rules (evaluation.judges.mathvista)."""

from evaluation.benchmarks.judging import OutcomeJudge
from evaluation.benchmarks.spec import BenchmarkSpec, register
from evaluation.datasets.hub import HubSource, convert_mathvista
from evaluation.datasets.mathvista import load_mathvista
from evaluation.judges.mathvista import judge_mathvista, mathvista_question

MATHVISTA_JUDGE = OutcomeJudge(
    "mathvista", lambda pairs, context: [judge_mathvista(problem, response) for problem, response in pairs],
    extracts_answers=True)

MATHVISTA = BenchmarkSpec(
    name="mathvista",
    read=load_mathvista,
    hub=HubSource("AI4Math/MathVista", "testmini", ("mathvista/testmini.json",), convert_mathvista,
                  image_column="decoded_image", images="mathvista/images/<pid>.jpg",
                  note="split testmini, with images"),
    judge=MATHVISTA_JUDGE,
    instruction="",  # mathvista_question carries the answer format
    question=mathvista_question,
    needs_images=True,
)
register(MATHVISTA, f"{__name__}:MATHVISTA")
